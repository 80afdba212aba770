//! The three WebAuthn ceremonies: register a passkey, log in with one, step up before an answer.
//!
//! `begin_*` returns the options for `navigator.credentials.create/get` (JSON, as
//! `PublicKeyCredential.parse*OptionsFromJSON` reads it) and the ceremony's server state sealed
//! under the master key (context `passkey-ceremony`) with what it is for — which operator, which
//! message. The page carries both; `finish_*` reopens the state, burns its challenge through a
//! store counter (a replayed or reused assertion is refused), verifies the browser's response
//! (origin, RP id, user verification, signature) and checks that the operator still holds an
//! active key. Nothing is stored until a ceremony succeeds.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ma2h_protocol::ids::{AccountId, HumanId};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};
use webauthn_rp::bin::{Decode, Encode};
use webauthn_rp::request::auth::AuthenticationVerificationOptions;
use webauthn_rp::request::register::CredProtect;
use webauthn_rp::request::register::{
    Nickname, PublicKeyCredentialUserEntity, RegistrationVerificationOptions, UserHandle, Username,
};
use webauthn_rp::request::{ExtensionInfo, PublicKeyCredentialDescriptor};
use webauthn_rp::response::register::{DynamicState, StaticState};
use webauthn_rp::response::{AuthTransports, CredentialId};
use webauthn_rp::{
    AuthenticatedCredential, DiscoverableAuthentication, DiscoverableAuthenticationServerState,
    DiscoverableCredentialRequestOptions, PublicKeyCredentialCreationOptions, Registration, RegistrationServerState,
};

use super::relying_party::{OriginRule, RelyingParty};
use super::{KeyState, MAX_NAME, MAX_PASSKEYS, Passkey, operator};
use crate::kernel::auth::Principal;
use crate::kernel::credentials::PrincipalId;
use crate::{Hub, HubError};

/// The user handle's length: 32 bytes derived from the master key per operator.
const USER_LEN: usize = 32;
const CONTEXT: &str = "passkey-ceremony";

/// What the page needs to run a ceremony.
#[derive(Debug, Clone)]
pub struct Started {
    /// The options, JSON.
    pub options: String,
    /// The sealed server state, base64url: posted back with the browser's response.
    pub state: String,
    /// The relying party's id (the domain the passkey belongs to).
    pub rp: String,
}

/// Why a ceremony did not succeed, in words an operator can act on.
#[derive(Debug, thiserror::Error)]
pub enum Refused {
    #[error("{0}")]
    No(String),
    #[error(transparent)]
    Hub(#[from] HubError),
}

impl From<Refused> for HubError {
    fn from(r: Refused) -> Self {
        match r {
            Refused::No(why) => HubError::NotAuthorized(why),
            Refused::Hub(e) => e,
        }
    }
}

impl From<crate::kernel::error::StoreError> for Refused {
    fn from(e: crate::kernel::error::StoreError) -> Self {
        Refused::Hub(e.into())
    }
}

fn no(why: impl Into<String>) -> Refused {
    Refused::No(why.into())
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
enum Kind {
    Register,
    Login,
    StepUp,
}

#[derive(Serialize, Deserialize)]
struct Sealed {
    k: Kind,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    a: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    h: String,
    /// The message a step-up is for.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    m: String,
    /// The library's encoded server state (base64url).
    s: String,
}

/// A fresh assertion of the operator who answers, for one message: what
/// [`crate::messages::resolve::resolve_as`] accepts where a policy asks for a passkey. Only
/// [`finish_step_up`] makes one.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StepUp {
    account: AccountId,
    human: HumanId,
    message: String,
}

impl StepUp {
    /// Does this step-up stand for `principal` answering `message`?
    pub fn covers(&self, principal: &Principal, message: &str) -> bool {
        principal.account == self.account
            && matches!(&principal.id, PrincipalId::Operator(h) if *h == self.human)
            && self.message == message
    }
}

fn b64(bytes: &[u8]) -> String {
    URL_SAFE_NO_PAD.encode(bytes)
}

fn unb64(s: &str) -> Option<Vec<u8>> {
    URL_SAFE_NO_PAD.decode(s).ok()
}

fn rp(hub: &Hub) -> Result<RelyingParty, Refused> {
    RelyingParty::of(hub).map_err(Refused::No)
}

/// The operator's user handle: derived, never stored, never the operator id itself.
fn user_handle(hub: &Hub, account: &AccountId, human: &HumanId) -> UserHandle<USER_LEN> {
    let bytes = hub.master_key.derive(&format!("passkey-user/{account}/{human}"));
    match UserHandle::decode(bytes) {
        Ok(h) => h,
        Err(never) => match never {},
    }
}

fn seal(hub: &Hub, sealed: &Sealed) -> String {
    let plain = serde_json::to_vec(sealed).expect("a plain struct serializes");
    b64(&hub.master_key.seal(hub.random.as_ref(), CONTEXT, &plain))
}

/// Reopen a ceremony's state and burn its challenge: the first use wins, every later one is
/// refused.
async fn open(hub: &Hub, state: &str, kind: Kind) -> Result<Sealed, Refused> {
    let stale = || no("This passkey prompt is no longer valid: reload the page and try again.");
    let sealed = unb64(state).ok_or_else(stale)?;
    let plain = hub.master_key.open(CONTEXT, &sealed).map_err(|_| stale())?;
    let sealed: Sealed = serde_json::from_slice(&plain).map_err(|_| stale())?;
    if sealed.k != kind {
        return Err(stale());
    }
    let digest = hex::encode(&Sha256::digest(state.as_bytes())[..16]);
    let now = hub.clock.now();
    let uses =
        hub.messages.incr_counter(&format!("passkey/{digest}"), now + chrono::Duration::minutes(10), now).await?;
    if uses > 1 {
        return Err(no("This passkey prompt was already used: reload the page and try again."));
    }
    Ok(sealed)
}

/// Start registering a passkey for the calling operator, who has `existing` ones already (their
/// authenticators are told not to make a second).
pub fn begin_registration(hub: &Hub, principal: &Principal, existing: &[Passkey]) -> Result<Started, Refused> {
    let human = operator(principal)?;
    let rp = rp(hub)?;
    // the authenticators that already hold one of this operator's passkeys are told so
    let exclude = existing
        .iter()
        .filter_map(|p| {
            let key: KeyState = serde_json::from_str(&p.state).ok()?;
            Some(PublicKeyCredentialDescriptor {
                id: CredentialId::<Vec<u8>>::decode(unb64(&p.id)?).ok()?,
                transports: AuthTransports::decode(*unb64(&key.t)?.first()?).ok()?,
            })
        })
        .collect();
    let handle = user_handle(hub, &principal.account, human);
    let label = format!("{human}@{}", principal.account);
    let user = PublicKeyCredentialUserEntity {
        name: Username::try_from(label.as_str()).map_err(|_| no("this operator id cannot name a passkey"))?,
        id: &handle,
        display_name: Nickname::try_from(human.as_str()).ok(),
    };
    let mut options = PublicKeyCredentialCreationOptions::passkey(&rp.id, user, exclude);
    // credProtect is asked for, not enforced: an authenticator without it (Chromium's virtual one,
    // some platform ones) would otherwise refuse to create the passkey. Every assertion the Hub
    // asks for requires user verification anyway.
    options.extensions.cred_protect = CredProtect::UserVerificationRequired(ExtensionInfo::AllowDontEnforceValue);
    let (server, client) =
        options.start_ceremony().map_err(|e| Refused::Hub(HubError::Internal(format!("passkey options: {e}"))))?;
    let options = serde_json::to_string(&client).map_err(|e| HubError::Internal(format!("passkey options: {e}")))?;
    let s = server.encode().map_err(|e| HubError::Internal(format!("passkey state: {e}")))?;
    let sealed = Sealed {
        k: Kind::Register,
        a: principal.account.to_string(),
        h: human.to_string(),
        m: String::new(),
        s: b64(&s),
    };
    Ok(Started { options, state: seal(hub, &sealed), rp: rp.host.clone() })
}

/// Finish registering: verify the browser's `PublicKeyCredential` (JSON) and keep the passkey
/// under `name`.
pub async fn finish_registration(
    hub: &Hub,
    principal: &Principal,
    state: &str,
    response: &[u8],
    name: &str,
) -> Result<Passkey, Refused> {
    let human = operator(principal)?;
    let name = name.trim();
    let name = if name.is_empty() { "Passkey" } else { name };
    if name.chars().count() > MAX_NAME || name.chars().any(char::is_control) {
        return Err(no(format!("a passkey's name is at most {MAX_NAME} characters")));
    }
    let sealed = open(hub, state, Kind::Register).await?;
    if sealed.a != principal.account.as_str() || sealed.h != human.as_str() {
        return Err(no("This passkey prompt was started by someone else: reload the page."));
    }
    let rp = rp(hub)?;
    let server = unb64(&sealed.s)
        .and_then(|s| RegistrationServerState::<USER_LEN>::decode(s.as_slice()).ok())
        .ok_or_else(|| no("This passkey prompt is no longer valid: reload the page and try again."))?;
    let registration = Registration::from_json_relaxed(response)
        .map_err(|e| no(format!("The browser's answer could not be read as a passkey registration ({e}).")))?;
    let options = RegistrationVerificationOptions::<OriginRule, OriginRule> {
        allowed_origins: rp.origins(),
        ..RegistrationVerificationOptions::default()
    };
    let credential = server.verify(&rp.id, &registration, &options).map_err(|e| {
        tracing::info!(error = %e, "a passkey registration was refused");
        no(format!("The passkey was not accepted ({e})."))
    })?;
    let (id, transports, _user, static_state, dynamic_state, _metadata) = credential.into_parts();
    let key = KeyState {
        s: b64(&match static_state.encode() {
            Ok(v) => v,
            Err(never) => match never {},
        }),
        d: b64(&dynamic_state.encode().map_err(|e| HubError::Internal(format!("passkey state: {e:?}")))?),
        t: b64(&[transports.encode().map_err(|e| HubError::Internal(format!("passkey transports: {e:?}")))?]),
    };
    if hub.credentials.passkeys_of(&principal.account, human).await?.len() >= MAX_PASSKEYS {
        return Err(no(format!("at most {MAX_PASSKEYS} passkeys per operator: remove one first")));
    }
    let passkey = Passkey {
        account: principal.account.clone(),
        human: human.clone(),
        id: b64(id.as_ref()),
        name: name.to_owned(),
        created_at: hub.clock.now(),
        last_used_at: None,
        state: serde_json::to_string(&key).expect("strings serialize"),
    };
    // a credential id is the Hub's key for a passkey: one already registered (by anyone) is never
    // replaced by a registration
    let event = crate::audit::Event::new("credential.created", format!("human:{human}"))
        .target(format!("passkey:{}", passkey.id))
        .detail("kind", "passkey");
    if !crate::audit::within(hub, &passkey.account, vec![event], hub.credentials.put_passkey(&passkey, true)).await? {
        return Err(no("That passkey is already registered."));
    }
    tracing::info!(account = %passkey.account, human = %human, "passkey registered");
    Ok(passkey)
}

/// Start an assertion: a login (anyone) or a step-up (the calling operator, for `message`).
pub fn begin_assertion(hub: &Hub, step_up: Option<(&Principal, &str)>) -> Result<Started, Refused> {
    let rp = rp(hub)?;
    let (server, client) = DiscoverableCredentialRequestOptions::passkey(&rp.id)
        .start_ceremony()
        .map_err(|e| Refused::Hub(HubError::Internal(format!("passkey options: {e}"))))?;
    let options = serde_json::to_string(&client).map_err(|e| HubError::Internal(format!("passkey options: {e}")))?;
    let s = b64(&server.encode().map_err(|e| HubError::Internal(format!("passkey state: {e}")))?);
    let sealed = match step_up {
        None => Sealed { k: Kind::Login, a: String::new(), h: String::new(), m: String::new(), s },
        Some((principal, message)) => Sealed {
            k: Kind::StepUp,
            a: principal.account.to_string(),
            h: operator(principal)?.to_string(),
            m: message.to_owned(),
            s,
        },
    };
    Ok(Started { options, state: seal(hub, &sealed), rp: rp.host.clone() })
}

/// Verify an assertion against the stored passkey; the passkey and the operator key the session
/// will stand on.
/// The passkey and its operator's active key (`None`: the operator holds none — an SSO-only
/// operator, issue 42, whose live session vouches for them instead).
async fn assert(hub: &Hub, sealed: &Sealed, response: &[u8]) -> Result<(Passkey, Option<String>), Refused> {
    let rp = rp(hub)?;
    let server = unb64(&sealed.s)
        .and_then(|s| DiscoverableAuthenticationServerState::decode(s.as_slice()).ok())
        .ok_or_else(|| no("This passkey prompt is no longer valid: reload the page and try again."))?;
    let auth = DiscoverableAuthentication::<USER_LEN>::from_json_relaxed(response)
        .map_err(|e| no(format!("The browser's answer could not be read as a passkey assertion ({e}).")))?;
    let raw_id = auth.raw_id().as_ref().to_vec();
    let Some(mut passkey) = hub.credentials.passkey_by_id(&b64(&raw_id)).await? else {
        return Err(no("That passkey is not registered here (it may have been removed)."));
    };
    let unreadable = || Refused::Hub(HubError::Internal("a stored passkey could not be read".into()));
    let key: KeyState = serde_json::from_str(&passkey.state).map_err(|_| unreadable())?;
    let static_state = unb64(&key.s).and_then(|s| StaticState::decode(s.as_slice()).ok()).ok_or_else(unreadable)?;
    let dynamic_state = unb64(&key.d)
        .and_then(|d| <[u8; 7]>::try_from(d.as_slice()).ok())
        .and_then(|d| DynamicState::decode(d).ok())
        .ok_or_else(unreadable)?;
    let handle = user_handle(hub, &passkey.account, &passkey.human);
    let id = CredentialId::<&[u8]>::decode(raw_id.as_slice()).map_err(|_| unreadable())?;
    let mut credential =
        AuthenticatedCredential::new(id, &handle, static_state, dynamic_state).map_err(|_| unreadable())?;
    let options = AuthenticationVerificationOptions::<OriginRule, OriginRule> {
        allowed_origins: rp.origins(),
        ..AuthenticationVerificationOptions::default()
    };
    let changed = server.verify(&rp.id, &auth, &mut credential, &options).map_err(|e| {
        tracing::info!(error = %e, "a passkey assertion was refused");
        no(format!("The passkey was not accepted ({e})."))
    })?;
    // a revoked operator's passkeys stop at once
    let now = hub.clock.now();
    let keys = hub.credentials.credentials_of(&passkey.account, &PrincipalId::Operator(passkey.human.clone())).await?;
    let active = keys.iter().find(|c| c.is_active(now)).map(|c| c.id.clone());
    let day = |t: ma2h_protocol::time::Timestamp| t.date_naive();
    if changed || passkey.last_used_at.is_none_or(|t| day(t) != day(now)) {
        let d = credential.dynamic_state().encode().map_err(|e| HubError::Internal(format!("passkey state: {e:?}")))?;
        passkey.state = serde_json::to_string(&KeyState { d: b64(&d), ..key }).expect("strings serialize");
        passkey.last_used_at = Some(now);
        hub.credentials.put_passkey(&passkey, false).await?;
    }
    Ok((passkey, active))
}

/// Finish a login: the operator the passkey belongs to.
pub async fn finish_login(hub: &Hub, state: &str, response: &[u8]) -> Result<Principal, Refused> {
    let sealed = open(hub, state, Kind::Login).await?;
    let (passkey, credential_id) = assert(hub, &sealed, response).await?;
    // A passkey login session stands on the operator's active key.
    let Some(credential_id) = credential_id else {
        return Err(no(format!("human:{} has no active operator key", passkey.human)));
    };
    crate::decisions::presence::seen(hub, &passkey.account, &passkey.human).await;
    tracing::info!(account = %passkey.account, human = %passkey.human, "logged in with a passkey");
    Ok(Principal { account: passkey.account, id: PrincipalId::Operator(passkey.human), credential_id })
}

/// Finish a step-up: the calling operator, with one of their own passkeys, for `message`.
pub async fn finish_step_up(
    hub: &Hub,
    principal: &Principal,
    message: &str,
    state: &str,
    response: &[u8],
) -> Result<StepUp, Refused> {
    let human = operator(principal)?;
    let sealed = open(hub, state, Kind::StepUp).await?;
    if sealed.a != principal.account.as_str() || sealed.h != human.as_str() || sealed.m != message {
        return Err(no("This passkey prompt was for another answer: reload the page."));
    }
    let (passkey, active) = assert(hub, &sealed, response).await?;
    if passkey.account != principal.account || passkey.human != *human {
        return Err(no("That passkey belongs to another operator."));
    }
    // Issue 42: an SSO session (re-checked against the account's mapping on this very request)
    // vouches for an operator who holds no key; any other needs an active one.
    if active.is_none() && !principal.credential_id.starts_with(crate::sso::SESSION_PREFIX) {
        return Err(no(format!("human:{human} has no active operator key")));
    }
    Ok(StepUp { account: principal.account.clone(), human: human.clone(), message: message.to_owned() })
}

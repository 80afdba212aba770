//! Single-use answer tokens: an email's answer links (issue 20) and a phone notification's
//! answer buttons (issue 41). A token is an AEAD-sealed `{account, message, option, human,
//! expiry, nonce}` (and, for a notification, the device it was sent to) under the master key,
//! sealed for its purpose: unforgeable, bound to one message, one option and one operator, and
//! a mail token is no notification token. Reading one changes nothing; applying it burns its
//! nonce first, so it answers at most once, then resolves through the §8.8 use case as its
//! operator — §9.1 resolver rules and §7 first terminal wins exactly as in the inbox — while
//! that operator still holds an active credential and can still be reached that way (still a
//! recipient of an email channel; the device still subscribed).

use base64::Engine as _;
use ma2h_protocol::envelope::{Envelope, Mode};
use ma2h_protocol::ids::{AccountId, HumanId, MessageId};
use ma2h_protocol::time;
use serde::{Deserialize, Serialize};
use serde_json::json;

use crate::kernel::auth::Principal;
use crate::kernel::credentials::PrincipalId;
use crate::messages::records::{Lookup, MessageRecord};
use crate::{Hub, HubError};

/// A token of an ask without `expires_at` stays valid this long.
const DEFAULT_LIFETIME: chrono::Duration = chrono::Duration::days(7);

/// What a token answers through.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Purpose {
    /// An email's answer link (`/a/{token}`).
    Mail,
    /// A Web Push notification's answer button (`POST /inbox/push/answer`).
    Push,
}

impl Purpose {
    fn context(self) -> &'static str {
        match self {
            Self::Mail => "mail-answer/v1",
            Self::Push => "push-answer/v1",
        }
    }
    fn nonce_prefix(self) -> &'static str {
        match self {
            Self::Mail => "mail-link",
            Self::Push => "push-answer",
        }
    }
    fn name(self) -> &'static str {
        match self {
            Self::Mail => "email",
            Self::Push => "this device",
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Token {
    a: String,
    m: String,
    o: String,
    h: String,
    /// Expiry, ms since the epoch.
    e: i64,
    n: String,
    /// The device a notification's token was sent to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    d: Option<String>,
}

fn seal(hub: &Hub, purpose: Purpose, t: &Token) -> String {
    let plain = serde_json::to_vec(t).unwrap_or_default();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(hub.master_key.seal(
        hub.random.as_ref(),
        purpose.context(),
        &plain,
    ))
}

fn open(hub: &Hub, purpose: Purpose, token: &str) -> Option<Token> {
    if token.len() > 2048 {
        return None;
    }
    let sealed = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(token).ok()?;
    serde_json::from_slice(&hub.master_key.open(purpose.context(), &sealed).ok()?).ok()
}

/// One option's token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Minted {
    pub label: String,
    pub value: String,
    pub token: String,
}

/// The answer tokens for `human`, one per option, when the ask takes an inline answer
/// (confirm/select, answering allowed, nothing sensitive); none otherwise.
pub fn mint(hub: &Hub, purpose: Purpose, record: &MessageRecord, envelope: &Envelope, human: &str) -> Vec<Minted> {
    mint_for(hub, purpose, record, envelope, human, None)
}

/// As [`mint`], bound to the device a notification goes to.
pub fn mint_for(
    hub: &Hub,
    purpose: Purpose,
    record: &MessageRecord,
    envelope: &Envelope,
    human: &str,
    device: Option<&str>,
) -> Vec<Minted> {
    let Some(request) = envelope.request() else { return vec![] };
    if !matches!(request.mode, Mode::Confirm | Mode::Select)
        || !request.permissions.allow_respond
        || crate::channels::audience::is_sensitive(envelope)
    {
        return vec![];
    }
    let expiry = record.expires_at.unwrap_or(record.created_at + DEFAULT_LIFETIME);
    request
        .options
        .iter()
        .take(20)
        .map(|o| {
            let mut nonce = [0u8; 16];
            hub.random.fill(&mut nonce);
            let token = Token {
                a: record.account.to_string(),
                m: record.id.to_string(),
                o: o.value.clone(),
                h: human.to_owned(),
                e: expiry.timestamp_millis(),
                n: hex::encode(nonce),
                d: device.map(str::to_owned),
            };
            Minted { label: o.label.clone(), value: o.value.clone(), token: seal(hub, purpose, &token) }
        })
        .collect()
}

/// What a token would do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkView {
    pub message_id: String,
    pub title: String,
    pub option_label: String,
    pub option_value: String,
    pub human: String,
    /// The message's status now (`open`, or how it ended).
    pub status: String,
    /// This token was already used.
    pub used: bool,
}

/// Why a token cannot be shown or used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkError {
    /// Not a token this Hub sealed for this purpose (or damaged).
    Invalid,
    /// Past its expiry.
    Expired,
    /// The message was purged.
    Gone,
    /// The store could not be read or written: try again.
    Unavailable,
}

/// What applying a token came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Applied {
    Answered(LinkView),
    /// This token already answered (or was already used for an attempt).
    AlreadyUsed(LinkView),
    /// §8.8 refused it (already terminal, not an allowed resolver, …): the reason.
    Refused(LinkView, String),
    /// Issue 41: a policy asks for a passkey — answered only in the inbox (the step-up page).
    NeedsPasskey(LinkView),
}

async fn read(hub: &Hub, purpose: Purpose, token: &str) -> Result<(Token, MessageRecord, LinkView), LinkError> {
    let t = open(hub, purpose, token).ok_or(LinkError::Invalid)?;
    let now = hub.clock.now();
    if now.timestamp_millis() > t.e {
        return Err(LinkError::Expired);
    }
    let account = AccountId::parse(&t.a).ok_or(LinkError::Invalid)?;
    let id = MessageId::parse(&t.m).ok_or(LinkError::Invalid)?;
    let record = match hub.lookup(&account, &id).await {
        Ok(Lookup::Found(r)) => r,
        Ok(_) => return Err(LinkError::Gone),
        Err(e) => {
            tracing::error!(error = %e, "answer token: the message could not be read");
            return Err(LinkError::Unavailable);
        }
    };
    let label = record
        .envelope()
        .ok()
        .and_then(|e| e.request().map(|r| r.label_of(&t.o).to_owned()))
        .unwrap_or_else(|| t.o.clone());
    let used = hub.messages.read_counter(&nonce_key(purpose, &t), now).await.unwrap_or(0) > 0;
    let view = LinkView {
        message_id: t.m.clone(),
        title: record.title.clone(),
        option_label: label,
        option_value: t.o.clone(),
        human: t.h.clone(),
        status: record.status.as_str().to_owned(),
        used,
    };
    Ok((t, record, view))
}

fn nonce_key(purpose: Purpose, t: &Token) -> String {
    format!("{}/{}", purpose.nonce_prefix(), t.n)
}

/// What a token would do. Changes nothing.
pub async fn view(hub: &Hub, purpose: Purpose, token: &str) -> Result<LinkView, LinkError> {
    read(hub, purpose, token).await.map(|(_, _, v)| v)
}

/// Whether the token's operator can still answer this way: an active operator credential, and
/// still a recipient of an email channel (mail) or the device still subscribed (push).
async fn still_reachable(
    hub: &Hub,
    purpose: Purpose,
    t: &Token,
    account: &AccountId,
    human: &HumanId,
) -> Result<bool, HubError> {
    let reachable = match purpose {
        Purpose::Mail => {
            let policy = hub.credentials.get_account_policy(account).await?.unwrap_or_default();
            policy.channels.channels.values().any(|c| match c {
                crate::channels::config::Channel::Email(m) => m.recipients.contains_key(human.as_str()),
                _ => false,
            })
        }
        Purpose::Push => {
            let devices = hub.credentials.devices_of(account, human).await?;
            t.d.as_deref().is_some_and(|d| devices.iter().any(|x| x.id == d))
        }
    };
    Ok(reachable && crate::channels::audience::operator_active(hub, account, human).await?)
}

/// Burn the token, then resolve as its operator.
pub async fn apply(hub: &Hub, purpose: Purpose, token: &str) -> Result<Applied, LinkError> {
    let (t, record, view) = read(hub, purpose, token).await?;
    let now = hub.clock.now();
    let expiry = time::from_millis(t.e) + chrono::Duration::days(1);
    let uses = hub.messages.incr_counter(&nonce_key(purpose, &t), expiry, now).await.map_err(|e| {
        tracing::error!(error = %e, "answer token: the nonce could not be burnt");
        LinkError::Unavailable
    })?;
    if uses > 1 {
        return Ok(Applied::AlreadyUsed(LinkView { used: true, ..view }));
    }
    let Some(human) = HumanId::parse(&t.h) else { return Err(LinkError::Invalid) };
    match still_reachable(hub, purpose, &t, &record.account, &human).await {
        Ok(true) => {}
        Ok(false) => {
            return Ok(Applied::Refused(
                LinkView { used: true, ..view },
                format!("human:{human} can no longer answer from {}", purpose.name()),
            ));
        }
        Err(e) => {
            tracing::error!(error = %e, "answer token: the operator could not be checked");
            return Err(LinkError::Unavailable);
        }
    }
    crate::decisions::presence::seen(hub, &record.account, &human).await; // issue 40: activity
    let principal = Principal {
        account: record.account.clone(),
        id: PrincipalId::Operator(human.clone()),
        credential_id: match purpose {
            Purpose::Mail => "email-link".into(),
            Purpose::Push => format!("push:{}", t.d.as_deref().unwrap_or_default()),
        },
    };
    let body = serde_json::to_vec(&json!({"resolution": "answered", "value": t.o})).unwrap_or_default();
    let view = LinkView { used: true, ..view };
    Ok(match crate::messages::resolve::resolve_outcome(hub, &principal, None, record.id.as_str(), &body).await {
        Ok(crate::messages::resolve::Outcome::Pending(p)) => {
            tracing::info!(message_id = %record.id, human = %human, via = purpose.name(), "approval from an answer token");
            let status =
                format!("approved ({} of {}; sent when the quorum is complete)", p.approvals.len(), p.required);
            Applied::Answered(LinkView { status, ..view })
        }
        Ok(_) => {
            tracing::info!(message_id = %record.id, human = %human, via = purpose.name(), "answered from an answer token");
            Applied::Answered(LinkView { status: "answered".into(), ..view })
        }
        Err(HubError::AlreadyTerminal { status, .. }) => {
            Applied::Refused(view, format!("it is already {}", status.as_str()))
        }
        Err(HubError::NotAuthorized(why)) => Applied::Refused(view, why),
        Err(HubError::PasskeyRequired { .. }) => Applied::NeedsPasskey(LinkView { used: false, ..view }),
        Err(HubError::Protocol(e)) => Applied::Refused(view, e.to_string()),
        Err(HubError::NotFound | HubError::Gone) => return Err(LinkError::Gone),
        Err(e) => {
            tracing::error!(error = %e, "answer token: resolve failed");
            Applied::Refused(view, "the Hub could not record the answer; try the inbox".into())
        }
    })
}

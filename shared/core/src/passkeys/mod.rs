//! Passkeys (issue 41): an operator registers passkeys (WebAuthn discoverable credentials) from
//! the inbox, logs in with one instead of pasting a key, and — where an approval policy says
//! `passkey` — proves presence with a fresh assertion before an answer is applied.
//!
//! The relying party is `webauthn_rp` (pure RustCrypto). Nothing about a ceremony is stored while
//! it runs: its server state is sealed under the master key into the page that starts it
//! ([`ceremony`]), and its challenge is burnt through a store counter when it is used, so any
//! process (any Lambda container) finishes what another started, and each challenge serves once.
//!
//! A passkey belongs to one operator; it works only while that operator holds an active key, so
//! revoking an operator stops their passkeys at once.

pub mod ceremony;
pub mod record;
pub mod relying_party;

pub use record::{KeyState, Passkey};

use ma2h_protocol::ids::{AccountId, HumanId};

use crate::kernel::auth::Principal;
use crate::kernel::credentials::PrincipalId;
use crate::{Hub, HubError};

/// Most passkeys per operator.
pub const MAX_PASSKEYS: usize = 10;
/// Longest passkey name.
pub const MAX_NAME: usize = 64;

fn operator(principal: &Principal) -> Result<&HumanId, HubError> {
    match &principal.id {
        PrincipalId::Operator(h) => Ok(h),
        PrincipalId::Agent(_) => Err(HubError::NotAuthorized("only an operator has passkeys".into())),
    }
}

/// The calling operator's passkeys, oldest first.
pub async fn mine(hub: &Hub, principal: &Principal) -> Result<Vec<Passkey>, HubError> {
    Ok(hub.credentials.passkeys_of(&principal.account, operator(principal)?).await?)
}

/// Remove one of the calling operator's passkeys: it logs in and steps up no more, at once.
pub async fn remove(hub: &Hub, principal: &Principal, id: &str) -> Result<(), HubError> {
    let human = operator(principal)?;
    let event = crate::audit::Event::new("credential.revoked", principal.actor())
        .target(format!("passkey:{id}"))
        .detail("kind", "passkey");
    if crate::audit::within(
        hub,
        &principal.account,
        vec![event],
        hub.credentials.delete_passkey(&principal.account, human, id),
    )
    .await?
    {
        tracing::info!(account = %principal.account, human = %human, "passkey removed");
        Ok(())
    } else {
        Err(HubError::NotFound)
    }
}

/// An operator's passkeys by the admin (`admin passkeys list|remove`).
pub async fn of(hub: &Hub, account: &AccountId, human: &HumanId) -> Result<Vec<Passkey>, HubError> {
    Ok(hub.credentials.passkeys_of(account, human).await?)
}

/// Remove an operator's passkey by the admin.
pub async fn remove_of(hub: &Hub, account: &AccountId, human: &HumanId, id: &str) -> Result<(), HubError> {
    let event = crate::audit::Event::new("credential.revoked", crate::admin::ADMIN_ACTOR)
        .target(format!("passkey:{id}"))
        .detail("kind", "passkey")
        .detail("human", format!("human:{human}"));
    if crate::audit::within(hub, account, vec![event], hub.credentials.delete_passkey(account, human, id)).await? {
        tracing::info!(account = %account, human = %human, "passkey removed by the admin");
        Ok(())
    } else {
        Err(HubError::NotFound)
    }
}

//! Credentials: API keys are random 256-bit tokens shown once; the store keeps only their
//! SHA-256 (high-entropy keys need no slow hash). Lookups go by hash, so comparison never touches
//! the plaintext.

use base64::Engine;
use ma2h_protocol::ids::{AccountId, Actor};
use sha2::{Digest, Sha256};

use crate::HubError;
use crate::hub::Hub;
use crate::records::PrincipalId;

const AGENT_KEY_PREFIX: &str = "ma2h_ak_";
const OPERATOR_KEY_PREFIX: &str = "ma2h_op_";

/// An authenticated caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub account: AccountId,
    pub id: PrincipalId,
    pub credential_id: String,
}

impl Principal {
    /// The Hub-attested actor for this caller (§9.1: never from a request body).
    pub fn actor(&self) -> Actor {
        match &self.id {
            PrincipalId::Agent(a) => Actor::agent(a),
            PrincipalId::Operator(h) => Actor::human(h),
        }
    }
}

/// SHA-256 (hex) of a presented key.
pub fn hash_key(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

/// A fresh random token with a readable prefix (`ma2h_ak_…`, `ma2h_op_…`, `whsec_…`).
pub fn new_token(hub: &Hub, prefix: &str) -> String {
    let mut bytes = [0u8; 32];
    hub.random.fill(&mut bytes);
    format!("{prefix}{}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

pub fn key_prefix(principal: &PrincipalId) -> &'static str {
    match principal {
        PrincipalId::Agent(_) => AGENT_KEY_PREFIX,
        PrincipalId::Operator(_) => OPERATOR_KEY_PREFIX,
    }
}

/// Resolve a presented key to its principal: unknown, revoked or expired → 401.
pub async fn authenticate(hub: &Hub, presented: Option<&str>) -> Result<Principal, HubError> {
    let key = presented.map(str::trim).filter(|k| !k.is_empty()).ok_or(HubError::Unauthenticated)?;
    if key.len() > 256 {
        return Err(HubError::Unauthenticated);
    }
    let record = hub.credentials.credential_by_hash(&hash_key(key)).await?.ok_or(HubError::Unauthenticated)?;
    if !record.is_active(hub.clock.now()) {
        return Err(HubError::Unauthenticated);
    }
    Ok(Principal { account: record.account, id: record.principal, credential_id: record.id })
}

//! What is stored of a passkey (a leaf module: the store ports name it).

use ma2h_protocol::ids::{AccountId, HumanId};
use ma2h_protocol::time::Timestamp;
use serde::{Deserialize, Serialize};

/// One registered passkey.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Passkey {
    pub account: AccountId,
    pub human: HumanId,
    /// The credential id (base64url), as the authenticator chose it; unique across the Hub.
    pub id: String,
    /// What the operator called it.
    pub name: String,
    pub created_at: Timestamp,
    /// Last login or step-up (kept to the day: a use writes only when the day or the
    /// authenticator's counter changed).
    pub last_used_at: Option<Timestamp>,
    /// The public key and authenticator state ([`KeyState`] as JSON).
    pub state: String,
}

/// What verifying an assertion needs, encoded by `webauthn_rp` (base64url each).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KeyState {
    /// The public key and its static extensions (`StaticState`).
    pub s: String,
    /// The signature counter and backup flags (`DynamicState`).
    pub d: String,
    /// The transports the authenticator reported.
    pub t: String,
}

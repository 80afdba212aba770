//! The Hub's Ed25519 signing keys (§9.2): the current key signs pushed Responses for agents
//! configured for `ed25519`; its public half — and, during a rotation overlap, the previous ones —
//! are published in the capability document so agents can verify with either.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ma2h_protocol::signature::{SigningKey, VerifyingKey};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

pub struct HubKeys {
    pub current: SigningKey,
    pub current_kid: String,
    /// Previous public keys still valid for verification.
    pub previous: Vec<[u8; 32]>,
}

impl std::fmt::Debug for HubKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HubKeys").field("current_kid", &self.current_kid).finish_non_exhaustive()
    }
}

/// A short key id: the first 8 bytes of SHA-256 of the public key, hex.
pub fn kid(public: &[u8; 32]) -> String {
    hex::encode(&Sha256::digest(public)[..8])
}

impl HubKeys {
    pub fn from_seed(seed: &[u8; 32], previous: Vec<[u8; 32]>) -> Self {
        let current = SigningKey::ed25519_from_seed(seed);
        let current_kid = kid(&Self::public_of(&current));
        Self { current, current_kid, previous }
    }

    fn public_of(key: &SigningKey) -> [u8; 32] {
        key.verifying_key().ed25519_bytes().expect("HubKeys hold Ed25519 keys only")
    }

    /// Parse a published public key (base64url, 32 bytes).
    pub fn parse_public(s: &str) -> Option<[u8; 32]> {
        URL_SAFE_NO_PAD.decode(s.trim_end_matches('=')).ok()?.try_into().ok()
    }

    /// Every key an agent may verify with, current first.
    pub fn verifying_keys(&self) -> Vec<VerifyingKey> {
        let mut keys = vec![self.current.verifying_key()];
        keys.extend(self.previous.iter().filter_map(VerifyingKey::ed25519_from_bytes));
        keys
    }

    /// The capability document's `signing_keys` array.
    pub fn published(&self) -> Value {
        let mut out = vec![json!({
            "kid": self.current_kid, "alg": "ed25519",
            "public_key": URL_SAFE_NO_PAD.encode(Self::public_of(&self.current)), "status": "current"
        })];
        for p in &self.previous {
            out.push(json!({ "kid": kid(p), "alg": "ed25519", "public_key": URL_SAFE_NO_PAD.encode(p), "status": "previous" }));
        }
        Value::Array(out)
    }
}

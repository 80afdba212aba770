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

#[cfg(test)]
mod tests {
    use super::*;
    use ma2h_protocol::signature::{self, SignedContext};

    fn ctx() -> SignedContext {
        SignedContext {
            ma2h_version: "0.5".into(),
            callback_url: "https://agent.example/cb".into(),
            id: "msg_1".into(),
            in_reply_to: "msg_1".into(),
            jti: "jti_1".into(),
            payload_sha256: "00".into(),
            resolution: "answered".into(),
            resolution_id: "res_1".into(),
            resolved_at: None,
            t: "1".into(),
        }
    }

    #[test]
    fn during_a_rotation_both_keys_are_published_and_verify() {
        let old = HubKeys::from_seed(&[1u8; 32], vec![]);
        let old_public = old.current.verifying_key().ed25519_bytes().unwrap();
        let new = HubKeys::from_seed(&[2u8; 32], vec![old_public]);
        let published = new.published();
        assert_eq!(published.as_array().unwrap().len(), 2);
        assert_eq!(published[0]["status"], "current");
        assert_eq!(published[1]["status"], "previous");
        assert_eq!(HubKeys::parse_public(published[1]["public_key"].as_str().unwrap()), Some(old_public));
        // a Response signed before the rotation still verifies with the published set
        let v1_old = signature::sign(&ctx(), &old.current);
        let v1_new = signature::sign(&ctx(), &new.current);
        let keys = new.verifying_keys();
        assert!(signature::verify(&ctx(), &v1_old, &keys).is_ok());
        assert!(signature::verify(&ctx(), &v1_new, &keys).is_ok());
        assert!(signature::verify(&ctx(), &v1_old, &HubKeys::from_seed(&[2u8; 32], vec![]).verifying_keys()).is_err());
        assert_ne!(kid(&old_public), new.current_kid);
    }
}

//! The Hub's Ed25519 signing keys (§9.2): the current key signs pushed Responses for agents
//! configured for `ed25519`; its public half — and, during a rotation overlap, the previous ones —
//! are published in the capability document so agents can verify with either.

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ma2h_protocol::signature::{SigningKey, VerifyingKey};
use ma2h_protocol::wire::{KeyStatus, SigningKey as PublishedKey};
use sha2::{Digest, Sha256};

pub struct HubKeys {
    /// The current private key; `None` in a process that only publishes the keys (the AWS
    /// discovery function is never given the seed) and so can sign nothing.
    signer: Option<SigningKey>,
    current_public: [u8; 32],
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

/// Key material that does not parse.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum KeyError {
    #[error("the Ed25519 seed must be 32 bytes of base64")]
    BadSeed,
    #[error("MA2H_ED25519_PREVIOUS: `{0}` is not a base64url Ed25519 public key")]
    BadPrevious(String),
    /// A previous key given in standard, padded base64 — the seed format: publishing it would
    /// publish a private key. Previous keys are public keys, as the capability document shows.
    #[error(
        "a previous key is in standard base64 with padding, the format of a seed: list previous keys as the base64url public keys the capability document shows, never a seed"
    )]
    PreviousLooksLikeSeed,
}

impl HubKeys {
    /// The keys as configured: the current seed (standard base64 of 32 bytes) and the previous
    /// public keys (base64url) still published for verification. The one decoder the local
    /// binary (seed file or `MA2H_ED25519_SEED`) and the AWS wiring share.
    pub fn from_config(seed_b64: &str, previous: &[String]) -> Result<Self, KeyError> {
        use base64::engine::general_purpose::STANDARD;
        let seed: [u8; 32] =
            STANDARD.decode(seed_b64.trim()).ok().and_then(|v| v.try_into().ok()).ok_or(KeyError::BadSeed)?;
        Ok(Self::from_seed(&seed, Self::parse_previous(previous)?))
    }

    /// Previous public keys (base64url). A value in padded standard base64 is refused: that is
    /// how seeds are written, and a seed published as a "public key" would be a private key
    /// handed to everyone.
    pub fn parse_previous(previous: &[String]) -> Result<Vec<[u8; 32]>, KeyError> {
        previous
            .iter()
            .map(|p| {
                if p.trim().ends_with('=') || p.contains(['+', '/']) {
                    return Err(KeyError::PreviousLooksLikeSeed);
                }
                Self::parse_public(p).ok_or_else(|| KeyError::BadPrevious(p.clone()))
            })
            .collect()
    }

    pub fn from_seed(seed: &[u8; 32], previous: Vec<[u8; 32]>) -> Self {
        let current = SigningKey::ed25519_from_seed(seed);
        let current_public = Self::public_of(&current);
        Self { signer: Some(current), current_kid: kid(&current_public), current_public, previous }
    }

    /// Keys that are published but cannot sign: the current public key and the previous ones.
    pub fn public_only(current: [u8; 32], previous: Vec<[u8; 32]>) -> Self {
        Self { signer: None, current_kid: kid(&current), current_public: current, previous }
    }

    /// The current private key, if this process holds it.
    pub fn signer(&self) -> Option<&SigningKey> {
        self.signer.as_ref()
    }

    /// The current public key (base64url), as published.
    pub fn current_public(&self) -> String {
        URL_SAFE_NO_PAD.encode(self.current_public)
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
        std::iter::once(&self.current_public)
            .chain(&self.previous)
            .filter_map(VerifyingKey::ed25519_from_bytes)
            .collect()
    }

    /// The capability document's `signing_keys` array.
    pub fn published(&self) -> Vec<PublishedKey> {
        let key =
            |kid: String, public_key: String, status| PublishedKey { kid, alg: "ed25519".into(), public_key, status };
        std::iter::once(key(self.current_kid.clone(), self.current_public(), KeyStatus::Current))
            .chain(self.previous.iter().map(|p| key(kid(p), URL_SAFE_NO_PAD.encode(p), KeyStatus::Previous)))
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ma2h_protocol::signature::{self, SignedContext};

    #[test]
    fn configured_keys_decode_once_for_every_binary() {
        let seed = base64::engine::general_purpose::STANDARD.encode([7u8; 32]);
        let previous = HubKeys::from_seed(&[9u8; 32], vec![]).published()[0].public_key.clone();
        let keys = HubKeys::from_config(&format!(" {seed}\n"), std::slice::from_ref(&previous)).unwrap();
        assert_eq!(keys.current_kid, HubKeys::from_seed(&[7u8; 32], vec![]).current_kid);
        assert_eq!(keys.published()[1].public_key, previous);
        assert_eq!(HubKeys::from_config("c2hvcnQ=", &[]).unwrap_err(), KeyError::BadSeed);
        let bad = vec!["not-a-key".to_owned()];
        assert_eq!(HubKeys::from_config(&seed, &bad).unwrap_err(), KeyError::BadPrevious("not-a-key".into()));
    }

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
        let old_public = old.signer().unwrap().verifying_key().ed25519_bytes().unwrap();
        let new = HubKeys::from_seed(&[2u8; 32], vec![old_public]);
        let published = new.published();
        assert_eq!(published.len(), 2);
        assert_eq!((published[0].status, published[1].status), (KeyStatus::Current, KeyStatus::Previous));
        assert_eq!(HubKeys::parse_public(&published[1].public_key), Some(old_public));
        // a Response signed before the rotation still verifies with the published set
        let v1_old = signature::sign(&ctx(), old.signer().unwrap());
        let v1_new = signature::sign(&ctx(), new.signer().unwrap());
        let keys = new.verifying_keys();
        assert!(signature::verify(&ctx(), &v1_old, &keys).is_ok());
        assert!(signature::verify(&ctx(), &v1_new, &keys).is_ok());
        assert!(signature::verify(&ctx(), &v1_old, &HubKeys::from_seed(&[2u8; 32], vec![]).verifying_keys()).is_err());
        assert_ne!(kid(&old_public), new.current_kid);
    }

    #[test]
    fn public_only_keys_publish_the_same_document_and_sign_nothing() {
        let full = HubKeys::from_seed(&[3u8; 32], vec![[4u8; 32]]);
        let public = HubKeys::parse_public(&full.current_public()).unwrap();
        let published = HubKeys::public_only(public, vec![[4u8; 32]]);
        assert_eq!(published.published(), full.published());
        assert_eq!(published.current_kid, full.current_kid);
        assert!(published.signer().is_none());
    }

    #[test]
    fn a_seed_listed_as_a_previous_key_is_refused_never_published() {
        use base64::engine::general_purpose::STANDARD;
        let seed = STANDARD.encode([5u8; 32]);
        assert!(seed.ends_with('='));
        assert_eq!(HubKeys::parse_previous(&[seed]).unwrap_err(), KeyError::PreviousLooksLikeSeed);
        let public = HubKeys::from_seed(&[5u8; 32], vec![]).current_public();
        assert_eq!(HubKeys::parse_previous(&[public]).unwrap().len(), 1);
    }
}

//! Sealing stored secrets (agent signing secrets, later callback secrets) under the Hub master
//! key with XChaCha20-Poly1305. The store only ever sees sealed bytes.

use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};

use crate::kernel::clock::Random;

const NONCE_LEN: usize = 24;

/// The 32-byte master key. Never printed.
#[derive(Clone)]
pub struct MasterKey([u8; 32]);

impl std::fmt::Debug for MasterKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MasterKey(<redacted>)")
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SealError {
    #[error("master key must be 32 bytes of base64")]
    BadKey,
    #[error("sealed secret failed authentication (wrong master key or tampered)")]
    Open,
}

impl MasterKey {
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    pub fn generate(random: &dyn Random) -> Self {
        let mut k = [0u8; 32];
        random.fill(&mut k);
        Self(k)
    }

    pub fn from_base64(s: &str) -> Result<Self, SealError> {
        use base64::Engine;
        let bytes = base64::engine::general_purpose::STANDARD.decode(s.trim()).map_err(|_| SealError::BadKey)?;
        Ok(Self(bytes.try_into().map_err(|_| SealError::BadKey)?))
    }

    pub fn to_base64(&self) -> String {
        use base64::Engine;
        base64::engine::general_purpose::STANDARD.encode(self.0)
    }

    /// Seal `plaintext`, binding it to `context` (e.g. `account/agent/name`) so a sealed value
    /// cannot be moved to another slot.
    pub fn seal(&self, random: &dyn Random, context: &str, plaintext: &[u8]) -> Vec<u8> {
        let mut nonce = [0u8; NONCE_LEN];
        random.fill(&mut nonce);
        let cipher = XChaCha20Poly1305::new((&self.0).into());
        let ct = cipher
            .encrypt(XNonce::from_slice(&nonce), Payload { msg: plaintext, aad: context.as_bytes() })
            .expect("XChaCha20-Poly1305 encryption cannot fail for in-memory buffers");
        let mut out = nonce.to_vec();
        out.extend_from_slice(&ct);
        out
    }

    /// A 32-byte key for `purpose`, derived from the master key (HMAC-SHA256): the same in every
    /// process of a deployment, never stored, different per purpose and per deployment — e.g.
    /// the VAPID key pair of Web Push (issue 41).
    pub fn derive(&self, purpose: &str) -> [u8; 32] {
        use hmac::{KeyInit as _, Mac as _};
        let mut mac = hmac::Hmac::<sha2::Sha256>::new_from_slice(&self.0).expect("HMAC takes any key length");
        mac.update(b"ma2h-hub derived key v1\0");
        mac.update(purpose.as_bytes());
        let mut out = [0u8; 32];
        out.copy_from_slice(&mac.finalize().into_bytes());
        out
    }

    pub fn open(&self, context: &str, sealed: &[u8]) -> Result<Vec<u8>, SealError> {
        if sealed.len() < NONCE_LEN {
            return Err(SealError::Open);
        }
        let (nonce, ct) = sealed.split_at(NONCE_LEN);
        let cipher = XChaCha20Poly1305::new((&self.0).into());
        cipher
            .decrypt(XNonce::from_slice(nonce), Payload { msg: ct, aad: context.as_bytes() })
            .map_err(|_| SealError::Open)
    }
}

/// The secret name under which an agent's Hub-issued signing secret is stored (§9.2 signing of
/// pushed Responses for bearer/apikey callbacks).
pub const SIGNING_SECRET_NAME: &str = "hub:signing";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::clock::OsRandom;

    #[test]
    fn sealed_secrets_open_only_with_the_same_key_and_context() {
        let k = MasterKey::generate(&OsRandom);
        let sealed = k.seal(&OsRandom, "acct/bot/signing", b"s3cret");
        assert_eq!(k.open("acct/bot/signing", &sealed).unwrap(), b"s3cret");
        assert_eq!(k.open("acct/other/signing", &sealed), Err(SealError::Open));
        let other = MasterKey::generate(&OsRandom);
        assert_eq!(other.open("acct/bot/signing", &sealed), Err(SealError::Open));
        let mut tampered = sealed.clone();
        *tampered.last_mut().unwrap() ^= 1;
        assert_eq!(k.open("acct/bot/signing", &tampered), Err(SealError::Open));
    }

    #[test]
    fn master_key_base64_round_trips_and_rejects_wrong_lengths() {
        let k = MasterKey::generate(&OsRandom);
        let again = MasterKey::from_base64(&k.to_base64()).unwrap();
        assert_eq!(again.0, k.0);
        assert_eq!(MasterKey::from_base64("c2hvcnQ=").unwrap_err(), SealError::BadKey);
        assert!(!format!("{k:?}").contains(&k.to_base64()));
    }
}

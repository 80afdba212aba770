//! §9.3 state sealing: the resume blob is encrypted and authenticated (XChaCha20-Poly1305, an
//! AEAD — encrypt-then-MAC in one primitive) under a per-agent key pre-positioned in the agent
//! runtime (`MA2H_STATE_KEY`). The key never enters `state` and never transits the Hub; the
//! associated data binds the blob to the `agent.id`, so one agent's state cannot be replayed
//! into another's run. [`open`] authenticates before returning anything (§2.1 step 5).
//!
//! Sealed form (what goes into the envelope's `state`):
//! `{"ma2h_sealed": "v1", "alg": "xchacha20poly1305", "nonce": <b64url 24 B>, "ciphertext": <b64url>}`

use base64::Engine;
use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use chacha20poly1305::aead::{Aead, KeyInit, Payload};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use serde_json::{Value, json};

pub const SEALED_VERSION: &str = "v1";
pub const SEALED_ALG: &str = "xchacha20poly1305";
const NONCE_LEN: usize = 24;

/// Why opening (or loading a key) failed. Every variant means: do not act on this state.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum StateError {
    #[error("MA2H_STATE_KEY must be 32 bytes, base64 (standard or url-safe) or 64 hex digits")]
    BadKey,
    #[error("state is not a sealed ma2h state object (expected ma2h_sealed v1 / {SEALED_ALG})")]
    NotSealed,
    #[error("sealed state is malformed: {0}")]
    Malformed(&'static str),
    #[error("sealed state failed authentication: tampered, wrong key, or sealed for another agent")]
    Tampered,
}

/// The 32-byte per-agent state key. Never printed.
#[derive(Clone)]
pub struct StateKey([u8; 32]);

impl std::fmt::Debug for StateKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("StateKey(<redacted>)")
    }
}

impl StateKey {
    pub fn from_bytes(bytes: [u8; 32]) -> Self {
        Self(bytes)
    }

    /// Parse `MA2H_STATE_KEY`: base64 (standard or url-safe, padded or not) or hex.
    pub fn parse(s: &str) -> Result<Self, StateError> {
        let s = s.trim();
        let bytes = if s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit()) {
            (0..32).map(|i| u8::from_str_radix(&s[2 * i..2 * i + 2], 16)).collect::<Result<Vec<_>, _>>().ok()
        } else {
            STANDARD.decode(s).ok().or_else(|| URL_SAFE_NO_PAD.decode(s.trim_end_matches('=')).ok())
        };
        bytes.and_then(|b| b.try_into().ok()).map(Self).ok_or(StateError::BadKey)
    }

    /// A fresh random key, standard base64 (for `ma2h seal-state --generate-key`).
    pub fn generate_base64() -> String {
        let mut k = [0u8; 32];
        getrandom::fill(&mut k).expect("the OS random source is available");
        STANDARD.encode(k)
    }
}

fn aad(agent_id: &str) -> Vec<u8> {
    format!("ma2h-state/{SEALED_VERSION}\0{agent_id}").into_bytes()
}

/// Seal `state` (any JSON) for `agent_id`.
pub fn seal(key: &StateKey, agent_id: &str, state: &Value) -> Value {
    let mut nonce = [0u8; NONCE_LEN];
    getrandom::fill(&mut nonce).expect("the OS random source is available");
    let plain = serde_json::to_vec(state).expect("a Value serializes");
    let ct = XChaCha20Poly1305::new((&key.0).into())
        .encrypt(XNonce::from_slice(&nonce), Payload { msg: &plain, aad: &aad(agent_id) })
        .expect("in-memory AEAD encryption cannot fail");
    json!({
        "ma2h_sealed": SEALED_VERSION,
        "alg": SEALED_ALG,
        "nonce": URL_SAFE_NO_PAD.encode(nonce),
        "ciphertext": URL_SAFE_NO_PAD.encode(ct),
    })
}

/// Verify and open a sealed state. Nothing is returned unless the tag verifies (§9.3).
pub fn open(key: &StateKey, agent_id: &str, sealed: &Value) -> Result<Value, StateError> {
    let obj = sealed.as_object().ok_or(StateError::NotSealed)?;
    if obj.get("ma2h_sealed").and_then(Value::as_str) != Some(SEALED_VERSION)
        || obj.get("alg").and_then(Value::as_str) != Some(SEALED_ALG)
    {
        return Err(StateError::NotSealed);
    }
    let b64 = |k: &str| {
        obj.get(k)
            .and_then(Value::as_str)
            .and_then(|s| URL_SAFE_NO_PAD.decode(s).ok())
            .ok_or(StateError::Malformed("nonce/ciphertext must be unpadded base64url"))
    };
    let nonce = b64("nonce")?;
    if nonce.len() != NONCE_LEN {
        return Err(StateError::Malformed("nonce must be 24 bytes"));
    }
    let ct = b64("ciphertext")?;
    let plain = XChaCha20Poly1305::new((&key.0).into())
        .decrypt(XNonce::from_slice(&nonce), Payload { msg: &ct, aad: &aad(agent_id) })
        .map_err(|_| StateError::Tampered)?;
    serde_json::from_slice(&plain).map_err(|_| StateError::Malformed("plaintext is not JSON"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn key(b: u8) -> StateKey {
        StateKey::from_bytes([b; 32])
    }

    #[test]
    fn sealed_state_round_trips_and_hides_the_plaintext() {
        let state = json!({"step": 3, "pr": "refs/pull/7"});
        let sealed = seal(&key(1), "bot", &state);
        assert!(!sealed.to_string().contains("refs/pull/7"));
        assert_eq!(open(&key(1), "bot", &sealed).unwrap(), state);
    }

    #[test]
    fn tampered_wrong_key_or_other_agent_state_is_rejected() {
        let sealed = seal(&key(1), "bot", &json!({"ok": true}));
        let mut tampered = sealed.clone();
        let ct = tampered["ciphertext"].as_str().unwrap().to_owned();
        let first = if ct.starts_with('A') { 'B' } else { 'A' };
        let flipped = format!("{first}{}", &ct[1..]);
        tampered["ciphertext"] = flipped.into();
        assert_eq!(open(&key(1), "bot", &tampered), Err(StateError::Tampered));
        assert_eq!(open(&key(2), "bot", &sealed), Err(StateError::Tampered));
        assert_eq!(open(&key(1), "other-bot", &sealed), Err(StateError::Tampered));
        assert_eq!(open(&key(1), "bot", &json!({"ok": true})), Err(StateError::NotSealed));
    }

    #[test]
    fn keys_parse_from_base64_or_hex() {
        let b64 = StateKey::generate_base64();
        assert!(StateKey::parse(&b64).is_ok());
        assert!(StateKey::parse(&"ab".repeat(32)).is_ok());
        assert_eq!(StateKey::parse("short").unwrap_err(), StateError::BadKey);
    }
}

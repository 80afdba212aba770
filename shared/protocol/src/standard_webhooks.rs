//! Standard Webhooks (<https://www.standardwebhooks.com>, issue 43): the three headers an
//! existing verifier library checks, beside — never instead of — the Hub's own `MA2H-Signature`.
//!
//! * `webhook-id`: the event's stable id (the same on every retry, so a receiver deduplicates);
//! * `webhook-timestamp`: Unix seconds;
//! * `webhook-signature`: `v1,<base64 HMAC-SHA256(key, "{id}.{timestamp}.{body}")>`, one or more
//!   space-separated (a receiver accepts any of them: key rotation).
//!
//! The key is the secret's bytes: a `whsec_` prefix, then standard base64 of 24–64 random bytes.
//! §9.2 still rules a push: the `MA2H-Signature` over the canonical context is what an MA2H agent
//! MUST verify; these headers add a second, generic signature over the raw body for receivers that
//! speak Standard Webhooks.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hmac::{Hmac, KeyInit as _, Mac as _};
use sha2::Sha256;

/// The secret's prefix.
pub const PREFIX: &str = "whsec_";
/// The header names, lower case as the specification writes them.
pub const ID_HEADER: &str = "webhook-id";
pub const TIMESTAMP_HEADER: &str = "webhook-timestamp";
pub const SIGNATURE_HEADER: &str = "webhook-signature";
/// A receiver's default tolerance for `webhook-timestamp`, as the specification recommends.
pub const TOLERANCE_SECS: i64 = 5 * 60;

const MIN_KEY: usize = 24;
const MAX_KEY: usize = 64;

/// A Standard Webhooks signing secret. Never printed by `Debug`.
#[derive(Clone, PartialEq, Eq)]
pub struct WebhookSecret(Vec<u8>);

impl std::fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WebhookSecret(<redacted>)")
    }
}

/// Why a string is not a Standard Webhooks secret.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SecretError {
    #[error("a Standard Webhooks secret starts with `whsec_`")]
    NoPrefix,
    #[error("a Standard Webhooks secret is `whsec_` then standard base64")]
    NotBase64,
    #[error("a Standard Webhooks secret holds 24 to 64 bytes (e.g. whsec_$(openssl rand -base64 32))")]
    Length,
}

impl WebhookSecret {
    /// Parse `whsec_<base64>`.
    pub fn parse(s: &str) -> Result<Self, SecretError> {
        let b64 = s.trim().strip_prefix(PREFIX).ok_or(SecretError::NoPrefix)?;
        let key = STANDARD.decode(b64).map_err(|_| SecretError::NotBase64)?;
        if !(MIN_KEY..=MAX_KEY).contains(&key.len()) {
            return Err(SecretError::Length);
        }
        Ok(Self(key))
    }

    /// A secret from 32 fresh random bytes.
    pub fn from_random(bytes: [u8; 32]) -> Self {
        Self(bytes.to_vec())
    }

    /// The `whsec_…` form (shown once, stored sealed).
    pub fn expose(&self) -> String {
        format!("{PREFIX}{}", STANDARD.encode(&self.0))
    }

    /// `v1,<base64 signature>` over `{id}.{timestamp}.{body}`.
    pub fn sign(&self, id: &str, timestamp: i64, body: &[u8]) -> String {
        let mut mac = Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes keys of any length");
        mac.update(format!("{id}.{timestamp}.").as_bytes());
        mac.update(body);
        format!("v1,{}", STANDARD.encode(mac.finalize().into_bytes()))
    }

    /// The three headers for one delivery.
    pub fn headers(&self, id: &str, timestamp: i64, body: &[u8]) -> [(String, String); 3] {
        [
            (ID_HEADER.to_owned(), id.to_owned()),
            (TIMESTAMP_HEADER.to_owned(), timestamp.to_string()),
            (SIGNATURE_HEADER.to_owned(), self.sign(id, timestamp, body)),
        ]
    }

    /// A receiver's check: the timestamp within `tolerance` of `now`, and one of the
    /// space-separated `v1,` signatures matching (compared in constant time).
    pub fn verify(
        &self,
        id: &str,
        timestamp: &str,
        signatures: &str,
        body: &[u8],
        now: i64,
        tolerance: i64,
    ) -> Result<(), VerifyError> {
        let ts: i64 = timestamp.trim().parse().map_err(|_| VerifyError::Timestamp)?;
        if (now - ts).abs() > tolerance {
            return Err(VerifyError::Timestamp);
        }
        let found = signatures
            .split(' ')
            .filter_map(|s| s.strip_prefix("v1,"))
            .filter_map(|b64| STANDARD.decode(b64).ok())
            .any(|sig| {
                let mut mac = Hmac::<Sha256>::new_from_slice(&self.0).expect("HMAC takes keys of any length");
                mac.update(format!("{id}.{ts}.").as_bytes());
                mac.update(body);
                mac.verify_slice(&sig).is_ok() // constant time
            });
        if found { Ok(()) } else { Err(VerifyError::Signature) }
    }
}

/// Why a Standard Webhooks delivery does not verify.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum VerifyError {
    #[error("webhook-timestamp is missing, malformed or outside the tolerance")]
    Timestamp,
    #[error("no webhook-signature matches")]
    Signature,
}

#[cfg(test)]
mod tests {
    use super::*;

    // The specification's published example (standard-webhooks/standard-webhooks, spec/
    // standard-webhooks.md, "Signature scheme"): this secret, id, timestamp and body give this
    // signature.
    const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    const ID: &str = "msg_p5jXN8AQM9LWM0D4loKWxJek";
    const TS: i64 = 1614265330;
    const BODY: &str = r#"{"test": 2432232314}"#;
    const SIG: &str = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=";

    #[test]
    fn the_specification_example_signs_and_verifies() {
        let secret = WebhookSecret::parse(SECRET).unwrap();
        assert_eq!(secret.sign(ID, TS, BODY.as_bytes()), SIG);
        assert_eq!(secret.expose(), SECRET);
        secret.verify(ID, "1614265330", SIG, BODY.as_bytes(), TS + 10, TOLERANCE_SECS).unwrap();
        // several signatures: any one matching is enough (rotation)
        let two = format!("v1,AAAA {SIG}");
        secret.verify(ID, "1614265330", &two, BODY.as_bytes(), TS, TOLERANCE_SECS).unwrap();
    }

    #[test]
    fn a_changed_body_id_or_old_timestamp_is_refused() {
        let secret = WebhookSecret::parse(SECRET).unwrap();
        let body = br#"{"test": 2432232315}"#;
        assert_eq!(secret.verify(ID, "1614265330", SIG, body, TS, 300), Err(VerifyError::Signature));
        assert_eq!(
            secret.verify("msg_other", "1614265330", SIG, BODY.as_bytes(), TS, 300),
            Err(VerifyError::Signature)
        );
        assert_eq!(secret.verify(ID, "1614265330", SIG, BODY.as_bytes(), TS + 301, 300), Err(VerifyError::Timestamp));
        assert_eq!(secret.verify(ID, "soon", SIG, BODY.as_bytes(), TS, 300), Err(VerifyError::Timestamp));
        assert_eq!(secret.verify(ID, "1614265330", "v2,abc", BODY.as_bytes(), TS, 300), Err(VerifyError::Signature));
    }

    #[test]
    fn secrets_without_the_prefix_or_of_the_wrong_size_are_refused() {
        assert_eq!(WebhookSecret::parse("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"), Err(SecretError::NoPrefix));
        assert_eq!(WebhookSecret::parse("whsec_not base64!"), Err(SecretError::NotBase64));
        assert_eq!(WebhookSecret::parse("whsec_c2hvcnQ="), Err(SecretError::Length));
        let fresh = WebhookSecret::from_random([7; 32]);
        assert_eq!(WebhookSecret::parse(&fresh.expose()).unwrap(), fresh);
        assert!(!format!("{fresh:?}").contains(&fresh.expose()[6..]));
    }
}

//! §9.2 Response verification for a callback receiver (the re-invoked process of §2.1):
//!
//! 1. parse `MA2H-Signature: t=…,jti=…,v1=…` (the shared `ma2h-protocol` parser and `v1` rule);
//! 2. rebuild the `signed_context` from the receiver's **own** configured callback URL (never
//!    from the request), the received body (`id = in_reply_to`), and `payload_sha256`
//!    **recomputed** from the received `response`/`state`;
//! 3. reject `t` outside ±window of the local clock;
//! 4. verify with any held key (two during rotation: HMAC secrets and/or Ed25519 public keys);
//! 5. only then consult the persistent [`ReplayCache`]: a seen `jti` is a replay (rejected),
//!    a seen `(in_reply_to, resolution_id)` is a duplicate (acknowledge, do not act again, §6).
//!
//! The MAC rule itself is never re-implemented here: everything goes through
//! `ma2h_protocol::signature` and `ma2h_protocol::jcs`.

use ma2h_protocol::signature::{self, SignatureError, SignedContext, VerifyingKey};
use serde_json::Value;

use crate::replay::{ReplayCache, Seen};

/// Slack added to the `jti` TTL beyond `t + window` (so the TTL is always ≥ the window, §9.2).
pub(crate) const JTI_TTL_SLACK_SECS: i64 = 60;

/// A Response whose signature verified.
#[derive(Debug, Clone, PartialEq)]
pub struct VerifiedResponse {
    pub body: Value,
    pub in_reply_to: String,
    pub resolution_id: String,
    pub resolution: String,
    pub jti: String,
}

impl VerifiedResponse {
    /// The bound `response.actor` (§9.2: use it, never the unbound `defaulted`).
    pub fn actor(&self) -> Option<&str> {
        self.body.get("response").and_then(|r| r.get("actor")).and_then(Value::as_str)
    }
    /// The round-tripped `state` — still untrusted until [`crate::seal::open`] verifies it (§9.3).
    pub fn state(&self) -> Option<&Value> {
        self.body.get("state")
    }
}

/// Verification passed.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    /// First delivery of this resolution: act on it.
    Accepted(VerifiedResponse),
    /// Authentic, but this `(in_reply_to, resolution_id)` was already accepted: do not act (§6).
    Duplicate(VerifiedResponse),
}

/// Verification failed: do not act, answer 4xx.
#[derive(Debug, thiserror::Error)]
pub enum Rejection {
    #[error("missing MA2H-Signature header")]
    MissingHeader,
    #[error("{0}")]
    Signature(#[from] SignatureError),
    #[error("the body is not a §6 Response: {0}")]
    BadBody(String),
    #[error("replayed jti `{0}` (already accepted, §9.2)")]
    Replay(String),
    #[error("replay cache unavailable: {0}")]
    Cache(#[from] std::io::Error),
}

/// A configured verifier for one callback endpoint.
#[derive(Debug, Clone)]
pub struct Verifier {
    /// The receiver's own callback URL, exactly as it was put in `callback.url`.
    pub callback_url: String,
    pub keys: Vec<VerifyingKey>,
    pub window_secs: i64,
    pub cache: Option<ReplayCache>,
}

impl Verifier {
    pub fn new(callback_url: &str, keys: Vec<VerifyingKey>, cache: Option<ReplayCache>) -> Self {
        Self { callback_url: callback_url.to_owned(), keys, window_secs: signature::REPLAY_WINDOW_SECS, cache }
    }

    /// Verify one delivery: `body` exactly as received, `header` the `MA2H-Signature` value (a
    /// leading `MA2H-Signature:` is tolerated), `now` the local unix time.
    pub fn verify(&self, body: &[u8], header: &str, now: i64) -> Result<Verdict, Rejection> {
        let header = header.trim();
        if header.is_empty() {
            return Err(Rejection::MissingHeader);
        }
        let parsed = ma2h_protocol::inbound::parse_signature_member(header)?;
        let b: Value = serde_json::from_slice(body).map_err(|e| Rejection::BadBody(e.to_string()))?;
        let s = |k: &str| {
            b.get(k)
                .and_then(Value::as_str)
                .map(str::to_owned)
                .ok_or_else(|| Rejection::BadBody(format!("missing `{k}`")))
        };
        let (in_reply_to, resolution_id, resolution) = (s("in_reply_to")?, s("resolution_id")?, s("resolution")?);
        let ctx = SignedContext::for_response(&b, &self.callback_url, &parsed.jti, &parsed.t)
            .map_err(|k| Rejection::BadBody(format!("missing `{k}`")))?;
        signature::check_window(parsed.t_unix, now, self.window_secs)?;
        signature::verify(&ctx, &parsed.v1, &self.keys)?;
        let verified = VerifiedResponse { body: b, in_reply_to, resolution_id, resolution, jti: parsed.jti };
        let Some(cache) = &self.cache else { return Ok(Verdict::Accepted(verified)) };
        let expires = parsed.t_unix.max(now) + self.window_secs + JTI_TTL_SLACK_SECS;
        match cache.check_and_record(&verified.jti, expires, &verified.in_reply_to, &verified.resolution_id, now)? {
            Seen::Fresh => Ok(Verdict::Accepted(verified)),
            Seen::DuplicateResolution => Ok(Verdict::Duplicate(verified)),
            Seen::ReplayedJti => Err(Rejection::Replay(verified.jti)),
        }
    }
}

/// An HMAC verification key from a shared secret (`MA2H_SIGNING_SECRET` or a callback secret).
pub fn hmac_key(secret: &str) -> VerifyingKey {
    VerifyingKey::Hmac(secret.as_bytes().to_vec())
}

/// An Ed25519 key from its base64url public key (as published in `signing_keys`).
pub fn ed25519_key(public_b64url: &str) -> Option<VerifyingKey> {
    VerifyingKey::ed25519_from_b64url(public_b64url)
}

/// Every Ed25519 key in a capability document's `signing_keys` (current and previous, §9.2).
pub fn keys_from_capability(doc: &Value) -> Vec<VerifyingKey> {
    VerifyingKey::published(doc)
}

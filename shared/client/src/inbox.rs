//! The agent mailbox (§8.7) from the agent's side: drain, verify each entry as §9.7 requires,
//! and acknowledge what was processed.
//!
//! Verification order: the entry's shape → rebuild the `inbound_signed_context` from the
//! directive received (recomputing `payload_sha256`) → the signature with any held key → `t`
//! inside the replay window → the `jti` replay cache → `to` names this agent. A redelivered
//! directive (new `jti`, same `id`) verifies again but is reported as a duplicate, so the agent
//! acts on each directive id once (§13.4).

use std::time::Duration;

use ma2h_protocol::inbound::{InboundContext, parse_signature_member};
use ma2h_protocol::schema::{self, SchemaKind};
use ma2h_protocol::signature::{self, SignatureError, VerifyingKey};
use serde_json::{Value, json};

use crate::replay::{ReplayCache, Seen};
use crate::verify::JTI_TTL_SLACK_SECS;
use crate::{Client, ClientError};

/// The `resolution_id` under which a directive id is remembered in the replay cache.
const DIRECTIVE_MARK: &str = "directive";

impl Client {
    /// `GET /v1/inbox` (§8.7): the raw entries, each `{"directive": …, "signature": …}`.
    pub async fn drain(&self, max: Option<u32>, wait: Option<u32>) -> Result<Vec<Value>, ClientError> {
        let mut query = Vec::new();
        if let Some(m) = max {
            query.push(format!("max={m}"));
        }
        if let Some(w) = wait.filter(|w| *w > 0) {
            query.push(format!("wait={w}"));
        }
        let path = if query.is_empty() { "/v1/inbox".to_owned() } else { format!("/v1/inbox?{}", query.join("&")) };
        let timeout = Duration::from_secs(u64::from(wait.unwrap_or(0)) + 30);
        let reply = self.send(reqwest::Method::GET, &path, None, timeout).await?;
        match reply.status {
            200 => Self::json(&reply)?
                .get("messages")
                .and_then(Value::as_array)
                .cloned()
                .ok_or_else(|| ClientError::Protocol("drain body without `messages`".into())),
            s => Err(ClientError::hub(s, &reply.body)),
        }
    }

    /// `POST /v1/inbox/ack` (§8.7): how many of `ids` this call acknowledged.
    pub async fn ack_inbox(&self, ids: &[String], note: Option<&str>) -> Result<u64, ClientError> {
        let mut body = json!({ "ids": ids });
        if let Some(n) = note {
            body["note"] = json!(n);
        }
        let bytes = serde_json::to_vec(&body).expect("a Value serializes");
        let reply = self.send(reqwest::Method::POST, "/v1/inbox/ack", Some(&bytes), Duration::from_secs(30)).await?;
        match reply.status {
            200 => Self::json(&reply)?
                .get("acked")
                .and_then(Value::as_u64)
                .ok_or_else(|| ClientError::Protocol("ack body without `acked`".into())),
            s => Err(ClientError::hub(s, &reply.body)),
        }
    }
}

/// A directive whose signature verified.
#[derive(Debug, Clone, PartialEq)]
pub struct VerifiedDirective {
    pub directive: Value,
    pub id: String,
    pub jti: String,
}

/// Verification passed.
#[derive(Debug, Clone, PartialEq)]
pub enum EntryVerdict {
    /// First delivery of this directive: act on it.
    Accepted(VerifiedDirective),
    /// Authentic, but this directive id was already accepted (a redelivery): do not act again;
    /// ack it.
    Duplicate(VerifiedDirective),
}

/// Verification failed: do not act, do not ack.
#[derive(Debug, thiserror::Error)]
pub enum EntryRejection {
    #[error("not a mailbox entry: {0}")]
    BadShape(String),
    #[error("entry kind `{0}` is not handled by this client")]
    UnknownKind(String),
    #[error("{0}")]
    Signature(#[from] SignatureError),
    #[error("addressed to `{to}`, not to this agent")]
    NotForMe { to: String },
    #[error("replayed jti `{0}` (§9.2)")]
    Replay(String),
    #[error("replay cache unavailable: {0}")]
    Cache(#[from] std::io::Error),
}

/// Verifies drained entries for one agent.
#[derive(Debug, Clone)]
pub struct EntryVerifier {
    /// This agent's id (`to` must be `agent:<id>`).
    pub agent_id: String,
    pub keys: Vec<VerifyingKey>,
    pub window_secs: i64,
    pub cache: Option<ReplayCache>,
}

impl EntryVerifier {
    pub fn new(agent_id: &str, keys: Vec<VerifyingKey>, cache: Option<ReplayCache>) -> Self {
        Self { agent_id: agent_id.to_owned(), keys, window_secs: signature::REPLAY_WINDOW_SECS, cache }
    }

    /// Verify one entry at `now` (unix seconds).
    pub fn verify(&self, entry: &Value, now: i64) -> Result<EntryVerdict, EntryRejection> {
        let Some(directive) = entry.get("directive") else {
            let kind = entry.as_object().and_then(|o| o.keys().find(|k| *k != "signature").cloned());
            return Err(EntryRejection::UnknownKind(kind.unwrap_or_else(|| "none".into())));
        };
        schema::validate(SchemaKind::InboundMessage, entry).map_err(|e| EntryRejection::BadShape(e.to_string()))?;
        let member = entry.get("signature").and_then(Value::as_str).unwrap_or_default();
        let header = parse_signature_member(member)?;
        let ctx = InboundContext::for_directive(directive, &header.jti, &header.t)
            .map_err(|k| EntryRejection::BadShape(format!("missing `{k}`")))?;
        signature::verify_canonical(&ctx.to_canonical(), &header.v1, &self.keys)?;
        signature::check_window(header.t_unix, now, self.window_secs)?;
        let verified = VerifiedDirective { directive: directive.clone(), id: ctx.id.clone(), jti: header.jti };
        if ctx.to != format!("agent:{}", self.agent_id) {
            return Err(EntryRejection::NotForMe { to: ctx.to });
        }
        let Some(cache) = &self.cache else { return Ok(EntryVerdict::Accepted(verified)) };
        let expires = header.t_unix.max(now) + self.window_secs + JTI_TTL_SLACK_SECS;
        match cache.check_and_record(&verified.jti, expires, &verified.id, DIRECTIVE_MARK, now)? {
            Seen::Fresh => Ok(EntryVerdict::Accepted(verified)),
            Seen::DuplicateResolution => Ok(EntryVerdict::Duplicate(verified)),
            Seen::ReplayedJti => Err(EntryRejection::Replay(verified.jti)),
        }
    }
}

#[cfg(test)]
mod tests {
    use ma2h_protocol::signature::{SigningKey, header_line, sign_canonical};

    use super::*;

    const KEY: &[u8] = b"whsec_test";

    fn entry(to: &str, t: i64, jti: &str) -> Value {
        let d = json!({"ma2h_version": "0.5", "type": "directive", "id": "dir_01J0000000000000000000000A",
                       "from": "human:alice", "to": to, "created_at": "2026-06-04T12:00:00Z", "title": "Pause"});
        let ctx = InboundContext::for_directive(&d, jti, &t.to_string()).unwrap();
        let v1 = sign_canonical(&ctx.to_canonical(), &SigningKey::Hmac(KEY.to_vec()));
        json!({"directive": d, "signature": header_line(&t.to_string(), jti, &v1)})
    }

    fn verifier(cache: Option<ReplayCache>) -> EntryVerifier {
        EntryVerifier::new("bot", vec![VerifyingKey::Hmac(KEY.to_vec())], cache)
    }

    #[test]
    fn a_redelivery_verifies_but_is_a_duplicate_and_a_replayed_jti_is_rejected() {
        let dir = tempfile::tempdir().unwrap();
        let v = verifier(Some(ReplayCache::open(dir.path()).unwrap()));
        assert!(matches!(v.verify(&entry("agent:bot", 1000, "j1"), 1000), Ok(EntryVerdict::Accepted(_))));
        assert!(matches!(v.verify(&entry("agent:bot", 1060, "j2"), 1060), Ok(EntryVerdict::Duplicate(_))));
        assert!(matches!(v.verify(&entry("agent:bot", 1000, "j1"), 1001), Err(EntryRejection::Replay(_))));
    }

    #[test]
    fn tampering_the_window_and_the_addressee_are_rejected() {
        let v = verifier(None);
        let mut tampered = entry("agent:bot", 1000, "j1");
        tampered["directive"]["title"] = json!("Deploy now");
        assert!(matches!(v.verify(&tampered, 1000), Err(EntryRejection::Signature(SignatureError::Mismatch))));
        assert!(matches!(
            v.verify(&entry("agent:bot", 1000, "j1"), 1500),
            Err(EntryRejection::Signature(SignatureError::OutOfWindow { .. }))
        ));
        assert!(matches!(v.verify(&entry("agent:other", 1000, "j1"), 1000), Err(EntryRejection::NotForMe { .. })));
        assert!(matches!(
            v.verify(&json!({"receipt": {}, "signature": "x"}), 1000),
            Err(EntryRejection::UnknownKind(_))
        ));
        let unsigned = json!({"directive": entry("agent:bot", 1000, "j1")["directive"]});
        assert!(matches!(v.verify(&unsigned, 1000), Err(EntryRejection::BadShape(_))));
    }
}

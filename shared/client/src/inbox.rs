//! The agent mailbox (§8.7) from the agent's side: drain, verify each entry as §9.7 requires,
//! and acknowledge what was processed.
//!
//! Verification order: the entry's shape → rebuild the `inbound_signed_context` from the
//! directive received (recomputing `payload_sha256`) → the signature with any held key → `t`
//! inside the replay window → the `jti` replay cache → `to` names this agent. A redelivered
//! directive (new `jti`, same `id`) verifies again but is reported as a duplicate, so the agent
//! acts on each directive id once (§13.4).
//!
//! A drain that presents a session (`?session=`, §8.7.1) also receives `response` entries — the
//! answers to asks this session submitted. [`EntryVerifier::verify_drained`] verifies them over
//! the §9.8 response context, with `to` rebuilt from the session the drain presented.

use ma2h_protocol::wire::InboxAcked;
use std::time::Duration;

use ma2h_protocol::entries::{ResponseEntryContext, session_address};
use ma2h_protocol::inbound::{InboundContext, parse_signature_member};
use ma2h_protocol::schema::{self, SchemaKind};
use ma2h_protocol::signature::{self, SignatureError, VerifyingKey};
use serde_json::{Value, json};

use crate::replay::{ReplayCache, Seen};
use crate::session::query_value;
use crate::verify::{JTI_TTL_SLACK_SECS, VerifiedResponse};
use crate::{Client, ClientError};

/// The `resolution_id` under which a directive id is remembered in the replay cache.
const DIRECTIVE_MARK: &str = "directive";

/// Options of a drain (§8.7, §8.7.1).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct DrainOptions<'a> {
    /// `?max=`: at most this many entries (the Hub caps it at `inbound.max_batch`).
    pub max: Option<u32>,
    /// `?wait=`: long-poll up to this many seconds (the Hub caps it).
    pub wait: Option<u32>,
    /// `?session=`: present this session (§8.7.1) — renews its lease and adds its `message`,
    /// `response` and `receipt` entries to the directives. A session-less drain returns exactly
    /// the v0.4 shape.
    pub session: Option<&'a str>,
}

/// Options of an inbox ack (§8.7).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AckOptions<'a> {
    /// A short note for the human (directives and `message` entries, §14).
    pub note: Option<&'a str>,
    /// `?session=`: present this session — lease attribution only; the ack itself stays
    /// credential-scoped (§8.7).
    pub session: Option<&'a str>,
}

impl Client {
    /// `GET /v1/inbox` (§8.7): the raw entries, each `{"directive": …, "signature": …}`.
    pub async fn drain(&self, max: Option<u32>, wait: Option<u32>) -> Result<Vec<Value>, ClientError> {
        self.drain_with(&DrainOptions { max, wait, session: None }).await
    }

    /// `GET /v1/inbox[?max=…&wait=…&session=…]` (§8.7, §8.7.1): the raw entries, each one kind
    /// member (`directive`, `message`, `response`, `receipt`) plus its `signature`. Presenting a
    /// session that ended answers 410 and an unknown one 404: classify the error with
    /// [`crate::SessionError::from_presenting`].
    pub async fn drain_with(&self, opts: &DrainOptions<'_>) -> Result<Vec<Value>, ClientError> {
        let mut query = Vec::new();
        if let Some(m) = opts.max {
            query.push(format!("max={m}"));
        }
        if let Some(w) = opts.wait.filter(|w| *w > 0) {
            query.push(format!("wait={w}"));
        }
        if let Some(s) = opts.session {
            query.push(format!("session={}", query_value(s)));
        }
        let path = if query.is_empty() { "/v1/inbox".to_owned() } else { format!("/v1/inbox?{}", query.join("&")) };
        let timeout = Duration::from_secs(u64::from(opts.wait.unwrap_or(0)) + 30);
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
        self.ack_inbox_with(ids, &AckOptions { note, session: None }).await
    }

    /// `POST /v1/inbox/ack[?session=…]` (§8.7): acknowledge entries of any kind by ack key (a
    /// directive's or message's `id`, a response entry's `resolution_id`, a receipt's `id`).
    pub async fn ack_inbox_with(&self, ids: &[String], opts: &AckOptions<'_>) -> Result<u64, ClientError> {
        let mut body = json!({ "ids": ids });
        if let Some(n) = opts.note {
            body["note"] = json!(n);
        }
        let path = match opts.session {
            Some(s) => format!("/v1/inbox/ack?session={}", query_value(s)),
            None => "/v1/inbox/ack".to_owned(),
        };
        let bytes = serde_json::to_vec(&body).expect("a Value serializes");
        let reply = self.send(reqwest::Method::POST, &path, Some(&bytes), Duration::from_secs(30)).await?;
        match reply.status {
            200 => serde_json::from_value::<InboxAcked>(Self::json(&reply)?)
                .map(|a| a.acked)
                .map_err(|e| ClientError::Protocol(format!("not an inbox ack result: {e}"))),
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

/// A verified entry of a kind this client handles.
#[derive(Debug, Clone, PartialEq)]
pub enum VerifiedEntry {
    /// A §13.1 directive (§9.7).
    Directive(VerifiedDirective),
    /// A §6 Response delivered to the presenting session (§8.7.1, §9.8).
    Response(VerifiedResponse),
    /// Another agent's addressed message (§8.7.1, §9.8).
    Message(crate::inter_agent::VerifiedMessage),
    /// A bounce of mail this session sent (§8.7.1, §14.2).
    Receipt(crate::inter_agent::VerifiedReceipt),
}

impl VerifiedEntry {
    /// The key `POST /v1/inbox/ack` takes for it (§8.7.1): a directive's, message's or
    /// receipt's `id`, a response entry's `resolution_id`.
    pub fn ack_key(&self) -> &str {
        match self {
            Self::Directive(d) => &d.id,
            Self::Response(r) => &r.resolution_id,
            Self::Message(m) => &m.id,
            Self::Receipt(r) => &r.id,
        }
    }

    /// The entry's kind member.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Directive(_) => "directive",
            Self::Response(_) => "response",
            Self::Message(_) => "message",
            Self::Receipt(_) => "receipt",
        }
    }
}

/// Verification of a drained entry passed.
#[derive(Debug, Clone, PartialEq)]
pub enum DrainVerdict {
    /// First delivery: act on it.
    Accepted(VerifiedEntry),
    /// Authentic, but already accepted (a redelivered directive id, or an already-seen
    /// `(in_reply_to, resolution_id)` — also when the same answer came by push or `get --once`):
    /// do not act again; ack it.
    Duplicate(VerifiedEntry),
}

impl DrainVerdict {
    pub fn entry(&self) -> &VerifiedEntry {
        match self {
            Self::Accepted(e) | Self::Duplicate(e) => e,
        }
    }

    pub fn is_duplicate(&self) -> bool {
        matches!(self, Self::Duplicate(_))
    }
}

/// Verification failed: do not act, do not ack.
#[derive(Debug, thiserror::Error)]
pub enum EntryRejection {
    #[error("not a mailbox entry: {0}")]
    BadShape(String),
    #[error("entry kind `{0}` is not handled by this client")]
    UnknownKind(String),
    /// A `response` entry binds the session it was drained with (§9.8): without that session
    /// it cannot be verified.
    #[error("a `{0}` entry is verified against the presented session, and none was given")]
    NeedsSession(String),
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
        self.verify_directive(entry, None, now)
    }

    /// A directive entry; `to` must be this agent (`agent:<id>`) or, on a drain presenting
    /// `session`, that session's address (`agent:<id>#<session>`, a session-addressed directive).
    fn verify_directive(&self, entry: &Value, session: Option<&str>, now: i64) -> Result<EntryVerdict, EntryRejection> {
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
        let for_me = ctx.to == format!("agent:{}", self.agent_id)
            || session.is_some_and(|s| ctx.to == session_address(&self.agent_id, s));
        if !for_me {
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

impl EntryVerifier {
    /// Verify one entry of a drain that presented `session` (or none), at `now`: a directive as
    /// [`EntryVerifier::verify`] does (also accepting one addressed to the presented session,
    /// `agent:<agent_id>#<session>`), a `response` entry per §9.8 — schema, the
    /// `response_signed_context` rebuilt with `to = agent:<agent_id>#<session>` from this
    /// drain's own identity (never the wire) and `payload_sha256` recomputed, the signature
    /// with any held key, `t` inside the window, then the replay cache (`jti` replay, and the
    /// `(in_reply_to, resolution_id)` dedup shared with the §9.2 push verifier). Other kinds are
    /// [`EntryRejection::UnknownKind`].
    pub fn verify_drained(
        &self,
        entry: &Value,
        session: Option<&str>,
        now: i64,
    ) -> Result<DrainVerdict, EntryRejection> {
        if entry.get("directive").is_some() {
            return Ok(match self.verify_directive(entry, session, now)? {
                EntryVerdict::Accepted(d) => DrainVerdict::Accepted(VerifiedEntry::Directive(d)),
                EntryVerdict::Duplicate(d) => DrainVerdict::Duplicate(VerifiedEntry::Directive(d)),
            });
        }
        for kind in ["message", "receipt"] {
            if entry.get(kind).is_some() {
                let Some(session) = session else { return Err(EntryRejection::NeedsSession(kind.into())) };
                return if kind == "message" {
                    self.verify_message(entry, session, now)
                } else {
                    self.verify_receipt(entry, session, now)
                };
            }
        }
        let Some(response) = entry.get("response") else {
            let kind = entry.as_object().and_then(|o| o.keys().find(|k| *k != "signature").cloned());
            return Err(EntryRejection::UnknownKind(kind.unwrap_or_else(|| "none".into())));
        };
        let Some(session) = session else { return Err(EntryRejection::NeedsSession("response".into())) };
        schema::validate(SchemaKind::InboundMessage, entry).map_err(|e| EntryRejection::BadShape(e.to_string()))?;
        let member = entry.get("signature").and_then(Value::as_str).unwrap_or_default();
        let header = parse_signature_member(member)?;
        let ctx = ResponseEntryContext::for_drain(response, &self.agent_id, session, &header.jti, &header.t)
            .map_err(|k| EntryRejection::BadShape(format!("missing `{k}`")))?;
        signature::verify_canonical(&ctx.to_canonical(), &header.v1, &self.keys)?;
        signature::check_window(header.t_unix, now, self.window_secs)?;
        let verified = VerifiedResponse {
            body: response.clone(),
            in_reply_to: ctx.in_reply_to,
            resolution_id: ctx.resolution_id,
            resolution: ctx.resolution,
            jti: header.jti,
        };
        let entry = |v| VerifiedEntry::Response(v);
        let Some(cache) = &self.cache else { return Ok(DrainVerdict::Accepted(entry(verified))) };
        let expires = header.t_unix.max(now) + self.window_secs + JTI_TTL_SLACK_SECS;
        match cache.check_and_record(&verified.jti, expires, &verified.in_reply_to, &verified.resolution_id, now)? {
            Seen::Fresh => Ok(DrainVerdict::Accepted(entry(verified))),
            Seen::DuplicateResolution => Ok(DrainVerdict::Duplicate(entry(verified))),
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
    /// A `response` entry for `sess` signed over the §9.8 context.
    fn response_entry(sess: &str, t: i64, jti: &str, value: &str) -> Value {
        let r = json!({"ma2h_version": "0.5", "in_reply_to": "msg_01J0000000000000000000000A",
                       "resolution_id": "res_01J0000000000000000000000B", "resolution": "answered",
                       "agent": {"id": "bot", "run_id": "run_1"},
                       "response": {"value": value, "actor": "human:alice", "resolved_at": "2026-06-04T12:05:00Z"}});
        let ctx = ResponseEntryContext::for_drain(&r, "bot", sess, jti, &t.to_string()).unwrap();
        let v1 = sign_canonical(&ctx.to_canonical(), &SigningKey::Hmac(KEY.to_vec()));
        json!({"response": r, "signature": header_line(&t.to_string(), jti, &v1)})
    }

    #[test]
    fn a_response_entry_verifies_for_the_presented_session_and_dedups_on_its_resolution() {
        let dir = tempfile::tempdir().unwrap();
        let v = verifier(Some(ReplayCache::open(dir.path()).unwrap()));
        let e = response_entry("sess_a", 1000, "j1", "ship");
        let got = v.verify_drained(&e, Some("sess_a"), 1000).unwrap();
        let DrainVerdict::Accepted(VerifiedEntry::Response(r)) = &got else { panic!("{got:?}") };
        assert_eq!((r.resolution.as_str(), r.actor()), ("answered", Some("human:alice")));
        assert_eq!((got.entry().ack_key(), got.entry().kind()), ("res_01J0000000000000000000000B", "response"));
        // Redelivered with a fresh jti: authentic, but already acted on.
        assert!(
            v.verify_drained(&response_entry("sess_a", 1060, "j2", "ship"), Some("sess_a"), 1060)
                .unwrap()
                .is_duplicate()
        );
        assert!(matches!(v.verify_drained(&e, Some("sess_a"), 1001), Err(EntryRejection::Replay(_))));
        // The same answer already taken by pull (`get --once`) is a duplicate too.
        let other_dir = tempfile::tempdir().unwrap();
        let fresh = verifier(Some(ReplayCache::open(other_dir.path()).unwrap()));
        fresh
            .cache
            .as_ref()
            .unwrap()
            .mark_resolution("msg_01J0000000000000000000000A", "res_01J0000000000000000000000B", 900)
            .unwrap();
        assert!(fresh.verify_drained(&e, Some("sess_a"), 1000).unwrap().is_duplicate());
    }

    #[test]
    fn a_response_entry_fails_for_another_session_when_tampered_or_without_a_session() {
        let v = verifier(None);
        let e = response_entry("sess_a", 1000, "j1", "ship");
        assert!(matches!(
            v.verify_drained(&e, Some("sess_b"), 1000),
            Err(EntryRejection::Signature(SignatureError::Mismatch))
        ));
        let mut tampered = e.clone();
        tampered["response"]["response"]["value"] = json!("hold");
        assert!(matches!(
            v.verify_drained(&tampered, Some("sess_a"), 1000),
            Err(EntryRejection::Signature(SignatureError::Mismatch))
        ));
        assert!(matches!(
            v.verify_drained(&e, Some("sess_a"), 1500),
            Err(EntryRejection::Signature(SignatureError::OutOfWindow { .. }))
        ));
        assert!(matches!(v.verify_drained(&e, None, 1000), Err(EntryRejection::NeedsSession(_))));
        assert!(matches!(v.verify(&e, 1000), Err(EntryRejection::UnknownKind(k)) if k == "response"), "v0.4 path");
        // Directives go through the same call, with or without a session; a session-addressed
        // one is for this agent only on a drain presenting that session.
        let to_a = entry("agent:bot#sess_a", 1000, "j8");
        let d = v.verify_drained(&to_a, Some("sess_a"), 1000).unwrap();
        assert_eq!(d.entry().kind(), "directive");
        assert!(matches!(v.verify_drained(&to_a, Some("sess_b"), 1000), Err(EntryRejection::NotForMe { .. })));
        assert!(matches!(v.verify_drained(&to_a, None, 1000), Err(EntryRejection::NotForMe { .. })));
        assert!(matches!(v.verify(&to_a, 1000), Err(EntryRejection::NotForMe { .. })));
        let d = v.verify_drained(&entry("agent:bot", 1000, "j9"), Some("sess_a"), 1000).unwrap();
        assert_eq!((d.entry().kind(), d.entry().ack_key()), ("directive", "dir_01J0000000000000000000000A"));
        assert!(matches!(
            v.verify_drained(&json!({"telegram": {}, "signature": "x"}), Some("sess_a"), 1000),
            Err(EntryRejection::UnknownKind(k)) if k == "telegram"
        ));
    }
}

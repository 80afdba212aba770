//! Verifying the v0.5 inter-agent entry kinds on a session drain (§8.7.1, §9.8, §13.4):
//! `message` entries (another agent's notify/ask/task, addressed to this agent) and `receipt`
//! entries (a bounce of mail this session sent).
//!
//! A `message` is checked in the §13.4 order: shape → `message_signed_context` rebuilt from the
//! entry received (its `from`/`id`/`to`, `payload_sha256` recomputed) → signature → window →
//! addressee (`to` names this agent and, when session-qualified, the session this drain
//! presented — never a prior one) → dedup on `id`. A `receipt` binds the presenting session as its
//! `to` and dedups on `(in_reply_to, event)`.

use ma2h_protocol::entries::session_address;
use ma2h_protocol::inbound::parse_signature_member;
use ma2h_protocol::inter_agent::{Destination, MessageEntryContext, ReceiptEntryContext};
use ma2h_protocol::schema::{self, SchemaKind};
use ma2h_protocol::signature;
use serde_json::Value;

use crate::inbox::{DrainVerdict, EntryRejection, EntryVerifier, VerifiedEntry};
use crate::replay::Seen;
use crate::verify::JTI_TTL_SLACK_SECS;

/// A `message` entry whose signature and addressee verified.
#[derive(Debug, Clone, PartialEq)]
pub struct VerifiedMessage {
    /// The delivered form (§8.7.1).
    pub message: Value,
    /// Its ack key and dedup key (`msg_…`).
    pub id: String,
    /// The Hub-attested sender: `agent:<id>` or `agent:<id>#<sess>` — the only identity to trust.
    pub from: String,
    pub jti: String,
}

impl VerifiedMessage {
    /// The sender principal (`from` without its session qualifier).
    pub fn sender(&self) -> &str {
        let rest = self.from.strip_prefix("agent:").unwrap_or(&self.from);
        rest.split_once('#').map_or(rest, |(a, _)| a)
    }
    pub fn kind(&self) -> &str {
        self.message.get("type").and_then(Value::as_str).unwrap_or("notify")
    }
}

/// A bounce `receipt` whose signature verified.
#[derive(Debug, Clone, PartialEq)]
pub struct VerifiedReceipt {
    pub receipt: Value,
    /// Its ack key (`rcpt_…`).
    pub id: String,
    pub in_reply_to: String,
    pub jti: String,
}

fn header(entry: &Value) -> Result<ma2h_protocol::signature::ParsedHeader, EntryRejection> {
    schema::validate(SchemaKind::InboundMessage, entry).map_err(|e| EntryRejection::BadShape(e.to_string()))?;
    let member = entry.get("signature").and_then(Value::as_str).unwrap_or_default();
    Ok(parse_signature_member(member)?)
}

impl EntryVerifier {
    pub(crate) fn verify_message(
        &self,
        entry: &Value,
        session: &str,
        now: i64,
    ) -> Result<DrainVerdict, EntryRejection> {
        let message = &entry["message"];
        let h = header(entry)?;
        let ctx = MessageEntryContext::for_entry(message, &h.jti, &h.t)
            .map_err(|k| EntryRejection::BadShape(format!("missing `{k}`")))?;
        signature::verify_canonical(&ctx.to_canonical(), &h.v1, &self.keys)?;
        signature::check_window(h.t_unix, now, self.window_secs)?;
        // §13.4 (v0.5): `to` names this agent, and a session-qualified one this very session.
        let for_me = match Destination::parse(&ctx.to) {
            Some(d) => d.agent.as_str() == self.agent_id && d.session.as_deref().is_none_or(|s| s == session),
            None => false,
        };
        if !for_me {
            return Err(EntryRejection::NotForMe { to: ctx.to });
        }
        let verified = VerifiedMessage { message: message.clone(), id: ctx.id, from: ctx.from, jti: h.jti };
        self.dedup(VerifiedEntry::Message(verified.clone()), &verified.jti, h.t_unix, &verified.id, "message", now)
    }

    pub(crate) fn verify_receipt(
        &self,
        entry: &Value,
        session: &str,
        now: i64,
    ) -> Result<DrainVerdict, EntryRejection> {
        let receipt = &entry["receipt"];
        let h = header(entry)?;
        let to = session_address(&self.agent_id, session);
        let ctx = ReceiptEntryContext::for_receipt(receipt, &to, &h.jti, &h.t)
            .map_err(|k| EntryRejection::BadShape(format!("missing `{k}`")))?;
        signature::verify_canonical(&ctx.to_canonical(), &h.v1, &self.keys)?;
        signature::check_window(h.t_unix, now, self.window_secs)?;
        let id = receipt.get("id").and_then(Value::as_str).unwrap_or_default().to_owned();
        let event = receipt.get("event").and_then(Value::as_str).unwrap_or("bounced").to_owned();
        let verified = VerifiedReceipt { receipt: receipt.clone(), id, in_reply_to: ctx.in_reply_to, jti: h.jti };
        let key = verified.in_reply_to.clone();
        self.dedup(
            VerifiedEntry::Receipt(verified.clone()),
            &verified.jti,
            h.t_unix,
            &key,
            &format!("receipt:{event}"),
            now,
        )
    }

    fn dedup(
        &self,
        entry: VerifiedEntry,
        jti: &str,
        t_unix: i64,
        key: &str,
        mark: &str,
        now: i64,
    ) -> Result<DrainVerdict, EntryRejection> {
        let Some(cache) = &self.cache else { return Ok(DrainVerdict::Accepted(entry)) };
        let expires = t_unix.max(now) + self.window_secs + JTI_TTL_SLACK_SECS;
        match cache.check_and_record(jti, expires, key, mark, now)? {
            Seen::Fresh => Ok(DrainVerdict::Accepted(entry)),
            Seen::DuplicateResolution => Ok(DrainVerdict::Duplicate(entry)),
            Seen::ReplayedJti => Err(EntryRejection::Replay(jti.to_owned())),
        }
    }
}

#[cfg(test)]
mod tests {
    use ma2h_protocol::signature::{SigningKey, VerifyingKey, header_line, sign_canonical};
    use serde_json::json;

    use super::*;

    const KEY: &[u8] = b"whsec_test";

    fn message(to: &str, t: i64, jti: &str) -> Value {
        let m = json!({"ma2h_version": "0.5", "type": "ask", "id": "msg_01J0000000000000000000000A",
                       "from": "agent:boss#sess_b", "to": to, "created_at": "2026-06-04T12:00:00Z",
                       "agent": {"id": "boss", "run_id": "r", "runtime": "cli", "session": "sess_b"}, "title": "Restart?",
                       "idempotency_key": "k", "request": {"mode": "confirm"}});
        let ctx = MessageEntryContext::for_entry(&m, jti, &t.to_string()).unwrap();
        let v1 = sign_canonical(&ctx.to_canonical(), &SigningKey::Hmac(KEY.to_vec()));
        json!({"message": m, "signature": header_line(&t.to_string(), jti, &v1)})
    }

    fn verifier() -> EntryVerifier {
        EntryVerifier::new("bot", vec![VerifyingKey::Hmac(KEY.to_vec())], None)
    }

    #[test]
    fn a_message_verifies_only_for_its_addressee_and_its_current_session() {
        let v = verifier();
        let got = v.verify_drained(&message("agent:bot#sess_a", 1000, "j1"), Some("sess_a"), 1000).unwrap();
        let VerifiedEntry::Message(m) = got.entry() else { panic!("{got:?}") };
        assert_eq!((m.sender(), m.kind(), got.entry().ack_key()), ("boss", "ask", "msg_01J0000000000000000000000A"));
        assert!(
            v.verify_drained(&message("agent:bot", 1000, "j2"), Some("sess_z"), 1000).is_ok(),
            "principal-addressed"
        );
        assert!(
            matches!(
                v.verify_drained(&message("agent:bot#sess_a", 1000, "j3"), Some("sess_old"), 1000),
                Err(EntryRejection::NotForMe { .. })
            ),
            "a prior session's mail is refused"
        );
        assert!(matches!(
            v.verify_drained(&message("agent:other", 1000, "j4"), Some("sess_a"), 1000),
            Err(EntryRejection::NotForMe { .. })
        ));
        let mut tampered = message("agent:bot", 1000, "j5");
        tampered["message"]["from"] = json!("agent:rogue#sess_x");
        assert!(matches!(v.verify_drained(&tampered, Some("sess_a"), 1000), Err(EntryRejection::Signature(_))));
        let mut injected = message("agent:bot", 1000, "j6");
        injected["message"]["state"] = json!({"x": 1});
        assert!(
            matches!(v.verify_drained(&injected, Some("sess_a"), 1000), Err(EntryRejection::BadShape(_))),
            "shape gate"
        );
        assert!(matches!(
            v.verify_drained(&message("agent:bot", 1000, "j7"), None, 1000),
            Err(EntryRejection::NeedsSession(_))
        ));
    }

    #[test]
    fn a_receipt_verifies_for_the_presenting_session_only() {
        let r = json!({"ma2h_version": "0.5", "type": "receipt", "id": "rcpt_01J0000000000000000000000C",
                       "in_reply_to": "msg_01J0000000000000000000000A", "event": "bounced", "prior": "queued",
                       "at": "2026-06-04T12:00:00Z", "session": "sess_w", "to": "agent:bot#sess_a"});
        let ctx = ReceiptEntryContext::for_receipt(&r, "agent:bot#sess_a", "j1", "1000").unwrap();
        let v1 = sign_canonical(&ctx.to_canonical(), &SigningKey::Hmac(KEY.to_vec()));
        let e = json!({"receipt": r, "signature": header_line("1000", "j1", &v1)});
        let got = verifier().verify_drained(&e, Some("sess_a"), 1000).unwrap();
        assert_eq!((got.entry().kind(), got.entry().ack_key()), ("receipt", "rcpt_01J0000000000000000000000C"));
        assert!(matches!(verifier().verify_drained(&e, Some("sess_b"), 1000), Err(EntryRejection::Signature(_))));
    }
}

//! The v0.5 inter-agent leg, pure parts: the `to` address grammar (§4), the delivered form of an
//! addressed message (§8.7.1), the bounce `receipt` body, and the §9.8 signed contexts of the
//! `message` and `receipt` entries.
//!
//! ```text
//! message_signed_context = { from, id, jti, ma2h_version, payload_sha256, t, to }
//! receipt_signed_context = { in_reply_to, jti, ma2h_version, receipt_sha256, t, to }
//! ```
//!
//! A message's `payload_sha256` digests `{"message": <content>}` where the content holds exactly
//! the delivered entry's present fields among [`MESSAGE_CONTENT_FIELDS`]; a receipt's
//! `receipt_sha256` digests the fixed six-key wrapper of [`RECEIPT_DIGEST_FIELDS`] with absent
//! members as `null`. Both are recomputed by the verifier from what it received.

use crate::wire::{ReceiptEntry, ReceiptEvent, ReceiptType, TrackState};
use serde_json::{Map, Value};

use crate::ids::AgentId;
use crate::jcs;

/// §9.8: the instruction surface of a `message` entry — bound through `payload_sha256`.
pub const MESSAGE_CONTENT_FIELDS: [&str; 9] =
    ["type", "title", "body", "priority", "tags", "context", "request", "action", "sensitive"];

/// §9.8: the receipt digest's fixed key set.
pub const RECEIPT_DIGEST_FIELDS: [&str; 6] = ["at", "event", "id", "in_reply_to", "prior", "session"];

/// A parsed §4 `to`: `agent:<id>` (principal-addressed) or `agent:<id>#<session>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Destination {
    pub agent: AgentId,
    /// The session segment as written (`sess_…`); whether it names a session is the Hub's call.
    pub session: Option<String>,
}

impl Destination {
    /// The first `#` ends the agent id; the remainder must be a `sess_` segment (§4).
    pub fn parse(to: &str) -> Option<Self> {
        let rest = to.strip_prefix("agent:")?;
        let (agent, session) = match rest.split_once('#') {
            Some((a, s)) if s.len() > "sess_".len() && s.starts_with("sess_") && !s.contains('#') => {
                (a, Some(s.to_owned()))
            }
            Some(_) => return None,
            None => (rest, None),
        };
        Some(Self { agent: AgentId::parse(agent)?, session })
    }

    /// The address, as a sender writes it.
    pub fn address(&self) -> String {
        match &self.session {
            Some(s) => format!("agent:{}#{s}", self.agent),
            None => format!("agent:{}", self.agent),
        }
    }
}

/// The §4 members a delivered `message` may carry. Anything else the sender added (unknown
/// members are tolerated on submit, §10) is unsigned and is not passed on.
pub const DELIVERED_FIELDS: [&str; 15] = [
    "ma2h_version",
    "type",
    "created_at",
    "agent",
    "to",
    "title",
    "body",
    "priority",
    "tags",
    "context",
    "idempotency_key",
    "expires_at",
    "sensitive",
    "request",
    "action",
];

/// The §8.7.1 delivered form: the accepted envelope's [`DELIVERED_FIELDS`] plus Hub-assigned
/// `id` and attested `from` — so the submitter's machinery (`state`, `client_ref`,
/// `request.callback`, `action.callback`) never leaves. `idempotency_key` and the advisory
/// `agent` descriptor stay.
pub fn delivered_message(envelope: &Map<String, Value>, id: &str, from: &str) -> Value {
    let mut out: Map<String, Value> = envelope
        .iter()
        .filter(|(k, _)| DELIVERED_FIELDS.contains(&k.as_str()))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    for block in ["request", "action"] {
        if let Some(Value::Object(b)) = out.get_mut(block) {
            b.remove("callback");
        }
    }
    out.insert("id".into(), Value::String(id.to_owned()));
    out.insert("from".into(), Value::String(from.to_owned()));
    Value::Object(out)
}

/// The bounce receipt (§8.7.1): `prior` is `queued` (never seen) or `delivered` (seen, orphaned).
pub fn bounce_receipt(id: &str, in_reply_to: &str, prior: TrackState, at: &str, session: &str, to: &str) -> Value {
    let receipt = ReceiptEntry {
        ma2h_version: crate::version::HUB_VERSION.to_owned(),
        kind: ReceiptType::Receipt,
        id: id.to_owned(),
        in_reply_to: in_reply_to.to_owned(),
        event: ReceiptEvent::Bounced,
        prior,
        at: at.to_owned(),
        session: session.to_owned(),
        to: to.to_owned(),
    };
    serde_json::to_value(receipt).unwrap_or(Value::Null)
}

/// The §9.8 `message_signed_context` has exactly §9.7's key set — `{from, id, jti, ma2h_version,
/// payload_sha256, t, to}` — so it is the inbound context type, built with the message digest.
pub type MessageEntryContext = crate::inbound::InboundContext;

impl crate::inbound::InboundContext {
    /// Built from a delivered `message` entry itself — by the Hub to sign, by the addressee to
    /// verify (the digest recomputed from what it received). `Err` names a missing bound member.
    pub fn for_entry(entry: &Value, jti: &str, t: &str) -> Result<Self, &'static str> {
        let member = |name: &'static str| entry.get(name).and_then(Value::as_str).map(str::to_owned).ok_or(name);
        Ok(Self {
            from: member("from")?,
            id: member("id")?,
            jti: jti.to_owned(),
            ma2h_version: member("ma2h_version")?,
            payload_sha256: message_sha256(entry),
            t: t.to_owned(),
            to: member("to")?,
        })
    }
}

/// The canonical `{"message": <content>}` wrapper a `message` entry's digest covers.
pub fn message_content(entry: &Value) -> Value {
    let content: Map<String, Value> =
        MESSAGE_CONTENT_FIELDS.iter().filter_map(|k| entry.get(*k).map(|v| ((*k).to_owned(), v.clone()))).collect();
    serde_json::json!({ "message": content })
}

/// Lowercase-hex SHA-256 of the JCS of [`message_content`].
pub fn message_sha256(entry: &Value) -> String {
    jcs::canonical_sha256(&message_content(entry))
}

/// The §9.8 `receipt_signed_context`; `to` is the sender session the receipt is delivered to,
/// rebuilt by the verifier from its own drain identity.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceiptEntryContext {
    pub in_reply_to: String,
    pub jti: String,
    pub ma2h_version: String,
    pub receipt_sha256: String,
    pub t: String,
    pub to: String,
}

impl ReceiptEntryContext {
    pub fn for_receipt(receipt: &Value, to: &str, jti: &str, t: &str) -> Result<Self, &'static str> {
        let member = |name: &'static str| receipt.get(name).and_then(Value::as_str).map(str::to_owned).ok_or(name);
        Ok(Self {
            in_reply_to: member("in_reply_to")?,
            jti: jti.to_owned(),
            ma2h_version: member("ma2h_version")?,
            receipt_sha256: receipt_sha256(receipt),
            t: t.to_owned(),
            to: to.to_owned(),
        })
    }

    pub fn to_canonical(&self) -> Vec<u8> {
        let mut m = Map::with_capacity(6);
        for (k, v) in [
            ("in_reply_to", &self.in_reply_to),
            ("jti", &self.jti),
            ("ma2h_version", &self.ma2h_version),
            ("receipt_sha256", &self.receipt_sha256),
            ("t", &self.t),
            ("to", &self.to),
        ] {
            m.insert(k.into(), Value::String(v.clone()));
        }
        jcs::canonicalize(&Value::Object(m))
    }
}

/// SHA-256 of the JCS of the six-key wrapper, absent members as `null` (§9.8).
pub fn receipt_sha256(receipt: &Value) -> String {
    let wrapper: Map<String, Value> = RECEIPT_DIGEST_FIELDS
        .iter()
        .map(|k| ((*k).to_owned(), receipt.get(*k).cloned().unwrap_or(Value::Null)))
        .collect();
    jcs::canonical_sha256(&Value::Object(wrapper))
}

#[cfg(test)]
#[path = "inter_agent_tests.rs"]
mod tests;

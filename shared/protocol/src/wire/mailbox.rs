//! §8.7, §13–§15: the agent mailbox as read over HTTP — drain items of every kind, the inbox
//! ack, the stream's close frame, the entries the Hub mints (directive, receipt), the operator's
//! directive track, presence and the operator stop.

use std::fmt;

use serde::de::{self, MapAccess, Visitor};
use serde::ser::SerializeMap;
use serde::{Deserialize, Deserializer, Serialize, Serializer};
use serde_json::Value;

use super::messages::{AckEnvelope, Reach, TrackState};
use crate::envelope::Priority;
use crate::time::{self, Timestamp};

/// The §8.7.1 entry kinds: the member name of a drain item.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum EntryKind {
    Directive,
    Message,
    Response,
    Receipt,
}

impl EntryKind {
    pub const ALL: [Self; 4] = [Self::Directive, Self::Message, Self::Response, Self::Receipt];

    pub fn as_str(self) -> &'static str {
        match self {
            Self::Directive => "directive",
            Self::Message => "message",
            Self::Response => "response",
            Self::Receipt => "receipt",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|k| k.as_str() == s)
    }

    /// §8.7.1 pinned ack key: `resolution_id` for a response, `id` for every other kind.
    pub fn ack_member(self) -> &'static str {
        if self == Self::Response { "resolution_id" } else { "id" }
    }
}

/// One drained entry: `{<kind>: payload, "signature": "MA2H-Signature: …"}` — the kind's member
/// first. The payload is the entry as stored, verbatim (its signature covers what was sent).
#[derive(Debug, Clone, PartialEq)]
pub struct MailboxItem {
    pub kind: EntryKind,
    pub payload: Value,
    pub signature: String,
}

impl MailboxItem {
    /// The id an ack names for this entry (§8.7.1), when the payload carries it.
    pub fn ack_key(&self) -> Option<&str> {
        self.payload.get(self.kind.ack_member()).and_then(Value::as_str)
    }
}

impl Serialize for MailboxItem {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(2))?;
        m.serialize_entry(self.kind.as_str(), &self.payload)?;
        m.serialize_entry("signature", &self.signature)?;
        m.end()
    }
}

impl<'de> Deserialize<'de> for MailboxItem {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct Item;
        impl<'de> Visitor<'de> for Item {
            type Value = MailboxItem;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a drain item: one of directive/message/response/receipt and a signature")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<MailboxItem, A::Error> {
                let (mut entry, mut signature) = (None, None);
                while let Some(key) = map.next_key::<String>()? {
                    match (key.as_str(), EntryKind::parse(&key)) {
                        ("signature", _) => signature = Some(map.next_value::<String>()?),
                        (_, Some(kind)) if entry.is_none() => entry = Some((kind, map.next_value::<Value>()?)),
                        (_, Some(_)) => return Err(de::Error::custom("a drain item carries exactly one entry")),
                        // §10: members this version does not know are ignored.
                        _ => drop(map.next_value::<de::IgnoredAny>()?),
                    }
                }
                let (kind, payload) = entry.ok_or_else(|| de::Error::custom("a drain item carries no entry"))?;
                let signature = signature.ok_or_else(|| de::Error::missing_field("signature"))?;
                Ok(MailboxItem { kind, payload, signature })
            }
        }
        d.deserialize_map(Item)
    }
}

/// 200 to `GET /v1/inbox`: the claimed entries, oldest first (`[]` when the wait ran out).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DrainBody {
    pub messages: Vec<MailboxItem>,
}

/// 200 to `POST /v1/inbox/ack`: how many of the named entries this ack closed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct InboxAcked {
    pub acked: u64,
}

/// The `data` of a stream's `close` event: reconnect, or not and why (a §8.5 code).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StreamClose {
    pub reconnect: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
}

/// The `type` of a receipt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReceiptType {
    Receipt,
}

/// What a receipt reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ReceiptEvent {
    Bounced,
}

/// §8.7.1 bounce receipt: the addressed message `in_reply_to` never reached an ack before its
/// destination `session` ended; `prior` is what it had reached (`queued` or `delivered`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReceiptEntry {
    pub ma2h_version: String,
    #[serde(rename = "type")]
    pub kind: ReceiptType,
    pub id: String,
    pub in_reply_to: String,
    pub event: ReceiptEvent,
    pub prior: TrackState,
    /// Kept as written: bound by the signature (§9.8).
    pub at: String,
    pub session: String,
    pub to: String,
}

/// The `type` of a directive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum DirectiveType {
    Directive,
}

/// §13.1 directive as delivered. The Hub writes the author's members as given (then checks them
/// against the directive schema), so it builds the entry as a map; agents read it through this.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DirectiveEntry {
    pub ma2h_version: String,
    #[serde(rename = "type")]
    pub kind: DirectiveType,
    pub id: String,
    /// `human:<id>`, attested.
    pub from: String,
    pub to: String,
    pub created_at: String,
    pub title: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<Priority>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tags: Option<Vec<String>>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub context: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sensitive: Option<bool>,
}

/// The operator's view of one directive (`POST`/`GET /v1/operator/directives…`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct DirectiveTrack {
    pub id: String,
    pub agent_id: String,
    /// The delivered form, as stored.
    pub directive: Value,
    pub delivery: DirectiveDelivery,
}

/// §14.2 track of a directive, with what the operator needs beyond §8.2's `mailbox`: when it
/// bounced, the ack itself, and how many times it was handed out.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DirectiveDelivery {
    pub state: TrackState,
    #[serde(default, with = "time::wire_opt", skip_serializing_if = "Option::is_none")]
    pub delivered_at: Option<Timestamp>,
    #[serde(default, with = "time::wire_opt", skip_serializing_if = "Option::is_none")]
    pub bounced_at: Option<Timestamp>,
    #[serde(default, with = "time::wire_opt", skip_serializing_if = "Option::is_none")]
    pub acknowledged_at: Option<Timestamp>,
    /// The agent's ack; its `note` is untrusted agent text.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ack: Option<AckEnvelope>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prior: Option<TrackState>,
    pub deliveries: u32,
}

/// §15.3 `GET /v1/agents/{id}/presence`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Presence {
    pub agent_id: String,
    pub state: Reach,
    pub freshness_seconds: u64,
    /// Absent exactly when `unknown`.
    #[serde(default, with = "time::wire_opt", skip_serializing_if = "Option::is_none")]
    pub last_seen: Option<Timestamp>,
}

/// §16.4.1 `/v1/agents/{id}/stop`: `{agent_id, stopped: false}`, or who stopped it and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StopStatus {
    pub agent_id: String,
    pub stopped: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stopped_by: Option<String>,
    #[serde(default, with = "time::wire_opt", skip_serializing_if = "Option::is_none")]
    pub stopped_at: Option<Timestamp>,
    /// The session whose close recorded the stop, when there was one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
}

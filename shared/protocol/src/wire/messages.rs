//! §8.1–§8.4 and §8.8: what an agent reads about its own messages — the submit ack, the tracks
//! added to a message read, cancel and resolve results, and the §14.1 ack.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::lifecycle::Status;
use crate::time::{self, Timestamp};

/// 202 to `POST /v1/messages` (closed: exactly the submit-ack schema's members).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubmitAck {
    pub id: String,
    pub status: Status,
    pub poll_url: String,
    /// Where a human reviews it (always written by this Hub; optional in the schema).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_url: Option<String>,
    /// §8.1 (v0.5): the reachability snapshot every addressed ack carries (never otherwise).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub destination: Option<Reachability>,
}

/// §15.1 reachability of a destination (also a presence `state`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Reach {
    Online,
    Offline,
    Unknown,
}

impl Reach {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Online => "online",
            Self::Offline => "offline",
            Self::Unknown => "unknown",
        }
    }
}

/// §8.1 `destination`: `{state, last_seen?}` (`last_seen` absent exactly when `unknown`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Reachability {
    pub state: Reach,
    #[serde(default, with = "time::wire_opt", skip_serializing_if = "Option::is_none")]
    pub last_seen: Option<Timestamp>,
}

impl Reachability {
    pub fn unknown() -> Self {
        Self { state: Reach::Unknown, last_seen: None }
    }
}

/// §14.2 states of a mailbox entry's delivery track.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum TrackState {
    Queued,
    Delivered,
    Acknowledged,
    Expired,
    Bounced,
}

impl TrackState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Queued => "queued",
            Self::Delivered => "delivered",
            Self::Acknowledged => "acknowledged",
            Self::Expired => "expired",
            Self::Bounced => "bounced",
        }
    }
}

/// §8.2 `mailbox` of an addressed message: `{state, delivered_at?, acknowledged_at?, prior?}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MailboxTrack {
    pub state: TrackState,
    #[serde(default, with = "time::wire_opt", skip_serializing_if = "Option::is_none")]
    pub delivered_at: Option<Timestamp>,
    #[serde(default, with = "time::wire_opt", skip_serializing_if = "Option::is_none")]
    pub acknowledged_at: Option<Timestamp>,
    /// §14.2: what a bounced entry had reached (`queued` or `delivered`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prior: Option<TrackState>,
}

/// §8.2 `delivery` states of a Response to its agent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum DeliveryState {
    #[serde(rename = "delivered-to-agent")]
    DeliveredToAgent,
    #[serde(rename = "acknowledged")]
    Acknowledged,
    #[serde(rename = "expired")]
    Expired,
}

/// §8.2 `delivery`: how the Response reached its agent, and the agent's ack.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResponseDelivery {
    pub state: DeliveryState,
    #[serde(with = "time::wire")]
    pub delivered_at: Timestamp,
    #[serde(default, with = "time::wire_opt", skip_serializing_if = "Option::is_none")]
    pub acknowledged_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ack: Option<AckEnvelope>,
}

/// The `type` of an ack.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AckType {
    Ack,
}

/// §14.1 ack: returned by `POST /v1/messages/{id}/ack` and inside the tracks it closes.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AckEnvelope {
    pub ma2h_version: String,
    #[serde(rename = "type")]
    pub kind: AckType,
    pub in_reply_to: String,
    /// `agent:<id>`, attested by the Hub.
    pub by: String,
    #[serde(with = "time::wire")]
    pub acked_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub note: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution_id: Option<String>,
}

/// Where a push obligation stands (a Hub extension on the message read and the listing).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PushStatus {
    /// Waiting for its next attempt (or being attempted).
    Pending,
    /// A 2xx was received: the response track reads `delivered-to-agent` (§14.2).
    Delivered,
    /// Retries exhausted, a 4xx, or refused by the egress guard. The Response stays pullable.
    Failed,
}

impl PushStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "pending",
            Self::Delivered => "delivered",
            Self::Failed => "failed",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "pending" => Some(Self::Pending),
            "delivered" => Some(Self::Delivered),
            "failed" => Some(Self::Failed),
            _ => None,
        }
    }
}

/// `push`: the push track. `last_error` is the Hub's own words (an HTTP status, a timeout, an
/// egress refusal), never the receiver's body. Unset members are written as `null`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushTrackView {
    pub status: PushStatus,
    pub attempts: u32,
    #[serde(default)]
    pub last_error: Option<String>,
    #[serde(default, with = "time::wire_opt")]
    pub next_attempt_at: Option<Timestamp>,
    #[serde(default, with = "time::wire_opt")]
    pub delivered_at: Option<Timestamp>,
}

/// What a message read (§8.2) adds to the accepted envelope. The envelope keeps the
/// submitter's member order, so these are merged into it ([`MessageTracks::merge_into`]) rather
/// than the envelope being flattened into a struct.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct MessageTracks {
    pub id: String,
    pub status: Status,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mailbox: Option<MailboxTrack>,
    /// The stored §6 Response, as stored (see [`super::Response`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<Value>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push: Option<PushTrackView>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub delivery: Option<ResponseDelivery>,
}

impl MessageTracks {
    /// Write these members into `envelope`: a member the submitter also sent is replaced where
    /// it stands, a new one is appended.
    pub fn merge_into(self, envelope: &mut Map<String, Value>) {
        if let Ok(Value::Object(tracks)) = serde_json::to_value(self) {
            for (k, v) in tracks {
                envelope.insert(k, v);
            }
        }
    }
}

/// 200 to `POST /v1/messages/{id}/cancel` (and a repeat cancel): `{id, status, response}`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CancelResult {
    pub id: String,
    pub status: Status,
    /// The stored §6 Response, as stored; `null` only if a record somehow has none.
    #[serde(default)]
    pub response: Option<Value>,
}

/// 200 to `POST /v1/messages/{id}/resolve`: `{id, status, resolution_id}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResolveResult {
    pub id: String,
    pub status: Status,
    pub resolution_id: String,
}

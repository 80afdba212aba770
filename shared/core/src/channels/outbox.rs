//! The notification outbox (issue 20): one durable item per announced ask/task, holding a step
//! per channel message owed — the announcement, a reminder, an escalation, the outcome update —
//! and the store port that keeps it.
//!
//! **Durability.** The item is written *before* its message (the same order as the push job's
//! announcement to SQS and as the DynamoDB insert's claim-then-message writes): a message that
//! committed always has its item, and an item whose message never committed is found orphaned by
//! the worker (message missing past [`ORPHAN_GRACE`]) and retired. While the message is open
//! and a channel holds a post to update, the item stays due no later than the message's
//! `expires_at` ([`WATCH_RECHECK`] when it has none), so a terminal's lost wake-up delays an
//! outcome update — it never loses one. A notification failure never touches the message.

use async_trait::async_trait;
use ma2h_protocol::ids::{AccountId, MessageId};
use ma2h_protocol::time::Timestamp;
use serde::{Deserialize, Serialize};

use crate::kernel::error::StoreError;

/// How long an item may wait for its message to commit before it is retired as an orphan.
pub const ORPHAN_GRACE: chrono::Duration = chrono::Duration::minutes(2);
/// How often an open message without `expires_at` is re-checked for its outcome.
pub const WATCH_RECHECK: chrono::Duration = chrono::Duration::hours(1);
/// Attempts per step before it is marked failed (visible on the message page).
pub const MAX_ATTEMPTS: u32 = 8;

/// The outbox item of one message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    pub account: AccountId,
    pub message_id: MessageId,
    /// Bumped by every write (claim, save, wake): the save is a compare-and-set on it.
    pub version: u64,
    pub created_at: Timestamp,
    /// When the worker should next look at the item (an index key); `None` when nothing is left.
    pub next_due: Option<Timestamp>,
    /// The item may be deleted after this instant (set once nothing is left).
    pub retain_until: Option<Timestamp>,
    /// The route that matched (shown on the message page).
    pub route: String,
    pub steps: Vec<Step>,
}

impl Notification {
    /// The earliest due time of a pending step.
    pub fn earliest_pending(&self) -> Option<Timestamp> {
        self.steps.iter().filter(|s| s.status == StepStatus::Pending).map(|s| s.due_at).min()
    }

    /// The steps as JSON text (how both stores keep them).
    pub fn steps_json(&self) -> String {
        serde_json::to_string(&self.steps).unwrap_or_else(|_| "[]".into())
    }

    pub fn parse_steps(text: &str) -> Result<Vec<Step>, StoreError> {
        serde_json::from_str(text).map_err(|e| StoreError::Corrupt(format!("notification steps: {e}")))
    }
}

/// One channel message owed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Step {
    /// The channel id (in the account's [`crate::channels::config::ChannelsConfig`]).
    pub channel: String,
    /// An email channel's recipient (the operator a mail — and its answer links — is for); on a
    /// ladder step, the operator that rung reaches.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recipient: Option<String>,
    /// A ladder step's rung (0 = the first). A rung is first one step without a channel (`""`),
    /// turned into one step per channel that reaches its operator when it falls due
    /// ([`crate::channels::ladder`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rung: Option<u8>,
    pub kind: StepKind,
    #[serde(with = "ms")]
    pub due_at: Timestamp,
    pub status: StepStatus,
    #[serde(default)]
    pub attempts: u32,
    /// The Hub's own words (an HTTP status, Slack's error code) — never a receiver's body.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none", with = "ms_opt")]
    pub done_at: Option<Timestamp>,
    /// What the channel gave back to update the post later (Slack: `{channel} {ts}`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub external_ref: Option<String>,
}

impl Step {
    pub fn pending(channel: &str, kind: StepKind, due_at: Timestamp) -> Self {
        Self {
            channel: channel.to_owned(),
            recipient: None,
            rung: None,
            kind,
            due_at,
            status: StepStatus::Pending,
            attempts: 0,
            last_error: None,
            done_at: None,
            external_ref: None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StepKind {
    /// The announcement of a new ask/task.
    Created,
    /// Still unanswered after the route's `remind_after_minutes`.
    Reminder,
    /// Near `expires_at`: told to the route's escalation channels.
    Escalated,
    /// The message reached a terminal: update the post in place (Slack) / send the event (webhook).
    Outcome,
    /// A rung of the route's on-call ladder: one operator, reached by mail, a Slack mention or
    /// a webhook event naming them.
    Ladder,
}

impl StepKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Created => "created",
            Self::Reminder => "reminder",
            Self::Escalated => "escalated",
            Self::Outcome => "outcome",
            Self::Ladder => "ladder",
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StepStatus {
    Pending,
    Sent,
    /// Retries exhausted or refused (4xx, egress guard, a channel no longer configured).
    Failed,
    /// No longer owed: the message was answered before a reminder/escalation fell due, or a
    /// ladder rung was skipped (its operator away or offline; `last_error` says which).
    Cancelled,
}

mod ms {
    use ma2h_protocol::time::Timestamp;
    use serde::{Deserialize, Deserializer, Serializer};
    pub fn serialize<S: Serializer>(t: &Timestamp, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_i64(t.timestamp_millis())
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Timestamp, D::Error> {
        i64::deserialize(d).map(ma2h_protocol::time::from_millis)
    }
}

mod ms_opt {
    use ma2h_protocol::time::Timestamp;
    use serde::{Deserialize, Deserializer, Serializer};
    #[allow(clippy::ref_option)] // serde's `with` hands the field by reference
    pub fn serialize<S: Serializer>(t: &Option<Timestamp>, s: S) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => s.serialize_some(&t.timestamp_millis()),
            None => s.serialize_none(),
        }
    }
    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Timestamp>, D::Error> {
        Option::<i64>::deserialize(d).map(|o| o.map(ma2h_protocol::time::from_millis))
    }
}

/// The outbox port.
#[async_trait]
pub trait NotificationStore: Send + Sync + 'static {
    /// Write `item` iff the message has none yet; `false` if one exists (nothing written).
    async fn create_notification(&self, item: &Notification) -> Result<bool, StoreError>;

    async fn get_notification(&self, account: &AccountId, id: &MessageId) -> Result<Option<Notification>, StoreError>;

    /// Items whose `next_due` is at or before `now`, oldest first, read from an index on
    /// `next_due` (never a scan). Nothing is changed: [`Self::claim_notification`] decides.
    async fn due_notifications(&self, now: Timestamp, limit: usize) -> Result<Vec<(AccountId, MessageId)>, StoreError>;

    /// Iff the item's `next_due` is at or before `now` and no lease is running: lease it until
    /// `lease_until` (also its `next_due`) and bump the version in one conditional write, and
    /// return the item as written — so two workers never work one item at once (a wake-up does
    /// not end a lease), and a worker that dies leaves it due again at the lease's end.
    async fn claim_notification(
        &self,
        account: &AccountId,
        id: &MessageId,
        now: Timestamp,
        lease_until: Timestamp,
    ) -> Result<Option<Notification>, StoreError>;

    /// Replace the item iff its stored version is `expected` (`item.version` is the new one); the
    /// lease ends.
    async fn save_notification(&self, item: &Notification, expected: u64) -> Result<bool, StoreError>;

    /// A terminal was committed: make an existing item due at `at` (bumping its version), leaving
    /// a running lease alone. Nothing happens when the message has no item.
    async fn wake_notification(&self, account: &AccountId, id: &MessageId, at: Timestamp) -> Result<(), StoreError>;

    /// Delete up to `limit` items whose `retain_until` is at or before `now` (a store with a
    /// native TTL may leave it to the TTL and return 0).
    async fn purge_notifications(&self, now: Timestamp, limit: usize) -> Result<usize, StoreError>;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_round_trip_through_their_stored_text_with_millisecond_times() {
        let at = ma2h_protocol::time::from_millis(1_764_000_000_123);
        let mut sent = Step::pending("ops", StepKind::Created, at);
        sent.status = StepStatus::Sent;
        sent.done_at = Some(at);
        sent.external_ref = Some("C1 1700000000.000100".into());
        let item = Notification {
            account: AccountId::parse("acme").unwrap(),
            message_id: MessageId::from_parts(1, 2),
            version: 1,
            created_at: at,
            next_due: Some(at),
            retain_until: None,
            route: "r".into(),
            steps: vec![sent, Step::pending("ops", StepKind::Reminder, at + chrono::Duration::minutes(5))],
        };
        assert_eq!(Notification::parse_steps(&item.steps_json()).unwrap(), item.steps);
        assert_eq!(item.earliest_pending(), Some(at + chrono::Duration::minutes(5)));
        assert!(Notification::parse_steps("{").is_err());
    }
}

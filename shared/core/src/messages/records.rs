//! What the stores persist. Adapters only translate these to rows/items and back.

use ma2h_protocol::envelope::{Envelope, MessageType, Priority};
use ma2h_protocol::ids::{AccountId, AgentId, MessageId, ResolutionId};
use ma2h_protocol::lifecycle::Status;
use ma2h_protocol::time::Timestamp;
use serde_json::Value;

/// One accepted message and, once terminal, its immutable Response.
#[derive(Debug, Clone, PartialEq)]
pub struct MessageRecord {
    pub id: MessageId,
    pub account: AccountId,
    /// The submitting principal (§9.1: poll, cancel and callback are bound to it).
    pub agent_id: AgentId,
    pub kind: MessageType,
    pub status: Status,
    pub priority: Priority,
    pub title: String,
    /// The envelope as accepted (confirm options synthesized), returned verbatim by GET.
    pub envelope: Value,
    /// `state` as submitted, kept only when `envelope`'s parsed copy lost precision (numbers a
    /// double cannot hold): GET and push bodies splice it back (`ma2h_protocol::verbatim`).
    pub state_text: Option<String>,
    pub created_at: Timestamp,
    pub expires_at: Option<Timestamp>,
    /// Bumped on every change; `?since=` and long-poll compare against it.
    pub updated_at: Timestamp,
    /// The §6 Response, set once by the terminal transition.
    pub response: Option<Value>,
    pub resolution_id: Option<ResolutionId>,
    /// The row may be purged (→ 410) after this instant; `None` while open.
    pub retain_until: Option<Timestamp>,
    /// The push obligation (§8.3), written by the terminal transition of a push-mode ask/task.
    pub push: Option<PushTrack>,
    /// §14.2: when the submitting agent first read the terminal Response (a 2xx push is the
    /// other delivery evidence). Never touches `updated_at`.
    pub delivered_at: Option<Timestamp>,
    /// §14.1: the submitting agent's acknowledgment of the Response; the first one wins.
    pub ack: Option<crate::mailbox::model::AckRecord>,
}

impl MessageRecord {
    /// §14.2 delivered-to-agent: the earlier of the first authenticated read and a 2xx push.
    pub fn delivered_to_agent(&self) -> Option<Timestamp> {
        let pushed = self.push.as_ref().filter(|p| p.status == PushStatus::Delivered).and_then(|p| p.delivered_at);
        match (self.delivered_at, pushed) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

pub use ma2h_protocol::wire::PushStatus;

/// The outbox entry of one message, stored with the message row so it commits atomically with
/// the terminal transition (§3.1: a crash between commit and send cannot lose it).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushTrack {
    pub status: PushStatus,
    pub attempts: u32,
    /// When the next attempt is due (`Pending` only). Claiming an entry moves it forward by a
    /// lease, so a worker that dies mid-attempt leaves it due again later.
    pub next_attempt_at: Option<Timestamp>,
    pub last_error: Option<String>,
    pub delivered_at: Option<Timestamp>,
}

impl PushTrack {
    /// The track as the operator listing and the owning agent's GET show it (a Hub extension:
    /// the §8.2 body admits additional members). `last_error` is the Hub's own words — an HTTP
    /// status, a timeout, an egress refusal — never the receiver's response body.
    pub fn view(&self) -> ma2h_protocol::wire::PushTrackView {
        ma2h_protocol::wire::PushTrackView {
            status: self.status,
            attempts: self.attempts,
            last_error: self.last_error.clone(),
            next_attempt_at: self.next_attempt_at,
            delivered_at: self.delivered_at,
        }
    }

    pub fn pending(at: Timestamp) -> Self {
        Self {
            status: PushStatus::Pending,
            attempts: 0,
            next_attempt_at: Some(at),
            last_error: None,
            delivered_at: None,
        }
    }
}

impl MessageRecord {
    /// Parse the stored envelope back into its typed view. It was validated on the way in, so a
    /// failure means the store is corrupt.
    pub fn envelope(&self) -> Result<Envelope, crate::HubError> {
        Envelope::from_value(self.envelope.clone())
            .map_err(|e| crate::HubError::Internal(format!("stored envelope {} no longer parses: {e}", self.id)))
    }
}

/// The idempotency claim written atomically with a new message (§8.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdempotencyRecord {
    pub account: AccountId,
    pub agent_id: AgentId,
    pub key: String,
    pub message_id: MessageId,
    /// SHA-256 of the canonical envelope minus `agent.run_id`/`agent.session`.
    pub fingerprint: String,
    pub expires_at: Timestamp,
}

/// The write that makes a message terminal — applied only if it is still `open` (the §7 CAS).
#[derive(Debug, Clone, PartialEq)]
pub struct TerminalWrite {
    pub status: Status,
    pub response: Value,
    pub resolution_id: ResolutionId,
    pub resolved_at: Timestamp,
    pub retain_until: Timestamp,
    /// `true` for the §7 expiry transition, which is exempt from the `resolved_at <= expires_at`
    /// guard every other terminal must satisfy.
    pub is_expiry: bool,
    /// Write a pending push obligation (due at `resolved_at`) in the same atomic write.
    pub push: bool,
    /// The push queue already holds this terminal's job, taken *before* this write
    /// ([`crate::push::queue::PushQueue::announce`]): the store need not index the obligation for a
    /// sweep to find a lost announcement (it leaves `next_attempt_at` unset).
    pub announced: bool,
    /// The record the caller read this message as, when it has one. A store MAY build the
    /// terminal record from it instead of re-reading (a DynamoDB `GetItem` saved per terminal),
    /// but only under its CAS: the write must also be refused if the stored record's
    /// `updated_at` differs, and a stale copy then re-read. It must come from this store.
    pub seen: Option<Box<MessageRecord>>,
    /// A §8.7.1 `response` entry for the submitting session's mailbox, written in the same
    /// atomic write as the terminal (only when the CAS wins).
    pub entry: Option<Box<crate::mailbox::model::MailboxEntry>>,
}

/// Result of [`crate::messages::store::MessageStore::insert_message`].
#[derive(Debug, Clone, PartialEq)]
pub enum Inserted {
    New,
    /// A live idempotency claim already exists for the key: nothing was written.
    Existing(IdempotencyRecord),
    /// The addressed message's destination mailbox already holds its depth cap of live entries
    /// for that audience: nothing was written.
    MailboxFull,
}

/// Result of a lookup.
#[allow(clippy::large_enum_variant)] // `Found` is the common case; boxing it buys nothing.
#[derive(Debug, Clone, PartialEq)]
pub enum Lookup {
    Found(MessageRecord),
    /// Purged after retention (§8.2: 410, distinct from unknown). The tombstone remembers the
    /// submitter so another principal still sees 404.
    Gone {
        agent_id: AgentId,
    },
    Missing,
}

/// Result of [`crate::messages::store::MessageStore::complete`].
#[allow(clippy::large_enum_variant)] // both record-carrying variants are the common case
#[derive(Debug, Clone, PartialEq)]
pub enum Completion {
    /// This write won the CAS.
    Applied(MessageRecord),
    /// Another terminal won first; here is the record as it stands.
    AlreadyTerminal(MessageRecord),
    Missing,
}

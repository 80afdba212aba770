//! The agent mailbox (§8.7) as the stores keep it: entries of the four §8.7.1 kinds, their
//! delivery track (§14.2), acks (§14.1) and presence (§15).
//!
//! Directives, addressed `message` entries, session `response` entries and bounce `receipt`s share
//! one record, claim and ack, differing in `kind` and `audience`.

use ma2h_protocol::ids::{AccountId, AgentId, SessionId, key_part};
use ma2h_protocol::time::Timestamp;
use ma2h_protocol::wire::{AckEnvelope, AckType, TrackState};
use serde_json::Value;

/// The credential-selected mailbox (§8.7): one per agent of an account.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct Mailbox {
    pub account: AccountId,
    pub agent: AgentId,
}

impl Mailbox {
    /// A key naming this mailbox unambiguously (change-feed channel, presence cache).
    pub fn key(&self) -> String {
        format!("mbx:{}/{}", key_part(self.account.as_str()), key_part(self.agent.as_str()))
    }
}

pub use ma2h_protocol::wire::EntryKind;

/// Which drains may claim an entry. A session-less drain sees only `Any` (§8.7.1: exactly the
/// v0.4 shape); a drain presenting session `s` sees `Any`, `Sessions` and `Session(s)`.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Audience {
    /// Every drain of the principal.
    Any,
    /// Any session-presenting drain of the principal — a principal-addressed `message` entry,
    /// first claim wins (§8.7.1 role delivery).
    Sessions,
    /// Only drains presenting this session (§8.7.1 session-addressed entries).
    Session(SessionId),
}

impl Audience {
    /// Stored form: `any`, `sessions`, or the session id itself (`sess_…`, never either word).
    pub fn as_str(&self) -> &str {
        match self {
            Self::Any => "any",
            Self::Sessions => "sessions",
            Self::Session(id) => id.as_str(),
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "any" => Some(Self::Any),
            "sessions" => Some(Self::Sessions),
            _ => SessionId::parse(s).map(Self::Session),
        }
    }
    pub fn session(&self) -> Option<&SessionId> {
        match self {
            Self::Any | Self::Sessions => None,
            Self::Session(id) => Some(id),
        }
    }

    /// What a drain sees: `Any` alone without a session; with one, also `Sessions` and its own.
    pub fn for_drain(session: Option<&SessionId>) -> Vec<Self> {
        match session {
            None => vec![Self::Any],
            Some(s) => vec![Self::Any, Self::Sessions, Self::Session(s.clone())],
        }
    }
}

/// A §14.1 ack as stored (`ma2h_version`/`type`/`in_reply_to` are added when served).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AckRecord {
    /// Hub-attested, `agent:<id>`.
    pub by: String,
    pub acked_at: Timestamp,
    /// Untrusted agent text (≤ 2,000 chars), sanitized wherever it is rendered.
    pub note: Option<String>,
}

impl AckRecord {
    /// The §14.1 ack object acknowledging `in_reply_to` (a directive, or a message whose
    /// Response carried `resolution_id`).
    pub fn envelope(&self, in_reply_to: &str, resolution_id: Option<&str>) -> AckEnvelope {
        AckEnvelope {
            ma2h_version: ma2h_protocol::version::HUB_VERSION.to_owned(),
            kind: AckType::Ack,
            in_reply_to: in_reply_to.to_owned(),
            by: self.by.clone(),
            acked_at: self.acked_at,
            note: self.note.clone(),
            resolution_id: resolution_id.map(str::to_owned),
        }
    }
}

/// Why an entry left the mailbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CloseReason {
    /// Consumed by the agent.
    Acked(AckRecord),
    /// Its deadline (`expires_at` or inbound retention) passed first (§13.3).
    Deadline,
    /// Its session ended before an ack (§14.2 `bounced`) — or a principal-addressed message
    /// drained but never acked reached its deadline; `prior` follows from `delivered_at`.
    Bounced,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Closed {
    pub at: Timestamp,
    pub reason: CloseReason,
}

/// One mailbox entry.
#[derive(Debug, Clone, PartialEq)]
pub struct MailboxEntry {
    pub mailbox: Mailbox,
    /// The entry's id (`dir_…` now), unique in the account: the ack key.
    pub key: String,
    pub kind: EntryKind,
    pub audience: Audience,
    /// The delivered form (§13.1 directive), immutable; re-signed at every delivery.
    pub payload: Value,
    /// Who caused it (`human:<id>` for a directive).
    pub author: String,
    pub enqueued_at: Timestamp,
    /// Claimable at or after this instant; a claim moves it one visibility window ahead.
    pub visible_at: Timestamp,
    /// `min(expires_at, enqueued_at + inbound retention)`: never delivered after it.
    pub deadline: Timestamp,
    /// How many times a drain (or a stream push) returned it; an entry never returned cannot be
    /// acked.
    pub deliveries: u32,
    /// First delivery (§14.2 `delivered`), set by the first claim that is client-originated
    /// evidence — a drain, never a stream push (§8.7.2).
    pub delivered_at: Option<Timestamp>,
    /// The session whose drain (or stream) claimed it last: a principal-addressed entry orphaned
    /// at its deadline names it in the bounce receipt (§14.2).
    pub claimant: Option<SessionId>,
    pub closed: Option<Closed>,
    /// Closed entries may be deleted after this instant.
    pub retain_until: Option<Timestamp>,
}

/// The §14.2 mailbox track of an entry, derived (so reads apply expiry lazily).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Track {
    Queued,
    Delivered {
        delivered_at: Timestamp,
    },
    Acknowledged {
        delivered_at: Option<Timestamp>,
        ack: AckRecord,
    },
    /// Never delivered before its deadline (§14.2: `expired` never follows a delivery).
    Expired,
    /// Its destination session ended before an ack (§14.2). `prior` is `delivered` iff
    /// `delivered_at` is set: one stamp, read the same way on every surface.
    Bounced {
        delivered_at: Option<Timestamp>,
        at: Timestamp,
    },
}

impl Track {
    pub fn state(&self) -> TrackState {
        match self {
            Self::Queued => TrackState::Queued,
            Self::Delivered { .. } => TrackState::Delivered,
            Self::Acknowledged { .. } => TrackState::Acknowledged,
            Self::Expired => TrackState::Expired,
            Self::Bounced { .. } => TrackState::Bounced,
        }
    }

    pub fn as_str(&self) -> &'static str {
        self.state().as_str()
    }

    /// The §14.2 `prior` of a bounce.
    pub fn prior(&self) -> Option<TrackState> {
        match self {
            Self::Bounced { delivered_at: Some(_), .. } => Some(TrackState::Delivered),
            Self::Bounced { delivered_at: None, .. } => Some(TrackState::Queued),
            _ => None,
        }
    }
}

impl MailboxEntry {
    /// A new entry, claimable from `now` until `deadline`, never yet delivered.
    #[allow(clippy::too_many_arguments)] // one constructor for every kind: the fields are the API
    pub fn new(
        mailbox: Mailbox,
        key: String,
        kind: EntryKind,
        audience: Audience,
        payload: Value,
        author: String,
        now: Timestamp,
        deadline: Timestamp,
    ) -> Self {
        Self {
            mailbox,
            key,
            kind,
            audience,
            payload,
            author,
            enqueued_at: now,
            visible_at: now,
            deadline,
            deliveries: 0,
            delivered_at: None,
            claimant: None,
            closed: None,
            retain_until: None,
        }
    }

    /// Live: still in the mailbox at `now` (not closed, deadline not passed).
    pub fn is_live(&self, now: Timestamp) -> bool {
        self.closed.is_none() && now <= self.deadline
    }

    /// Whether the deadline is the entry's own `expires_at` rather than the inbound retention
    /// (`deadline = min(expires_at, enqueued_at + retention)`). A millisecond of slack: the
    /// stores keep milliseconds, a payload may carry finer fractions.
    pub fn ends_at_own_expiry(&self) -> bool {
        self.payload
            .get("expires_at")
            .and_then(Value::as_str)
            .and_then(ma2h_protocol::time::parse)
            .is_some_and(|expires| expires <= self.deadline + chrono::Duration::milliseconds(1))
    }

    /// §14.2: a command entry (a directive or a `message`) still delivered-but-unacked when its
    /// *retention* lapses was drained, its claimant gone, never rescued — an orphan, closed as
    /// `bounced` with `prior: "delivered"`. One that reaches its own `expires_at` after a
    /// delivery stays `delivered` (seen, unanswered), and `response`/`receipt` entries never
    /// bounce. The stores persist this at enqueue and apply it when they close due entries.
    pub fn orphaned_if_unacked_at_deadline(&self) -> bool {
        matches!(self.kind, EntryKind::Directive | EntryKind::Message) && !self.ends_at_own_expiry()
    }

    /// The track at `now`. A delivered entry whose deadline passes un-acked stays `delivered`
    /// until the sweep closes it (as an orphan, `bounced`, when its retention lapsed): it was
    /// seen, and `expired` must mean "never seen" (§14.2).
    pub fn track(&self, now: Timestamp) -> Track {
        match &self.closed {
            Some(Closed { reason: CloseReason::Acked(ack), .. }) => {
                return Track::Acknowledged { delivered_at: self.delivered_at, ack: ack.clone() };
            }
            Some(Closed { reason: CloseReason::Bounced, at }) => {
                return Track::Bounced { delivered_at: self.delivered_at, at: *at };
            }
            _ => {}
        }
        match self.delivered_at {
            Some(delivered_at) => Track::Delivered { delivered_at },
            None if self.closed.is_some() || now > self.deadline => Track::Expired,
            None => Track::Queued,
        }
    }
}

/// Result of [`crate::mailbox::store::MailboxStore::enqueue`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Enqueued {
    New,
    /// The mailbox already holds `depth_cap` live entries: nothing was written.
    Full,
}

/// Who claims (§8.7.1, §8.7.2).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Claimer {
    /// The presented session, recorded as the entry's `claimant`.
    pub session: Option<SessionId>,
    /// A client-requested drain (`true`) stamps `delivered_at`; a stream push (`false`) does not.
    pub evidence: bool,
}

/// Result of [`crate::mailbox::store::MailboxStore::claim`].
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Claim {
    /// Claimed entries in first-enqueue order, as written by the claim.
    pub entries: Vec<MailboxEntry>,
    /// The earliest later instant an entry of this mailbox becomes claimable (a lapsing window),
    /// so a long-poll knows when to look again without a change announcement.
    pub next_visible_at: Option<Timestamp>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use ma2h_protocol::time::from_millis;

    fn entry() -> MailboxEntry {
        MailboxEntry {
            mailbox: Mailbox { account: AccountId::parse("a").unwrap(), agent: AgentId::parse("b").unwrap() },
            key: "dir_x".into(),
            kind: EntryKind::Directive,
            audience: Audience::Any,
            payload: Value::Null,
            author: "human:h".into(),
            enqueued_at: from_millis(1_000),
            visible_at: from_millis(1_000),
            deadline: from_millis(5_000),
            deliveries: 0,
            delivered_at: None,
            claimant: None,
            closed: None,
            retain_until: None,
        }
    }

    #[test]
    fn the_track_is_queued_then_delivered_then_acknowledged() {
        let mut e = entry();
        assert_eq!(e.track(from_millis(2_000)), Track::Queued);
        e.delivered_at = Some(from_millis(2_000));
        assert_eq!(e.track(from_millis(3_000)).as_str(), "delivered");
        let ack = AckRecord { by: "agent:b".into(), acked_at: from_millis(3_000), note: None };
        e.closed = Some(Closed { at: from_millis(3_000), reason: CloseReason::Acked(ack) });
        assert_eq!(e.track(from_millis(9_000)).as_str(), "acknowledged");
    }

    #[test]
    fn only_a_never_delivered_entry_expires_and_expiry_is_read_lazily() {
        let mut e = entry();
        assert!(e.is_live(from_millis(5_000)), "the deadline instant is still live");
        assert_eq!(e.track(from_millis(5_001)), Track::Expired);
        assert!(!e.is_live(from_millis(5_001)));
        e.delivered_at = Some(from_millis(2_000));
        assert_eq!(e.track(from_millis(9_000)).as_str(), "delivered");
    }

    #[test]
    fn a_bounce_keeps_whether_the_entry_was_seen() {
        let mut e = entry();
        e.closed = Some(Closed { at: from_millis(3_000), reason: CloseReason::Bounced });
        assert_eq!(e.track(from_millis(9_000)).prior().map(|p| p.as_str()), Some("queued"));
        e.delivered_at = Some(from_millis(2_000));
        assert_eq!(
            (e.track(from_millis(9_000)).as_str(), e.track(from_millis(9_000)).prior()),
            ("bounced", Some(TrackState::Delivered))
        );
        let sess = Audience::Session(SessionId::from_parts(1, 1));
        assert_eq!(Audience::parse(sess.as_str()), Some(sess));
        assert_eq!(Audience::parse("any"), Some(Audience::Any));
        assert_eq!(Audience::parse("sessions"), Some(Audience::Sessions));
        assert_eq!(Audience::parse("sess_nope"), None);
    }

    #[test]
    fn only_command_entries_whose_retention_ends_them_are_orphaned_when_unacked() {
        let mut e = entry(); // deadline 5 s after the epoch, no `expires_at`: the retention's
        assert!(e.orphaned_if_unacked_at_deadline(), "a directive at its retention");
        e.kind = EntryKind::Message;
        assert!(e.orphaned_if_unacked_at_deadline(), "a message at its retention");
        e.payload = serde_json::json!({ "expires_at": "1970-01-01T00:00:05.0004Z" });
        assert!(e.ends_at_own_expiry(), "sub-millisecond fractions still name the deadline");
        assert!(!e.orphaned_if_unacked_at_deadline(), "its own expiry: seen, unanswered");
        e.payload = serde_json::json!({ "expires_at": "1970-01-01T00:00:09Z" });
        assert!(!e.ends_at_own_expiry(), "an expiry beyond the retention: the retention ends it");
        assert!(e.orphaned_if_unacked_at_deadline());
        for kind in [EntryKind::Response, EntryKind::Receipt] {
            e.kind = kind;
            assert!(!e.orphaned_if_unacked_at_deadline(), "{kind:?} never bounces");
        }
    }

    #[test]
    fn mailbox_keys_cannot_collide_across_separators() {
        let m = |a: &str, b: &str| Mailbox { account: AccountId::parse(a).unwrap(), agent: AgentId::parse(b).unwrap() };
        assert_ne!(m("a/b", "c").key(), m("a", "b/c").key());
    }
}

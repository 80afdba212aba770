//! Agent sessions (§16) as the stores keep them: a lease-bound addressing scope under one
//! principal, and the operator's durable stop record (§16.4.1).
//!
//! A session's state is derived at read time from its stored end and its lease: an active row
//! whose `expires_at` has passed reads `expired` (ended at `expires_at`) before the sweeper marks
//! it, exactly like §7 lazy expiry. Every transition is one compare-and-set in the store on
//! "no end yet and the lease not lapsed", so the first terminal wins and nothing renews a lapsed
//! lease (§16.2, §16.3).

use ma2h_protocol::ids::{AccountId, AgentId, SessionId};
use ma2h_protocol::time::Timestamp;
use ma2h_protocol::wire::{self, SessionObject, StopStatus};
use serde_json::{Map, Value};

use crate::mailbox::model::Mailbox;

/// How a session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum EndKind {
    /// The owning principal's own `DELETE` (§16.3).
    Closed,
    /// The account's human closed it: the §16.4 kill-switch.
    ClosedByOperator,
    /// The lease lapsed (Hub clock, §9.5).
    Expired,
}

impl EndKind {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Closed => "closed",
            Self::ClosedByOperator => "operator",
            Self::Expired => "expired",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        Some(match s {
            "closed" => Self::Closed,
            "operator" => Self::ClosedByOperator,
            "expired" => Self::Expired,
            _ => return None,
        })
    }
}

/// A terminal transition, stamped once by the winning CAS.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionEnd {
    pub at: Timestamp,
    pub kind: EndKind,
}

/// The §16.3 state at some instant.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionState {
    Active,
    Ended(SessionEnd),
}

/// One registered session.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionRecord {
    pub account: AccountId,
    pub agent: AgentId,
    pub id: SessionId,
    pub created_at: Timestamp,
    /// The current lease end; renewal moves it to `renewal + ttl_seconds`.
    pub expires_at: Timestamp,
    pub ttl_seconds: u32,
    /// The latest client-originated renewal event (§15.1 per-session presence).
    pub last_seen: Option<Timestamp>,
    /// The registration's descriptive members (`run_id`, `label`, `kind`, `project`, `labels`).
    pub meta: Map<String, Value>,
    /// Stored terminal, if a CAS has written one.
    pub end: Option<SessionEnd>,
    /// Terminal sessions are purged after this instant (`sessions.terminal_retention_seconds`).
    pub retain_until: Option<Timestamp>,
    /// The §14.2 bounce of its session-addressed mail is still owed (a durable outbox flag).
    pub bounce_pending: bool,
}

impl SessionRecord {
    pub fn mailbox(&self) -> Mailbox {
        Mailbox { account: self.account.clone(), agent: self.agent.clone() }
    }

    /// The state at `now`: the stored end, or `expired` once the lease has lapsed.
    pub fn state(&self, now: Timestamp) -> SessionState {
        match self.end {
            Some(end) => SessionState::Ended(end),
            None if now > self.expires_at => {
                SessionState::Ended(SessionEnd { at: self.expires_at, kind: EndKind::Expired })
            }
            None => SessionState::Active,
        }
    }

    pub fn is_live(&self, now: Timestamp) -> bool {
        self.state(now) == SessionState::Active
    }

    /// `agent:<id>#<sess>` — the session-qualified address (§4).
    pub fn address(&self) -> String {
        ma2h_protocol::entries::session_address(self.agent.as_str(), self.id.as_str())
    }

    /// The §16 session resource at `now` (`closed_by_operator` is emitted only when true).
    pub fn view(&self, now: Timestamp) -> SessionObject {
        let (state, closed_at, by_operator) = match self.state(now) {
            SessionState::Active => (wire::SessionState::Active, None, false),
            SessionState::Ended(end) => match end.kind {
                EndKind::Expired => (wire::SessionState::Expired, Some(end.at), false),
                EndKind::Closed => (wire::SessionState::Closed, Some(end.at), false),
                EndKind::ClosedByOperator => (wire::SessionState::Closed, Some(end.at), true),
            },
        };
        SessionObject {
            id: self.id.to_string(),
            agent_id: self.agent.to_string(),
            created_at: self.created_at,
            expires_at: self.expires_at,
            ttl_seconds: Some(self.ttl_seconds),
            closed_at,
            closed_by_operator: by_operator,
            state,
            last_seen: self.last_seen,
            meta: self.meta.clone(),
        }
    }
}

/// The durable operator stop of one principal (§16.4.1): independent of any session row, never
/// purged, lifted only by the account's human.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StopRecord {
    /// `human:<id>`, attested.
    pub by: String,
    pub at: Timestamp,
    /// The session whose close recorded it, when there was one.
    pub session: Option<SessionId>,
}

impl StopRecord {
    /// `{agent_id, stopped, stopped_by, stopped_at, session_id?}` — or `stopped: false` for none.
    pub fn status(agent: &str, stop: Option<&StopRecord>) -> StopStatus {
        StopStatus {
            agent_id: agent.to_owned(),
            stopped: stop.is_some(),
            stopped_by: stop.map(|s| s.by.clone()),
            stopped_at: stop.map(|s| s.at),
            session_id: stop.and_then(|s| s.session.as_ref()).map(|s| s.to_string()),
        }
    }
}

/// Result of [`crate::sessions::store::SessionStore::register`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Registered {
    New,
    /// The principal already holds `max_live` live sessions: nothing was written.
    Full,
    /// The principal is stopped (§16.4.1): nothing was written.
    Stopped,
}

/// Result of [`crate::sessions::store::SessionStore::end_session`].
#[derive(Debug, Clone, PartialEq)]
pub enum Ended {
    /// This write won the CAS; the record as written.
    Applied(SessionRecord),
    /// Already terminal (stored, or its lease had lapsed); the record as it stands.
    AlreadyTerminal(SessionRecord),
    Missing,
}

#[cfg(test)]
mod tests {
    use super::*;
    use ma2h_protocol::time::from_millis;

    fn session() -> SessionRecord {
        SessionRecord {
            account: AccountId::parse("acct").unwrap(),
            agent: AgentId::parse("bot").unwrap(),
            id: SessionId::from_parts(1, 2),
            created_at: from_millis(1_000),
            expires_at: from_millis(5_000),
            ttl_seconds: 4,
            last_seen: None,
            meta: Map::new(),
            end: None,
            retain_until: None,
            bounce_pending: false,
        }
    }

    #[test]
    fn a_lapsed_lease_reads_expired_at_its_expiry_and_the_expiry_instant_is_still_live() {
        let s = session();
        assert!(s.is_live(from_millis(5_000)));
        let SessionState::Ended(end) = s.state(from_millis(5_001)) else { panic!("must be ended") };
        assert_eq!((end.kind, end.at), (EndKind::Expired, from_millis(5_000)));
    }

    #[test]
    fn closed_by_operator_is_emitted_only_when_true() {
        let mut s = session();
        s.end = Some(SessionEnd { at: from_millis(2_000), kind: EndKind::Closed });
        let body = serde_json::to_value(s.view(from_millis(3_000))).unwrap();
        assert_eq!(body["state"], "closed");
        assert!(body.get("closed_by_operator").is_none(), "§16.4: never `false`");
        s.end = Some(SessionEnd { at: from_millis(2_000), kind: EndKind::ClosedByOperator });
        assert!(s.view(from_millis(3_000)).closed_by_operator);
    }

    #[test]
    fn a_stored_close_is_not_overridden_by_the_lease_lapsing_later() {
        let mut s = session();
        s.end = Some(SessionEnd { at: from_millis(2_000), kind: EndKind::Closed });
        assert_eq!(s.view(from_millis(9_000)).state, wire::SessionState::Closed, "§16.3: terminals are immutable");
    }
}

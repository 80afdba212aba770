//! The session store port (§16 sessions, §16.4.1 stop records).

use crate::kernel::error::StoreError;
use async_trait::async_trait;
use ma2h_protocol::ids::{AccountId, AgentId, SessionId};
use ma2h_protocol::time::Timestamp;

use crate::mailbox::model::Mailbox;
use crate::sessions::model::{Ended, Registered, SessionEnd, SessionRecord, StopRecord};

/// §16 sessions and the §16.4.1 durable stop records.
#[async_trait]
pub trait SessionStore: Send + Sync + 'static {
    /// Insert `session` iff its principal is not stopped and holds fewer than `max_live` live
    /// sessions (no end, lease not lapsed at `session.created_at`). The stop is checked in the
    /// same atomic write as the insert, so a registration racing a stop never lands after it.
    async fn register(&self, session: &SessionRecord, max_live: u32) -> Result<Registered, StoreError>;

    async fn get_session(&self, account: &AccountId, id: &SessionId) -> Result<Option<SessionRecord>, StoreError>;

    /// Sessions of the account (or of one agent), open or terminal, newest first, at most `limit`.
    async fn list_sessions(
        &self,
        account: &AccountId,
        agent: Option<&AgentId>,
        limit: usize,
    ) -> Result<Vec<SessionRecord>, StoreError>;

    /// §16.2 renewal, one compare-and-set: iff the session is `agent`'s, has no end and its lease
    /// has not lapsed at `now`, set `expires_at = now + ttl_seconds` and `last_seen = now`.
    /// Returns the renewed record, or `None` when nothing was renewed.
    async fn renew_session(
        &self,
        account: &AccountId,
        agent: &AgentId,
        id: &SessionId,
        now: Timestamp,
    ) -> Result<Option<SessionRecord>, StoreError>;

    /// The terminal CAS: iff the session has no end and its lease has not lapsed at `end.at`,
    /// write `end`, `retain_until` and the pending-bounce flag — and `stop` (the principal's
    /// durable stop record) in the same atomic write.
    async fn end_session(
        &self,
        account: &AccountId,
        id: &SessionId,
        end: SessionEnd,
        retain_until: Timestamp,
        stop: Option<&StopRecord>,
    ) -> Result<Ended, StoreError>;

    /// Mark `expired` (at their `expires_at`, retained for `retention`) up to `limit` sessions
    /// whose lease lapsed before `now`, from an index ordered by `expires_at`. Returns how many.
    async fn expire_due_sessions(
        &self,
        now: Timestamp,
        retention: chrono::Duration,
        limit: usize,
    ) -> Result<usize, StoreError>;

    /// Terminal sessions whose §14.2 bounce is still owed (a durable outbox, from an index).
    async fn pending_bounces(&self, limit: usize) -> Result<Vec<SessionRecord>, StoreError>;

    /// The bounce of `id` is complete: clear its flag.
    async fn bounce_done(&self, account: &AccountId, id: &SessionId) -> Result<(), StoreError>;

    /// Delete up to `limit` terminal sessions whose `retain_until` is at or before `now`.
    async fn purge_sessions(&self, now: Timestamp, limit: usize) -> Result<usize, StoreError>;

    /// Record (or replace) the principal's durable stop (§16.4.1). Never purged.
    async fn put_stop(&self, mailbox: &Mailbox, stop: &StopRecord) -> Result<(), StoreError>;

    async fn get_stop(&self, mailbox: &Mailbox) -> Result<Option<StopRecord>, StoreError>;

    /// Lift the stop; `true` if there was one.
    async fn lift_stop(&self, mailbox: &Mailbox) -> Result<bool, StoreError>;
}

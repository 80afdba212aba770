//! The message store port: messages, idempotency claims, the lifecycle CAS, the expiry index,
//! retention and rate counters.

use crate::kernel::error::StoreError;
use async_trait::async_trait;
use ma2h_protocol::ids::{AccountId, AgentId, MessageId, key_part};
use ma2h_protocol::time::Timestamp;

use crate::mailbox::model::{AckRecord, MailboxEntry};
use crate::messages::listing::{ListFilter, ListPage, ListQuery, OpenCounts};
use crate::messages::records::{
    Completion, IdempotencyRecord, Inserted, Lookup, MessageRecord, PushTrack, TerminalWrite,
};

/// Messages, idempotency claims, lifecycle CAS, expiry index, retention and rate counters.
#[async_trait]
pub trait MessageStore: Send + Sync + 'static {
    /// Write a new message together with its idempotency claim — and, for an addressed message,
    /// its `message` entry in the destination mailbox (§8.7.1) — in ONE atomic write. If a live
    /// (unexpired) claim for `(account, agent, key)` exists, nothing is written
    /// ([`Inserted::Existing`]); otherwise, if `entry`'s audience partition of its mailbox already
    /// holds `depth_cap` live entries, nothing is written ([`Inserted::MailboxFull`]; soft on
    /// DynamoDB, exactly as [`MailboxStore::enqueue`]).
    async fn insert_message(
        &self,
        message: &MessageRecord,
        claim: Option<&IdempotencyRecord>,
        entry: Option<(&MailboxEntry, u32)>,
        now: Timestamp,
    ) -> Result<Inserted, StoreError>;

    /// The live idempotency claim (live iff `now < expires_at`) for `(account, agent, key)`, if any.
    async fn get_claim(
        &self,
        account: &AccountId,
        agent: &AgentId,
        key: &str,
        now: Timestamp,
    ) -> Result<Option<IdempotencyRecord>, StoreError>;

    async fn get_message(&self, account: &AccountId, id: &MessageId) -> Result<Lookup, StoreError>;

    /// The §7 compare-and-set: apply `write` iff the message is still `open` AND — unless the
    /// write is the expiry itself — `write.resolved_at <= expires_at` (expiry and answer judged
    /// in the one atomic transition). A refused write returns the current record: still `open`
    /// means the message is overdue and must be expired instead.
    async fn complete(
        &self,
        account: &AccountId,
        id: &MessageId,
        write: &TerminalWrite,
    ) -> Result<Completion, StoreError>;

    /// Open messages whose `expires_at` is at or before `now`, oldest first, read from an index
    /// ordered by `expires_at` (never a full scan).
    async fn due_expiries(&self, now: Timestamp, limit: usize) -> Result<Vec<(AccountId, MessageId)>, StoreError>;

    /// Delete messages past `retain_until`, leaving tombstones so reads answer 410. Expired
    /// idempotency claims and rate counters are dropped here or by a native TTL — either way
    /// reads already treat them as absent. Returns how many messages were purged. A store with a
    /// native TTL ([`Self::native_ttl`]) deletes nothing here: its records past retention
    /// disappear on their own, and the Hub reads such a message as gone meanwhile
    /// (`Hub::lookup`).
    async fn purge(&self, now: Timestamp, limit: usize) -> Result<usize, StoreError>;

    /// Whether records past their retention — messages, mailbox entries, ended sessions,
    /// notifications — are deleted by the store's own TTL (DynamoDB's: free, lazy) rather than
    /// by the purge calls, which then delete nothing.
    fn native_ttl(&self) -> bool {
        false
    }

    /// One page of the operator listing for one account: at most `query.limit` summaries that
    /// pass `query.filter`, strictly after `query.after`, read in order from an index. Open: most
    /// urgent first, then oldest, then id. Terminal (delivered notifies included): newest
    /// `updated_at` first, then id descending. `next` is set when another matching row may
    /// follow: always when one does; a store that bounds the work of one page may also end a page
    /// early — shorter than `limit`, even empty — with `next` where it stopped.
    async fn list_messages(&self, account: &AccountId, query: &ListQuery) -> Result<ListPage, StoreError>;

    /// Search the account's messages, open and resolved (issue 39). A store with a full-text
    /// index ([`Self::full_text_search`]) matches titles and bodies (task instructions too; a
    /// sensitive message's body never); one without matches titles over a bounded number of the
    /// newest messages and says so (`complete: false` when it stopped early).
    async fn search_messages(
        &self,
        account: &AccountId,
        query: &crate::messages::listing::SearchQuery,
    ) -> Result<crate::messages::listing::SearchHits, StoreError>;

    /// Whether [`Self::search_messages`] reads a full-text index of titles and bodies.
    fn full_text_search(&self) -> bool {
        false
    }

    /// The account's open messages counted: total, by priority, by type, and those passing
    /// `filter` — over every open message, never a page of them.
    async fn open_counts(&self, account: &AccountId, filter: &ListFilter) -> Result<OpenCounts, StoreError>;

    /// Claim up to `limit` pending pushes due at `now` (oldest first, from an index on the due
    /// time): each claimed entry's `next_attempt_at` moves to `lease_until` in the same write, so
    /// two workers never attempt one entry at once and a crashed attempt is retried later.
    async fn claim_due_pushes(
        &self,
        now: Timestamp,
        lease_until: Timestamp,
        limit: usize,
    ) -> Result<Vec<(AccountId, MessageId)>, StoreError>;

    /// Replace a message's push track (after an attempt).
    async fn record_push(&self, account: &AccountId, id: &MessageId, track: &PushTrack) -> Result<(), StoreError>;

    /// §14.2: stamp `delivered_at = at` on a terminal ask/task that has no stamp yet (the
    /// submitter's first read). Returns the stamp in effect — this one or an earlier one — or
    /// `None` for an open message, a notify or an unknown id. Never touches `updated_at`.
    async fn mark_delivered(
        &self,
        account: &AccountId,
        id: &MessageId,
        at: Timestamp,
    ) -> Result<Option<Timestamp>, StoreError>;

    /// §14.1: store `ack` iff the terminal ask/task's Response was delivered to the agent (a
    /// `delivered_at` stamp or a 2xx push) and no ack is stored. Returns the ack in effect —
    /// this one, or the first one if another won — or `None` when the Response is not
    /// acknowledgeable (open, notify, undelivered, unknown). Never touches `updated_at`.
    async fn ack_response(
        &self,
        account: &AccountId,
        id: &MessageId,
        ack: &AckRecord,
    ) -> Result<Option<AckRecord>, StoreError>;

    /// Open asks/tasks of one agent (the §8.6 inbox-depth limit).
    async fn count_open(&self, account: &AccountId, agent: &AgentId) -> Result<u64, StoreError>;

    /// §8.6 for one submit, in one step: count it in the agent's fixed-minute request window
    /// `window` (its key part: the minute; it ends at `window_end`) and, when `opens` (an ask or
    /// a task), in the agent's open count. The default is [`Self::incr_counter`] on
    /// `rpm/{account}/{agent}/{window}` plus [`Self::count_open`]; a store may instead keep an
    /// *upper bound* of the open count that terminals never decrement, which
    /// [`Self::recount_open`] makes exact when it reaches the limit.
    async fn admit(
        &self,
        account: &AccountId,
        agent: &AgentId,
        window: i64,
        window_end: Timestamp,
        opens: bool,
        now: Timestamp,
    ) -> Result<Admission, StoreError> {
        let key = format!("rpm/{}/{}/{window}", key_part(account.as_str()), key_part(agent.as_str()));
        let requests = self.incr_counter(&key, window_end, now).await?;
        let open_before = if opens { self.count_open(account, agent).await? } else { 0 };
        Ok(Admission { requests, open_before })
    }

    /// The exact open count of an agent whose [`Self::admit`] bound reached the depth limit;
    /// `admitted` is the bound that submit saw (its own submit included). A store keeping a bound
    /// re-bases it here. The default is [`Self::count_open`].
    async fn recount_open(&self, account: &AccountId, agent: &AgentId, admitted: u64) -> Result<u64, StoreError> {
        let _ = admitted;
        self.count_open(account, agent).await
    }

    /// Atomically add one to the counter `key` and return the new value (§8.6
    /// requests-per-minute). A missing counter, or one whose `expires_at` is at or before `now`
    /// (Hub clock), restarts at 1 with the given `expires_at`.
    async fn incr_counter(&self, key: &str, expires_at: Timestamp, now: Timestamp) -> Result<u64, StoreError>;

    /// The counter `key`'s value, 0 when it is missing or its `expires_at` is at or before
    /// `now`. A strongly consistent read: an increment that returned is always seen.
    async fn read_counter(&self, key: &str, now: Timestamp) -> Result<u64, StoreError>;
}

/// What [`MessageStore::admit`] counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Admission {
    /// Requests in the window, this one included.
    pub requests: u64,
    /// Open asks/tasks before this submit: exact, or an upper bound (see `admit`).
    pub open_before: u64,
}

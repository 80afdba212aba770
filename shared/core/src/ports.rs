//! Port traits: everything the use cases need from the outside world.

use std::time::Duration;

use async_trait::async_trait;
use ma2h_protocol::ids::{AccountId, AgentId, MessageId, ResolutionId, SessionId, key_part};
use ma2h_protocol::time::Timestamp;

use crate::listing::{ListFilter, ListPage, ListQuery, OpenCounts};
use crate::mailbox::{AckRecord, Audience, Claim, Claimer, Enqueued, Mailbox, MailboxEntry};
use crate::policy::AccountPolicy;
use crate::records::{
    Completion, CredentialRecord, IdempotencyRecord, Inserted, Lookup, MessageRecord, PrincipalId, PushTrack,
    TerminalWrite,
};
use crate::session::{Ended, Registered, SessionEnd, SessionRecord, StopRecord};

// Timestamps: stores keep whole milliseconds; the Hub clock yields millisecond precision so every
// record round-trips exactly.

/// A storage failure. Conflicts are not errors: they come back as [`Inserted::Existing`] /
/// [`Completion::AlreadyTerminal`], and the use cases map them to spec codes in one place.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("store unavailable: {0}")]
    Unavailable(String),
    #[error("store data corrupt: {0}")]
    Corrupt(String),
}

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
    /// reads already treat them as absent. Returns how many messages were purged.
    async fn purge(&self, now: Timestamp, limit: usize) -> Result<usize, StoreError>;

    /// One page of the operator listing for one account: at most `query.limit` summaries that
    /// pass `query.filter`, strictly after `query.after`, read in order from an index. Open: most
    /// urgent first, then oldest, then id. Terminal (delivered notifies included): newest
    /// `updated_at` first, then id descending. `next` is set when another matching row may
    /// follow: always when one does; a store that bounds the work of one page may also end a page
    /// early — shorter than `limit`, even empty — with `next` where it stopped.
    async fn list_messages(&self, account: &AccountId, query: &ListQuery) -> Result<ListPage, StoreError>;

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

/// Credentials (hashed) and per-agent sealed secrets.
#[async_trait]
pub trait CredentialStore: Send + Sync + 'static {
    async fn put_credential(&self, credential: &CredentialRecord) -> Result<(), StoreError>;
    async fn credential_by_hash(&self, key_hash: &str) -> Result<Option<CredentialRecord>, StoreError>;
    async fn credential_by_id(&self, id: &str) -> Result<Option<CredentialRecord>, StoreError>;
    async fn list_credentials(&self) -> Result<Vec<CredentialRecord>, StoreError>;
    /// One principal's credentials in `account`, active or not — what an answer arriving
    /// outside the API (a Slack press, an email link) checks on every use, so it must not read
    /// every credential. The default filters [`Self::list_credentials`] (fine for a local store);
    /// a store whose listing is a table scan keeps an index.
    async fn credentials_of(
        &self,
        account: &AccountId,
        principal: &PrincipalId,
    ) -> Result<Vec<CredentialRecord>, StoreError> {
        let mut all = self.list_credentials().await?;
        all.retain(|c| &c.account == account && &c.principal == principal);
        Ok(all)
    }
    /// Replace the revocation / expiry of an existing credential.
    async fn update_credential(&self, credential: &CredentialRecord) -> Result<(), StoreError>;

    /// Store an already-sealed secret for an agent under `name` (replacing any previous value).
    async fn put_secret(
        &self,
        account: &AccountId,
        agent: &AgentId,
        name: &str,
        sealed: &[u8],
    ) -> Result<(), StoreError>;
    async fn get_secret(&self, account: &AccountId, agent: &AgentId, name: &str)
    -> Result<Option<Vec<u8>>, StoreError>;
    /// Names of an agent's stored secrets (never values).
    async fn list_secrets(&self, account: &AccountId, agent: &AgentId) -> Result<Vec<String>, StoreError>;
    /// Remove one secret; `false` if it did not exist.
    async fn delete_secret(&self, account: &AccountId, agent: &AgentId, name: &str) -> Result<bool, StoreError>;

    /// The account's policy (§8.0 `inter_agent` opt-in, sender allowlists); `None` = defaults.
    async fn get_account_policy(&self, account: &AccountId) -> Result<Option<AccountPolicy>, StoreError>;
    /// Write `policy` iff the stored version is `policy.version - 1` (0 = none stored): a
    /// compare-and-set, so two concurrent admin edits never lose one. `false` if refused.
    async fn put_account_policy(&self, account: &AccountId, policy: &AccountPolicy) -> Result<bool, StoreError>;

    /// §9.4 callback bindings: hosts (lowercase, no port) an agent may receive pushes on.
    async fn put_binding(&self, account: &AccountId, agent: &AgentId, host: &str) -> Result<(), StoreError>;
    async fn delete_binding(&self, account: &AccountId, agent: &AgentId, host: &str) -> Result<bool, StoreError>;
    async fn list_bindings(&self, account: &AccountId, agent: &AgentId) -> Result<Vec<String>, StoreError>;

    /// An agent's callback bindings and sealed secrets together — what the §9.4 checks of a
    /// submit and of a push read. A store that keeps them side by side reads them at once (one
    /// DynamoDB `Query`); the default asks for each.
    async fn agent_material(&self, account: &AccountId, agent: &AgentId) -> Result<AgentMaterial, StoreError> {
        let bindings = self.list_bindings(account, agent).await?;
        let mut secrets = std::collections::HashMap::new();
        for name in self.list_secrets(account, agent).await? {
            if let Some(sealed) = self.get_secret(account, agent, &name).await? {
                secrets.insert(name, sealed);
            }
        }
        Ok(AgentMaterial { bindings, secrets })
    }
}

/// An agent's callback bindings (hosts) and its secrets (sealed), by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentMaterial {
    pub bindings: Vec<String>,
    pub secrets: std::collections::HashMap<String, Vec<u8>>,
}

/// The §8.7 agent mailbox and §15 presence.
#[async_trait]
pub trait MailboxStore: Send + Sync + 'static {
    /// Append `entry` iff fewer than `depth_cap` live entries (not closed, deadline not passed at
    /// `entry.enqueued_at`) of its audience are in its mailbox — so one audience (say, other
    /// agents' mail) can never crowd out another (the human's directives); otherwise write nothing.
    async fn enqueue(&self, entry: &MailboxEntry, depth_cap: u32) -> Result<Enqueued, StoreError>;

    /// Claim at most `max` live entries of `mailbox` visible at `now` (`visible_at <= now <=
    /// deadline`), oldest `visible_at` first. The claiming write sets `visible_at =
    /// invisible_until`, adds one delivery, sets `claimant` when `by.session` is given and —
    /// only when `by.evidence` (a drain, not a stream push, §8.7.2) — stamps `delivered_at` if
    /// unset, so no two claims return one entry before `invisible_until`, whatever runs
    /// concurrently. Only entries whose audience is one of `audiences` are considered.
    async fn claim(
        &self,
        mailbox: &Mailbox,
        audiences: &[Audience],
        by: &Claimer,
        now: Timestamp,
        invisible_until: Timestamp,
        max: usize,
    ) -> Result<Claim, StoreError>;

    /// Close as acked each of `keys` that is in `mailbox`, live at `ack.acked_at` and already
    /// returned at least once (`deliveries > 0`); returns the entries this call closed, as
    /// written. Every other key — unknown, another mailbox's, never returned, already acked,
    /// expired — is left unchanged and not returned (§8.7: an ack cannot fabricate a receipt nor
    /// reveal another mailbox).
    async fn ack_entries(
        &self,
        mailbox: &Mailbox,
        keys: &[String],
        ack: &AckRecord,
        retain_until: Timestamp,
    ) -> Result<Vec<MailboxEntry>, StoreError>;

    /// §14.2: close as `bounced` at `at` up to `limit` open entries of `mailbox` addressed to
    /// `session` whose deadline had not passed at `at`. Returns them as written; callers repeat
    /// until none is returned.
    async fn bounce_entries(
        &self,
        mailbox: &Mailbox,
        session: &SessionId,
        at: Timestamp,
        retain_until: Timestamp,
        limit: usize,
    ) -> Result<Vec<MailboxEntry>, StoreError>;

    /// One entry of the account by key, open or closed, until it is purged.
    async fn get_entry(&self, account: &AccountId, key: &str) -> Result<Option<MailboxEntry>, StoreError>;

    /// An agent's most recent entries (open or closed), newest first, at most `limit`.
    async fn recent_entries(&self, mailbox: &Mailbox, limit: usize) -> Result<Vec<MailboxEntry>, StoreError>;

    /// Close up to `limit` live entries whose deadline is before `now` (oldest deadline first, from
    /// an index — never a scan), keeping them readable until `retain_until`. The reason is
    /// `Deadline`, except a delivered entry for which
    /// [`MailboxEntry::orphaned_if_unacked_at_deadline`] held at enqueue (a directive or `message`
    /// whose deadline is the inbound retention): drained, never acked, never rescued — `Bounced`
    /// (§14.2). One that reached its own `expires_at` after delivery stays `delivered` (seen but
    /// unanswered). Returns them as written.
    async fn close_due_entries(
        &self,
        now: Timestamp,
        retain_until: Timestamp,
        limit: usize,
    ) -> Result<Vec<MailboxEntry>, StoreError>;

    /// Delete up to `limit` closed entries whose `retain_until` is at or before `now`, from an index.
    async fn purge_entries(&self, now: Timestamp, limit: usize) -> Result<usize, StoreError>;

    /// Record agent activity (§15.1); the stored `last_seen` never moves backwards.
    async fn touch_presence(&self, mailbox: &Mailbox, at: Timestamp) -> Result<(), StoreError>;

    async fn last_seen(&self, mailbox: &Mailbox) -> Result<Option<Timestamp>, StoreError>;
}

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

/// Hands a committed push obligation to the delivery worker (in-process wake-up locally; an SQS
/// message on AWS). Losing an enqueue loses nothing: the obligation is in the store and the
/// worker / sweeper finds it by its due time.
#[async_trait]
pub trait PushQueue: Send + Sync + 'static {
    async fn enqueue(&self, account: &AccountId, id: &MessageId) -> Result<(), QueueError>;

    /// Take the job of the terminal `resolution` is about to commit, *before* it commits — only
    /// a queue that keeps messages durably for longer than any retry can (SQS). `Ok(true)`: the
    /// queue holds it, so the obligation cannot be lost after the commit and needs no index; the
    /// consumer must then check that `resolution` is the terminal that committed (a job whose
    /// transition lost its CAS, or never committed, is dropped). `Ok(false)` (the default): the
    /// caller enqueues after the commit, as before.
    async fn announce(
        &self,
        _account: &AccountId,
        _id: &MessageId,
        _resolution: &ResolutionId,
        _at: Timestamp,
    ) -> Result<bool, QueueError> {
        Ok(false)
    }

    /// Hand a channel notification item (issue 20) to its worker at once. The default does
    /// nothing: the local worker polls the outbox's due index; SQS sends a job.
    async fn enqueue_notification(&self, _account: &AccountId, _id: &MessageId) -> Result<(), QueueError> {
        Ok(())
    }

    /// Take a *verified* Slack interaction (its JSON payload) to apply later, so the HTTP
    /// function can answer Slack within its 3 seconds whatever the store's latency (SQS on AWS).
    /// `Ok(false)` (the default): the caller applies it inline — the local Hub answers in
    /// milliseconds.
    async fn defer_interaction(&self, _account: &AccountId, _payload: &str) -> Result<bool, QueueError> {
        Ok(false)
    }
}

/// An announcement the queue did not take (the obligation stays in the store).
#[derive(Debug, thiserror::Error)]
#[error("push queue unavailable: {0}")]
pub struct QueueError(pub String);

/// The local [`PushQueue`]: wakes the in-process delivery worker.
#[derive(Debug, Default)]
pub struct WakeWorker(pub tokio::sync::Notify);

#[async_trait]
impl PushQueue for WakeWorker {
    async fn enqueue(&self, _account: &AccountId, _id: &MessageId) -> Result<(), QueueError> {
        self.0.notify_one();
        Ok(())
    }
}

/// The Hub clock (§9.5: authoritative for expiry).
pub trait Clock: Send + Sync + 'static {
    fn now(&self) -> Timestamp;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        // Millisecond precision: what the stores keep, so records round-trip exactly.
        ma2h_protocol::time::from_millis(chrono::Utc::now().timestamp_millis())
    }
}

/// Randomness for ids, keys and secrets.
pub trait Random: Send + Sync + 'static {
    fn fill(&self, buf: &mut [u8]);
}

/// The operating system's CSPRNG, read 512 bytes at a time per thread: every id used to cost a
/// `getrandom` system call (1.2 % of a submit's CPU). Each byte is handed out once and only by
/// the thread that read it; requests over 64 bytes go to the OS directly.
#[derive(Debug, Clone, Copy, Default)]
pub struct OsRandom;

const POOL_BYTES: usize = 512;

thread_local! {
    /// Unused OS random bytes and where the unused part starts.
    static POOL: std::cell::RefCell<([u8; POOL_BYTES], usize)> = const { std::cell::RefCell::new(([0; POOL_BYTES], POOL_BYTES)) };
}

impl Random for OsRandom {
    fn fill(&self, buf: &mut [u8]) {
        if buf.len() > 64 {
            getrandom::fill(buf).expect("the OS random source is unavailable");
            return;
        }
        POOL.with_borrow_mut(|(pool, used)| {
            if POOL_BYTES - *used < buf.len() {
                getrandom::fill(pool).expect("the OS random source is unavailable");
                *used = 0;
            }
            let take = &mut pool[*used..*used + buf.len()];
            buf.copy_from_slice(take);
            take.fill(0); // never handed out twice, nor left readable
            *used += buf.len();
        });
    }
}

/// How a long-poll learns that a message changed (§8.2 `?wait=`).
///
/// Subscribe BEFORE reading the store, then wait: a change committed between the read and the
/// wait still wakes the waiter (no lost wake-ups).
pub trait ChangeFeed: Send + Sync + 'static {
    fn subscribe(&self, id: &MessageId) -> Box<dyn Subscription>;
    /// Announce that `id` changed (after the store committed).
    fn publish(&self, id: &MessageId);
    /// Interest in a mailbox: woken when an entry is enqueued (§8.7 `?wait=`).
    fn subscribe_mailbox(&self, mailbox: &Mailbox) -> Box<dyn Subscription>;
    /// Announce an enqueue into `mailbox` (after the store committed).
    fn publish_mailbox(&self, mailbox: &Mailbox);
    /// The server is shutting down: release every waiter now, and make later waits return at
    /// once, so parked long-polls answer with the current body instead of holding the exit.
    fn close(&self) {}
    /// Whether [`ChangeFeed::close`] was called.
    fn closing(&self) -> bool {
        false
    }
}

/// One pending interest in a message.
#[async_trait]
pub trait Subscription: Send {
    /// Resolve when the message is announced, or after at most `timeout`. Implementations that
    /// cannot be woken across processes (e.g. Lambda) return after a short poll interval instead;
    /// callers re-read the store either way.
    async fn wait(self: Box<Self>, timeout: Duration);
}

/// A clock tests move by hand.
#[derive(Debug)]
pub struct ManualClock(std::sync::Mutex<Timestamp>);

impl ManualClock {
    pub fn new(start: Timestamp) -> Self {
        Self(std::sync::Mutex::new(start))
    }
    pub fn set(&self, t: Timestamp) {
        *self.0.lock().expect("clock poisoned") = t;
    }
    pub fn advance(&self, by: chrono::Duration) {
        let mut t = self.0.lock().expect("clock poisoned");
        *t += by;
    }
}

impl Clock for ManualClock {
    fn now(&self) -> Timestamp {
        *self.0.lock().expect("clock poisoned")
    }
}

/// One signed push of a §6 Response to an agent's callback URL (§8.3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushRequest {
    pub url: String,
    /// Extra headers: `MA2H-Signature`, and `Authorization`/`X-API-Key` for bearer/apikey.
    pub headers: Vec<(String, String)>,
    /// The JSON body (the §6 Response).
    pub body: Vec<u8>,
}

/// What one delivery attempt came to. Only `Retry` is retried (§8.3: 5xx / network / timeout).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PushOutcome {
    /// 2xx.
    Delivered { status: u16 },
    /// 4xx: the receiver refused; never retried.
    Rejected { status: u16 },
    /// 5xx, network error, timeout: retry with backoff.
    Retry { reason: String },
    /// The egress guard refused the destination (§9.4: private/link-local/metadata address,
    /// scheme, redirect…); never retried.
    Refused { reason: String },
}

/// Sends pushes. The HTTP adapter enforces the §9.4 egress rules at delivery time.
#[async_trait]
pub trait PushSender: Send + Sync + 'static {
    async fn send(&self, request: &PushRequest) -> PushOutcome;

    /// As [`Self::send`], also returning the first bytes of a 2xx answer's body (Slack's Web API
    /// answers 200 with `{"ok": false, …}` when it refuses). The default reads nothing.
    async fn send_reading(&self, request: &PushRequest) -> (PushOutcome, Vec<u8>) {
        (self.send(request).await, Vec::new())
    }
}

/// One email to send through an SMTP relay (issue 20's email channel).
#[derive(Clone, PartialEq, Eq)]
pub struct Mail {
    pub host: String,
    pub port: u16,
    pub security: crate::channels::SmtpSecurity,
    pub username: Option<String>,
    /// Opened from its sealed form for this send only; never logged.
    pub password: Option<String>,
    pub from: String,
    pub to: String,
    pub subject: String,
    pub text: String,
    pub html: String,
}

impl std::fmt::Debug for Mail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mail")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("to", &self.to)
            .finish_non_exhaustive()
    }
}

/// Why a mail was not sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MailError {
    /// Worth another attempt (connection refused, timeout, a 4xx SMTP reply).
    #[error("{0}")]
    Retry(String),
    /// Never (a 5xx SMTP reply, an address that does not parse, TLS refused).
    #[error("{0}")]
    Permanent(String),
}

/// Sends mail (the SMTP adapter; tests record).
#[async_trait]
pub trait MailSender: Send + Sync + 'static {
    async fn send(&self, mail: &Mail) -> Result<(), MailError>;
}

#[cfg(test)]
mod tests {
    use super::{OsRandom, Random};

    #[test]
    fn os_random_never_hands_out_the_same_bytes_twice_across_pool_refills() {
        let mut seen = std::collections::HashSet::new();
        for _ in 0..2_000 {
            // 10 bytes: what an id takes; 2,000 draws cross the 512-byte pool ~40 times
            let mut b = [0u8; 10];
            OsRandom.fill(&mut b);
            assert!(seen.insert(b), "a 10-byte draw repeated: {b:?}");
        }
        let (mut big, mut big2) = ([0u8; 100], [0u8; 100]);
        OsRandom.fill(&mut big);
        OsRandom.fill(&mut big2);
        assert_ne!(big, big2);
        assert_ne!(big, [0u8; 100]);
    }
}

//! Connection setup and schema migrations.
//!
//! Every connection gets `foreign_keys=ON`, a busy timeout and a statement cache. The database
//! runs in WAL mode with `synchronous=FULL`: a transaction is on disk before `COMMIT` returns, and
//! the Hub acknowledges only after the commit, so a `kill -9` (or power loss) never loses an
//! acknowledged message or resolution (§3.1).
//!
//! Migrations are numbered by `PRAGMA user_version`: migration *n* (1-based) moves the schema from
//! version *n − 1* to *n*. They run at open inside one `IMMEDIATE` transaction together with the
//! version bump, so they are idempotent and a crash mid-migration leaves the previous version.

use std::time::Duration;

use rusqlite::{Connection, TransactionBehavior};

use crate::codec::DbError;

/// How long a statement waits for another process's lock before reporting `Unavailable`.
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// The size (bytes) a restarted WAL file is truncated back to: well above the 256 MiB at which
/// the writer restarts it (`wal::WalLimits`), so a steady load does not truncate and regrow the
/// file on every restart (measured: that doubled the restart pause).
const WAL_SIZE_LIMIT: i64 = 512 << 20;

/// Prepared statements kept per connection (`prepare_cached`).
const STATEMENT_CACHE: usize = 64;

/// The schema version this build writes (`PRAGMA user_version`).
pub const SCHEMA_VERSION: u32 = MIGRATIONS.len() as u32;

/// Ordered migrations; index 0 is version 1. Append only — never edit a shipped migration.
/// Public so tests can build a database as an older release left it.
pub const MIGRATIONS: &[&str] = &[V1, V2, V3, V4, V5, V6, V7, V8, V9, V10, V11, V12, V13, V14, V15, V16, V17];

/// Version 1: messages (§7 lifecycle, §8.2 retention), tombstones (410), idempotency claims
/// (§8.1), rate counters (§8.6), credentials and sealed secrets.
const V1: &str = r#"
CREATE TABLE messages (
    id            TEXT    NOT NULL PRIMARY KEY,
    account       TEXT    NOT NULL,
    agent_id      TEXT    NOT NULL,
    kind          TEXT    NOT NULL,
    status        TEXT    NOT NULL,
    priority      TEXT    NOT NULL,
    title         TEXT    NOT NULL,
    envelope      TEXT    NOT NULL,
    created_at    INTEGER NOT NULL,
    expires_at    INTEGER,
    updated_at    INTEGER NOT NULL,
    response      TEXT,
    resolution_id TEXT,
    retain_until  INTEGER
) STRICT;

-- The expiry index (§7): only open messages with a deadline, ordered by the deadline, so the
-- sweeper's due_expiries is an index range read, never a scan.
CREATE INDEX messages_due ON messages (status, expires_at)
    WHERE status = 'open' AND expires_at IS NOT NULL;
-- §8.6 inbox depth: count_open reads this index only (kind is included to make it covering).
CREATE INDEX messages_by_agent ON messages (account, agent_id, status, kind);
-- The operator's open listing.
CREATE INDEX messages_by_status ON messages (account, status, created_at);
-- The operator's recent-resolutions listing, newest first.
CREATE INDEX messages_recent ON messages (account, updated_at) WHERE status <> 'open';
-- §8.2 retention: purge walks rows whose retain_until passed.
CREATE INDEX messages_retain ON messages (retain_until) WHERE retain_until IS NOT NULL;

-- §8.2: a purged message answers 410, and only to its submitter (others still see 404).
CREATE TABLE tombstones (
    id         TEXT    NOT NULL PRIMARY KEY,
    account    TEXT    NOT NULL,
    agent_id   TEXT    NOT NULL,
    deleted_at INTEGER NOT NULL
) STRICT;

-- §8.1: (account, agent.id, idempotency_key) → the message it created.
CREATE TABLE idempotency (
    account     TEXT    NOT NULL,
    agent_id    TEXT    NOT NULL,
    key         TEXT    NOT NULL,
    message_id  TEXT    NOT NULL,
    fingerprint TEXT    NOT NULL,
    expires_at  INTEGER NOT NULL,
    PRIMARY KEY (account, agent_id, key)
) STRICT;
CREATE INDEX idempotency_expiry ON idempotency (expires_at);

-- §8.6 fixed-window request counters.
CREATE TABLE counters (
    key        TEXT    NOT NULL PRIMARY KEY,
    value      INTEGER NOT NULL,
    expires_at INTEGER NOT NULL
) STRICT;
CREATE INDEX counters_expiry ON counters (expires_at);

-- API credentials: only the SHA-256 of a key is stored.
CREATE TABLE credentials (
    id             TEXT    NOT NULL PRIMARY KEY,
    key_hash       TEXT    NOT NULL UNIQUE,
    account        TEXT    NOT NULL,
    principal_kind TEXT    NOT NULL,
    principal_name TEXT    NOT NULL,
    label          TEXT,
    created_at     INTEGER NOT NULL,
    expires_at     INTEGER,
    revoked_at     INTEGER
) STRICT;

-- Per-agent secrets, already sealed under the master key by the caller.
CREATE TABLE secrets (
    account  TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    name     TEXT NOT NULL,
    sealed   BLOB NOT NULL,
    PRIMARY KEY (account, agent_id, name)
) STRICT;
"#;

/// Version 2: the push outbox (§8.3) as columns of the message row — written by the same UPDATE
/// as the terminal transition, so a crash can never separate them (§3.1) — plus §9.4 callback
/// bindings.
const V2: &str = r#"
ALTER TABLE messages ADD COLUMN push_status TEXT;
ALTER TABLE messages ADD COLUMN push_attempts INTEGER NOT NULL DEFAULT 0;
ALTER TABLE messages ADD COLUMN push_next_at INTEGER;
ALTER TABLE messages ADD COLUMN push_last_error TEXT;
ALTER TABLE messages ADD COLUMN push_delivered_at INTEGER;
-- The delivery worker claims due pushes by this index (never a scan).
CREATE INDEX messages_push_due ON messages (push_next_at) WHERE push_status = 'pending';

-- §9.4: hosts an agent may receive push callbacks on (operator-approved).
CREATE TABLE bindings (
    account  TEXT NOT NULL,
    agent_id TEXT NOT NULL,
    host     TEXT NOT NULL,
    PRIMARY KEY (account, agent_id, host)
) STRICT;
"#;

/// Version 3: `state` as submitted, for the rare message whose parsed copy lost precision.
const V3: &str = "ALTER TABLE messages ADD COLUMN state_text TEXT;";

/// Version 4: the operator listing answered by indexes (filters, counts and keyset pages):
/// `agent.project` and the tags as columns (backfilled), the priority rank as a generated column,
/// and the open/terminal listing indexes in the listing's order, with the agent variants.
const V4: &str = r#"
ALTER TABLE messages ADD COLUMN project TEXT;
-- A JSON array of the string tags; NULL when none.
ALTER TABLE messages ADD COLUMN tags TEXT;
ALTER TABLE messages ADD COLUMN prank INTEGER GENERATED ALWAYS AS
    (CASE priority WHEN 'urgent' THEN 0 WHEN 'high' THEN 1 WHEN 'normal' THEN 2 ELSE 3 END) VIRTUAL;
UPDATE messages SET
    project = json_extract(envelope, '$.agent.project'),
    tags = (SELECT CASE WHEN COUNT(*) = 0 THEN NULL ELSE json_group_array(value) END
            FROM json_each(messages.envelope, '$.tags') WHERE type = 'text');
DROP INDEX messages_by_status;
DROP INDEX messages_recent;
CREATE INDEX messages_open_list ON messages (account, prank, created_at, id) WHERE status = 'open';
CREATE INDEX messages_open_agent ON messages (account, agent_id, prank, created_at, id) WHERE status = 'open';
CREATE INDEX messages_done_list ON messages (account, updated_at, id) WHERE status <> 'open';
CREATE INDEX messages_done_agent ON messages (account, agent_id, updated_at, id) WHERE status <> 'open';
"#;

/// Version 5: the §8.7 agent mailbox (entries of every §8.7.1 kind, in first-enqueue order) and
/// §15 presence. Partial indexes serve the claim (live entries by visibility), the sweeper's
/// expiry and purge, and an agent's history.
const V5: &str = r#"
CREATE TABLE mailbox (
    seq           INTEGER PRIMARY KEY AUTOINCREMENT,
    account       TEXT NOT NULL,
    entry_key     TEXT NOT NULL,
    agent_id      TEXT NOT NULL,
    kind          TEXT NOT NULL,
    audience      TEXT NOT NULL,
    payload       TEXT NOT NULL,
    author        TEXT NOT NULL,
    enqueued_at   INTEGER NOT NULL,
    visible_at    INTEGER NOT NULL,
    deadline      INTEGER NOT NULL,
    deliveries    INTEGER NOT NULL DEFAULT 0,
    delivered_at  INTEGER,
    closed_at     INTEGER,
    closed_reason TEXT,
    ack_by        TEXT,
    ack_note      TEXT,
    retain_until  INTEGER,
    UNIQUE (account, entry_key)
);
CREATE INDEX mailbox_ready ON mailbox (account, agent_id, visible_at, seq) WHERE closed_at IS NULL;
CREATE INDEX mailbox_due ON mailbox (deadline) WHERE closed_at IS NULL;
CREATE INDEX mailbox_retain ON mailbox (retain_until) WHERE retain_until IS NOT NULL;
CREATE INDEX mailbox_history ON mailbox (account, agent_id, seq);
-- §14: the submitter's first read of a terminal Response, and its acknowledgment.
ALTER TABLE messages ADD COLUMN delivered_at INTEGER;
ALTER TABLE messages ADD COLUMN ack_by TEXT;
ALTER TABLE messages ADD COLUMN ack_at INTEGER;
ALTER TABLE messages ADD COLUMN ack_note TEXT;
CREATE TABLE presence (
    account   TEXT NOT NULL,
    agent_id  TEXT NOT NULL,
    last_seen INTEGER NOT NULL,
    PRIMARY KEY (account, agent_id)
) WITHOUT ROWID;
"#;

/// Version 6: §16 sessions (lease, terminal, the pending-bounce outbox flag) and the §16.4.1
/// durable stop records, which live apart from session rows so no purge touches them.
const V6: &str = r#"
CREATE TABLE sessions (
    account        TEXT    NOT NULL,
    id             TEXT    NOT NULL,
    agent_id       TEXT    NOT NULL,
    created_at     INTEGER NOT NULL,
    expires_at     INTEGER NOT NULL,
    ttl_seconds    INTEGER NOT NULL,
    last_seen      INTEGER,
    meta           TEXT    NOT NULL,
    end_kind       TEXT,
    ended_at       INTEGER,
    retain_until   INTEGER,
    bounce_pending INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (account, id)
) STRICT, WITHOUT ROWID;
CREATE INDEX sessions_by_agent ON sessions (account, agent_id, created_at);
CREATE INDEX sessions_by_account ON sessions (account, created_at);
CREATE INDEX sessions_due ON sessions (expires_at) WHERE end_kind IS NULL;
CREATE INDEX sessions_bounce ON sessions (ended_at) WHERE bounce_pending = 1;
CREATE INDEX sessions_retain ON sessions (retain_until) WHERE retain_until IS NOT NULL;
CREATE TABLE stops (
    account    TEXT    NOT NULL,
    agent_id   TEXT    NOT NULL,
    stopped_by TEXT    NOT NULL,
    stopped_at INTEGER NOT NULL,
    session_id TEXT,
    PRIMARY KEY (account, agent_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX mailbox_audience ON mailbox (account, agent_id, audience, seq) WHERE closed_at IS NULL;
"#;

/// Version 7: the inter-agent leg — the claiming session of a mailbox entry (a principal-addressed
/// orphan's receipt names it, §14.2) and the per-account policy document (§8.0 opt-in, sender
/// allowlists), versioned for compare-and-set edits.
const V7: &str = r#"
ALTER TABLE mailbox ADD COLUMN claimant TEXT;
CREATE TABLE account_policy (
    account TEXT    NOT NULL PRIMARY KEY,
    version INTEGER NOT NULL,
    policy  TEXT    NOT NULL
) STRICT, WITHOUT ROWID;
"#;

/// Version 8: idempotency claims in arrival order, without the `(account, agent_id, key)` index
/// (agents' keys are random: every claim dirtied a random page of it, most of what a group
/// commit wrote). The key → row map lives in memory (`claims`); the table keeps the rows and
/// the expiry index the purge walks.
const V8: &str = r#"
CREATE TABLE idempotency_v8 (
    account     TEXT    NOT NULL,
    agent_id    TEXT    NOT NULL,
    key         TEXT    NOT NULL,
    message_id  TEXT    NOT NULL,
    fingerprint TEXT    NOT NULL,
    expires_at  INTEGER NOT NULL
) STRICT;
INSERT INTO idempotency_v8 (account, agent_id, key, message_id, fingerprint, expires_at)
    SELECT account, agent_id, key, message_id, fingerprint, expires_at FROM idempotency ORDER BY rowid;
DROP TABLE idempotency;
ALTER TABLE idempotency_v8 RENAME TO idempotency;
CREATE INDEX idempotency_expiry ON idempotency (expires_at);
"#;

/// Version 9: `messages_by_agent` goes — the inbox-depth count reads the open-listing index
/// (`messages_open_agent`), so each new message maintains one index fewer.
const V9: &str = "DROP INDEX messages_by_agent;";

/// Version 10: the channel notification outbox (issue 20) — one row per announced message, its
/// steps as JSON text; the worker finds due rows by `next_due`, the sweeper expired ones by
/// `retain_until` (both partial indexes: only rows that have one). `lease_until` is the claim's
/// lease, apart from `next_due` so a terminal's wake-up never breaks it.
const V10: &str = r#"
CREATE TABLE notifications (
    account      TEXT    NOT NULL,
    message_id   TEXT    NOT NULL,
    version      INTEGER NOT NULL,
    created_at   INTEGER NOT NULL,
    next_due     INTEGER,
    lease_until  INTEGER,
    retain_until INTEGER,
    route        TEXT    NOT NULL,
    steps        TEXT    NOT NULL,
    PRIMARY KEY (account, message_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX notifications_due ON notifications (next_due) WHERE next_due IS NOT NULL;
CREATE INDEX notifications_retain ON notifications (retain_until) WHERE retain_until IS NOT NULL;
"#;

/// Version 11: whether a mailbox entry, left delivered-but-unacked at its deadline, is an orphan
/// (§14.2: `bounced`, prior `delivered`) — a command entry whose deadline is the inbound
/// retention, not its own `expires_at` (`MailboxEntry::orphaned_if_unacked_at_deadline`, written
/// at enqueue). Rows from before take the rule with the payload's `expires_at` standing for the
/// deadline (one later than the retention was rare).
const V11: &str = r#"
ALTER TABLE mailbox ADD COLUMN orphanable INTEGER NOT NULL DEFAULT 0;
UPDATE mailbox SET orphanable = 1
    WHERE kind IN ('directive', 'message') AND json_extract(payload, '$.expires_at') IS NULL;
"#;

/// Version 12 (issue 39): triage — one row per message an operator claimed, snoozed or viewed
/// (`data` is the JSON of `TriageData`), replaced by compare-and-set on `version`; and the
/// full-text index of titles and bodies for the inbox's search (`message_text`, FTS5, one row
/// per message, deleted with it). Messages from before are indexed now.
const V12: &str = r#"
CREATE TABLE triage (
    account      TEXT    NOT NULL,
    message_id   TEXT    NOT NULL,
    version      INTEGER NOT NULL,
    data         TEXT    NOT NULL,
    retain_until INTEGER NOT NULL,
    PRIMARY KEY (account, message_id)
) STRICT, WITHOUT ROWID;
CREATE INDEX triage_retain ON triage (retain_until);

CREATE VIRTUAL TABLE message_text USING fts5(title, body, tokenize = 'unicode61 remove_diacritics 0');
CREATE TRIGGER message_text_insert AFTER INSERT ON messages BEGIN
    INSERT INTO message_text (rowid, title, body) VALUES (new.rowid, new.title,
        CASE WHEN json_extract(new.envelope, '$.sensitive') THEN '' ELSE
            coalesce(json_extract(new.envelope, '$.body'), '') || ' ' ||
            coalesce(json_extract(new.envelope, '$.action.instructions'), '') END);
END;
CREATE TRIGGER message_text_delete AFTER DELETE ON messages BEGIN
    DELETE FROM message_text WHERE rowid = old.rowid;
END;
INSERT INTO message_text (rowid, title, body)
    SELECT rowid, title, CASE WHEN json_extract(envelope, '$.sensitive') THEN '' ELSE
        coalesce(json_extract(envelope, '$.body'), '') || ' ' ||
        coalesce(json_extract(envelope, '$.action.instructions'), '') END
    FROM messages;
"#;

/// Version 13 (issue 40): standing grants — found by (account, agent, key) at submit, listed
/// by account, purged a while after they were revoked or expired. `data` is the grant's JSON;
/// the use count and the revocation are columns so that counting a use never rewrites a
/// revocation.
const V13: &str = r#"
CREATE TABLE grants (
    account      TEXT    NOT NULL,
    id           TEXT    NOT NULL,
    agent_id     TEXT    NOT NULL,
    grant_key    TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    retain_until INTEGER,
    uses         INTEGER NOT NULL DEFAULT 0,
    last_used_at INTEGER,
    revoked_at   INTEGER,
    revoked_by   TEXT,
    data         TEXT    NOT NULL,
    PRIMARY KEY (account, id)
) STRICT, WITHOUT ROWID;
CREATE INDEX grants_lookup ON grants (account, agent_id, grant_key);
CREATE INDEX grants_recent ON grants (account, created_at);
CREATE INDEX grants_retain ON grants (retain_until) WHERE retain_until IS NOT NULL;
"#;

/// Version 14 (issue 40): when each operator was last active in the inbox or a channel — read
/// by on-call ladders and the team listing. One row per operator, moved forward only.
const V14: &str = r#"
CREATE TABLE operator_seen (
    account   TEXT    NOT NULL,
    human     TEXT    NOT NULL,
    last_seen INTEGER NOT NULL,
    PRIMARY KEY (account, human)
) STRICT, WITHOUT ROWID;
"#;

/// Version 15 (issue 41): operators' Web Push devices — the subscription sealed, only the push
/// service's host in clear.
const V15: &str = r#"
CREATE TABLE devices (
    account    TEXT    NOT NULL,
    human      TEXT    NOT NULL,
    id         TEXT    NOT NULL,
    label      TEXT    NOT NULL,
    created_at INTEGER NOT NULL,
    push_host  TEXT    NOT NULL,
    sealed     TEXT    NOT NULL,
    PRIMARY KEY (account, human, id)
) STRICT, WITHOUT ROWID;
"#;

/// Version 16 (issue 41): operators' passkeys, keyed by the credential id (a login names no
/// operator), listed per operator.
const V16: &str = r#"
CREATE TABLE passkeys (
    id           TEXT    NOT NULL PRIMARY KEY,
    account      TEXT    NOT NULL,
    human        TEXT    NOT NULL,
    name         TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    last_used_at INTEGER,
    state        TEXT    NOT NULL
) STRICT, WITHOUT ROWID;
CREATE INDEX passkeys_of ON passkeys (account, human, created_at);
"#;

/// Issue 42: the audit ledger — entries per (account, shard) in sort-key order (`{at ms}#{id}`),
/// and the signed checkpoints per (account, seq). Never purged with messages.
const V17: &str = r#"
CREATE TABLE audit_entries (
    account  TEXT    NOT NULL,
    shard    INTEGER NOT NULL,
    sort_key TEXT    NOT NULL,
    at       INTEGER NOT NULL,
    data     TEXT    NOT NULL,
    PRIMARY KEY (account, shard, sort_key)
) STRICT, WITHOUT ROWID;
CREATE TABLE audit_checkpoints (
    account TEXT    NOT NULL,
    seq     INTEGER NOT NULL,
    at      INTEGER NOT NULL,
    data    TEXT    NOT NULL,
    PRIMARY KEY (account, seq)
) STRICT, WITHOUT ROWID;
"#;

/// What the writer connection actually runs with, read back after configuring it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoreSettings {
    /// `wal` for a file, `memory` for an in-memory database.
    pub journal_mode: String,
    /// `PRAGMA synchronous`: 2 = FULL.
    pub synchronous: i64,
    pub foreign_keys: bool,
    pub schema_version: u32,
}

/// Per-connection settings shared by the writer and the readers.
pub(crate) fn configure(conn: &Connection) -> Result<(), DbError> {
    conn.busy_timeout(BUSY_TIMEOUT)?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    conn.pragma_update(None, "foreign_keys", true)?;
    conn.pragma_update(None, "synchronous", "FULL")?;
    Ok(())
}

/// Configure the writer: WAL + FULL sync (§3.1), then bring the schema up to date.
pub(crate) fn prepare_writer(conn: &mut Connection) -> Result<StoreSettings, DbError> {
    configure(conn)?;
    let journal_mode: String = conn.pragma_update_and_check(None, "journal_mode", "WAL", |r| r.get(0))?;
    // Checkpoints run on their own thread (see `checkpoint`), never inside a commit; the writer
    // restarts the WAL between batches (see `wal`).
    conn.pragma_update(None, "wal_autocheckpoint", 0)?;
    // A WAL that a burst grew past this is cut back to it when the log restarts.
    conn.pragma_update(None, "journal_size_limit", WAL_SIZE_LIMIT)?;
    let schema_version = migrate(conn)?;
    Ok(StoreSettings {
        journal_mode: journal_mode.to_ascii_lowercase(),
        synchronous: conn.pragma_query_value(None, "synchronous", |r| r.get(0))?,
        foreign_keys: conn.pragma_query_value(None, "foreign_keys", |r| r.get(0))?,
        schema_version,
    })
}

/// A read-only pool connection.
pub(crate) fn prepare_reader(conn: &Connection) -> Result<(), DbError> {
    configure(conn)?;
    conn.pragma_update(None, "query_only", true)?;
    Ok(())
}

/// Apply every migration newer than the database's `user_version`; returns the final version.
pub(crate) fn migrate(conn: &mut Connection) -> Result<u32, DbError> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let current: i64 = tx.pragma_query_value(None, "user_version", |r| r.get(0))?;
    let current = u32::try_from(current).map_err(|_| DbError::Corrupt(format!("negative schema version {current}")))?;
    if current > SCHEMA_VERSION {
        return Err(DbError::Unavailable(format!(
            "database schema version {current} is newer than this build supports ({SCHEMA_VERSION})"
        )));
    }
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(current as usize) {
        let version = index + 1;
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", version as i64)?;
        tracing::info!(version, "sqlite store: applied schema migration");
    }
    tx.commit()?;
    Ok(SCHEMA_VERSION)
}

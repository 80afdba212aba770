//! The SQL the adapter runs, in one place. Public so tests (and operators) can inspect query plans,
//! e.g. that [`DUE_EXPIRIES`] is an index range read (`EXPLAIN QUERY PLAN`).

/// The message columns, in the order [`crate::messages`] decodes them.
macro_rules! message_columns {
    () => {
        "id, account, agent_id, kind, status, priority, title, envelope, created_at, expires_at, \
         updated_at, response, resolution_id, retain_until, push_status, push_attempts, push_next_at, \
         push_last_error, push_delivered_at, state_text"
    };
}

/// The listing's `project` and `tags` columns (`crate::listing`) are written with the row.
pub const INSERT_MESSAGE: &str = concat!(
    "INSERT INTO messages (",
    message_columns!(),
    ", project, tags) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16, ?17, ?18, \
     ?19, ?20, ?21, ?22)"
);

/// One message, always scoped to its account (another account's id reads as unknown, §9.1).
/// The §14 receipt columns follow (never written by an insert).
pub const GET_MESSAGE: &str = concat!(
    "SELECT ",
    message_columns!(),
    ", delivered_at, ack_by, ack_at, ack_note FROM messages WHERE account = ?1 AND id = ?2"
);

/// §14.2: the submitter's first read of a terminal ask/task stamps delivery, once.
pub const MARK_DELIVERED: &str = "UPDATE messages SET delivered_at = ?3 \
     WHERE account = ?1 AND id = ?2 AND status <> 'open' AND kind <> 'notify' AND delivered_at IS NULL";

/// §14.1: the first ack of a delivered Response wins.
pub const ACK_RESPONSE: &str = "UPDATE messages SET ack_by = ?3, ack_at = ?4, ack_note = ?5 \
     WHERE account = ?1 AND id = ?2 AND status <> 'open' AND kind <> 'notify' AND ack_at IS NULL \
     AND (delivered_at IS NOT NULL OR push_status = 'delivered')";

pub const GET_TOMBSTONE: &str = "SELECT agent_id FROM tombstones WHERE account = ?1 AND id = ?2";

/// The §7 compare-and-set: only an `open` message takes a terminal write.
/// With `?9`, the same UPDATE writes the pending push obligation (the outbox, §3.1).
pub const COMPLETE: &str = "UPDATE messages SET status = ?1, response = ?2, resolution_id = ?3, updated_at = ?4, \
     retain_until = ?5, \
     push_status = CASE WHEN ?9 THEN 'pending' ELSE push_status END, \
     push_next_at = CASE WHEN ?9 THEN ?4 ELSE push_next_at END \
     WHERE account = ?6 AND id = ?7 AND status = 'open' \
     AND (?8 OR expires_at IS NULL OR ?4 <= expires_at)";

/// Claim due pushes: move each one's due time to the lease end in the same statement (a range
/// read of `messages_push_due`).
pub const CLAIM_PUSHES: &str = "UPDATE messages SET push_next_at = ?2 WHERE rowid IN ( \
     SELECT rowid FROM messages WHERE push_status = 'pending' AND push_next_at <= ?1 \
     ORDER BY push_next_at LIMIT ?3) RETURNING account, id";

pub const RECORD_PUSH: &str = "UPDATE messages SET push_status = ?3, push_attempts = ?4, push_next_at = ?5, \
     push_last_error = ?6, push_delivered_at = ?7 WHERE account = ?1 AND id = ?2";

/// Open messages due at `?1`, earliest deadline first — a range read of `messages_due`.
pub const DUE_EXPIRIES: &str = "SELECT account, id FROM messages \
     WHERE status = 'open' AND expires_at IS NOT NULL AND expires_at <= ?1 \
     ORDER BY expires_at LIMIT ?2";

/// §8.6 inbox depth: open asks/tasks of one agent. Only asks and tasks are ever `open` (a
/// notify is terminal on acceptance, §7), so the open-listing index answers it alone.
pub const COUNT_OPEN: &str = "SELECT COUNT(*) FROM messages \
     WHERE account = ?1 AND agent_id = ?2 AND status = 'open'";

// The operator listing's statements are built per filter combination: see `crate::listing`.

/// Messages past retention at `?1` (§8.2), oldest first.
pub const PURGEABLE: &str = "SELECT id, account, agent_id FROM messages \
     WHERE retain_until IS NOT NULL AND retain_until <= ?1 ORDER BY retain_until LIMIT ?2";

pub const INSERT_TOMBSTONE: &str =
    "INSERT OR IGNORE INTO tombstones (id, account, agent_id, deleted_at) VALUES (?1, ?2, ?3, ?4)";

pub const DELETE_MESSAGE: &str = "DELETE FROM messages WHERE id = ?1";

/// Expired claims, oldest first, deleted; what went (for the in-memory index, `claims`).
pub const PURGE_CLAIMS: &str = "DELETE FROM idempotency WHERE rowid IN \
     (SELECT rowid FROM idempotency WHERE expires_at <= ?1 ORDER BY expires_at LIMIT ?2) \
     RETURNING rowid, account, agent_id, key";

pub const PURGE_COUNTERS: &str =
    "DELETE FROM counters WHERE rowid IN (SELECT rowid FROM counters WHERE expires_at <= ?1 LIMIT ?2)";

/// The live claims' keys, oldest first (the newest row of a key is read last).
pub const LIVE_CLAIM_KEYS: &str =
    "SELECT rowid, account, agent_id, key FROM idempotency WHERE expires_at > ?1 ORDER BY rowid";

/// One claim row by rowid (the in-memory index's target).
pub const CLAIM_BY_ROWID: &str =
    "SELECT account, agent_id, key, message_id, fingerprint, expires_at FROM idempotency WHERE rowid = ?1";

/// Append a claim (the caller found no live claim for the key in the same transaction).
pub const INSERT_CLAIM: &str = "INSERT INTO idempotency (account, agent_id, key, message_id, fingerprint, expires_at) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6)";

/// A live counter's value.
pub const READ_COUNTER: &str = "SELECT value FROM counters WHERE key = ?1 AND expires_at > ?2";

/// Add one (restarting at 1 with the new expiry if the stored window expired at `?3`).
pub const INCR_COUNTER: &str = "INSERT INTO counters (key, value, expires_at) VALUES (?1, 1, ?2) \
     ON CONFLICT (key) DO UPDATE SET \
     value = CASE WHEN counters.expires_at <= ?3 THEN 1 ELSE counters.value + 1 END, \
     expires_at = CASE WHEN counters.expires_at <= ?3 THEN excluded.expires_at ELSE counters.expires_at END \
     RETURNING value";

macro_rules! credential_columns {
    () => {
        "id, key_hash, account, principal_kind, principal_name, label, created_at, expires_at, revoked_at"
    };
}

pub const PUT_CREDENTIAL: &str = concat!(
    "INSERT INTO credentials (",
    credential_columns!(),
    ") VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT (id) DO UPDATE SET \
     key_hash = excluded.key_hash, account = excluded.account, principal_kind = excluded.principal_kind, \
     principal_name = excluded.principal_name, label = excluded.label, created_at = excluded.created_at, \
     expires_at = excluded.expires_at, revoked_at = excluded.revoked_at"
);

pub const CREDENTIAL_BY_HASH: &str = concat!("SELECT ", credential_columns!(), " FROM credentials WHERE key_hash = ?1");

pub const CREDENTIAL_BY_ID: &str = concat!("SELECT ", credential_columns!(), " FROM credentials WHERE id = ?1");

pub const LIST_CREDENTIALS: &str =
    concat!("SELECT ", credential_columns!(), " FROM credentials ORDER BY created_at, id");

/// The account's agents (issue 39: the inbox's Agents page).
pub const LIST_AGENTS: &str = "SELECT DISTINCT principal_name FROM credentials \
     WHERE account = ?1 AND principal_kind = 'agent' ORDER BY principal_name";

/// An operator's activity (issue 40): the stored time only moves forward.
pub const TOUCH_OPERATOR: &str = "INSERT INTO operator_seen (account, human, last_seen) VALUES (?1, ?2, ?3) \
     ON CONFLICT (account, human) DO UPDATE SET last_seen = max(last_seen, excluded.last_seen)";

pub const OPERATORS_SEEN: &str = "SELECT human, last_seen FROM operator_seen WHERE account = ?1 ORDER BY human";

/// Issue 41: an operator's devices.
pub const PUT_DEVICE: &str = "INSERT INTO devices (account, human, id, label, created_at, push_host, sealed) \
     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT (account, human, id) DO UPDATE SET \
     label = excluded.label, push_host = excluded.push_host, sealed = excluded.sealed";
pub const DEVICES_OF: &str = "SELECT id, label, created_at, push_host, sealed FROM devices \
     WHERE account = ?1 AND human = ?2 ORDER BY created_at, id";
pub const DELETE_DEVICE: &str = "DELETE FROM devices WHERE account = ?1 AND human = ?2 AND id = ?3";

/// Issue 41: passkeys (a new one never replaces a registered credential id).
pub const INSERT_PASSKEY: &str = "INSERT OR IGNORE INTO passkeys \
     (id, account, human, name, created_at, last_used_at, state) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)";
pub const UPDATE_PASSKEY: &str =
    "UPDATE passkeys SET name = ?4, last_used_at = ?5, state = ?6 WHERE id = ?1 AND account = ?2 AND human = ?3";
pub const PASSKEYS_OF: &str = "SELECT id, account, human, name, created_at, last_used_at, state FROM passkeys \
     WHERE account = ?1 AND human = ?2 ORDER BY created_at, id";
pub const PASSKEY_BY_ID: &str =
    "SELECT id, account, human, name, created_at, last_used_at, state FROM passkeys WHERE id = ?1";
pub const DELETE_PASSKEY: &str = "DELETE FROM passkeys WHERE account = ?1 AND human = ?2 AND id = ?3";

/// Only the revocation / expiry change after creation.
pub const UPDATE_CREDENTIAL: &str = "UPDATE credentials SET expires_at = ?1, revoked_at = ?2 WHERE id = ?3";

pub const PUT_SECRET: &str = "INSERT INTO secrets (account, agent_id, name, sealed) VALUES (?1, ?2, ?3, ?4) \
     ON CONFLICT (account, agent_id, name) DO UPDATE SET sealed = excluded.sealed";

pub const GET_SECRET: &str = "SELECT sealed FROM secrets WHERE account = ?1 AND agent_id = ?2 AND name = ?3";

pub const LIST_SECRETS: &str = "SELECT name FROM secrets WHERE account = ?1 AND agent_id = ?2 ORDER BY name";
pub const DELETE_SECRET: &str = "DELETE FROM secrets WHERE account = ?1 AND agent_id = ?2 AND name = ?3";

pub const PUT_BINDING: &str = "INSERT OR IGNORE INTO bindings (account, agent_id, host) VALUES (?1, ?2, ?3)";
pub const DELETE_BINDING: &str = "DELETE FROM bindings WHERE account = ?1 AND agent_id = ?2 AND host = ?3";
pub const LIST_BINDINGS: &str = "SELECT host FROM bindings WHERE account = ?1 AND agent_id = ?2 ORDER BY host";

//! §8.1 idempotency claims: rows in an append-only table, found through an in-memory index.
//!
//! Why not a SQL index on `(account, agent_id, key)`: keys are chosen by agents (UUIDs, build
//! ids), so each new claim lands on a random leaf of such an index, and in WAL mode every commit
//! writes each page it touched in full. Measured on the submit benchmark: the key index was 38 of
//! the 60 pages a group commit of ~21 submits wrote (docs/BENCHMARKS.md). Here the table is
//! written in rowid order (plus its `expires_at` index, also in arrival order) and the key →
//! rowid map lives in memory: about 100 bytes per live claim, loaded on first use.
//!
//! Correctness does not rest on the map being exact, only on it never **missing** a committed
//! claim:
//! * every claim row is re-read by rowid and its key compared, so an entry for a row that was
//!   rolled back (and its rowid reused) or purged reads as "no claim";
//! * the writer adds the entry in the same job that inserts the row, before the commit, so a
//!   committed claim is always in the map;
//! * another process writing the same file (a second Hub on one database) is noticed through
//!   `PRAGMA data_version` on the writer connection, checked inside the write transaction before
//!   every decision, and the map is rebuilt from the table. Reads on the reader pool (`get_claim`)
//!   trust the map as it stands.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use ma2h_core::records::IdempotencyRecord;
use ma2h_protocol::ids::{AccountId, AgentId, MessageId};
use ma2h_protocol::time::Timestamp;
use rusqlite::{Connection, OptionalExtension, params};

use crate::codec::{DbError, ms, parsed, ts};
use crate::sql;

/// The key → rowid map, built when the store opens (on the writer connection, before any write).
pub(crate) struct ClaimIndex {
    inner: Mutex<State>,
}

struct State {
    map: HashMap<Box<str>, i64>,
    /// The writer connection's `data_version` when the map was last in step with the table.
    data_version: i64,
}

/// One map key per (account, agent, key): length-prefixed, so no two triples share one.
fn map_key(account: &str, agent: &str, key: &str) -> Box<str> {
    format!("{}:{}:{account}{agent}{key}", account.len(), agent.len()).into_boxed_str()
}

fn load(conn: &Connection, now: i64) -> Result<HashMap<Box<str>, i64>, DbError> {
    let mut stmt = conn.prepare(sql::LIVE_CLAIM_KEYS)?;
    let rows = stmt.query_map(params![now], |r| {
        Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?, r.get::<_, String>(3)?))
    })?;
    let mut map = HashMap::new();
    for row in rows {
        let (rowid, account, agent, key) = row?;
        // the newest row of a key wins (an expired claim replaced by a later one)
        map.insert(map_key(&account, &agent, &key), rowid);
    }
    Ok(map)
}

fn data_version(conn: &Connection) -> Result<i64, DbError> {
    Ok(conn.prepare_cached("PRAGMA data_version")?.query_row([], |r| r.get::<_, i64>(0))?)
}

impl ClaimIndex {
    /// Build the map from the live claims, on the writer connection.
    pub(crate) fn open(writer: &Connection) -> Result<Self, DbError> {
        let now = chrono::Utc::now().timestamp_millis();
        let state = State { map: load(writer, now)?, data_version: data_version(writer)? };
        Ok(Self { inner: Mutex::new(state) })
    }

    /// The rowid the map holds for the key; on the writer connection (`writer`), first rebuilt
    /// if another connection committed since the map was last in step.
    fn rowid(&self, conn: &Connection, writer: bool, k: &str, now: i64) -> Result<Option<i64>, DbError> {
        let mut st = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if writer {
            let version = data_version(conn)?;
            if version != st.data_version {
                tracing::info!("sqlite store: the database was written by another connection; claim index rebuilt");
                st.map = load(conn, now)?;
                st.data_version = version;
            }
        }
        Ok(st.map.get(k).copied())
    }

    /// The live claim for the key, if any (`writer`: called on the writer connection).
    pub(crate) fn live(
        &self,
        conn: &Connection,
        writer: bool,
        account: &AccountId,
        agent: &AgentId,
        key: &str,
        now: Timestamp,
    ) -> Result<Option<IdempotencyRecord>, DbError> {
        let k = map_key(account.as_str(), agent.as_str(), key);
        let Some(rowid) = self.rowid(conn, writer, &k, ms(now))? else { return Ok(None) };
        let row = conn
            .prepare_cached(sql::CLAIM_BY_ROWID)?
            .query_row(params![rowid], |r| {
                Ok((
                    r.get::<_, String>(0)?,
                    r.get::<_, String>(1)?,
                    r.get::<_, String>(2)?,
                    r.get::<_, String>(3)?,
                    r.get::<_, String>(4)?,
                    r.get::<_, i64>(5)?,
                ))
            })
            .optional()?;
        let Some((acc, agt, stored_key, message_id, fingerprint, expires_at)) = row else { return Ok(None) };
        // a rolled-back row's rowid may have been reused by another key
        if acc != account.as_str() || agt != agent.as_str() || stored_key != key || expires_at <= ms(now) {
            return Ok(None);
        }
        Ok(Some(IdempotencyRecord {
            account: parsed(&acc, "idempotency.account", AccountId::parse)?,
            agent_id: parsed(&agt, "idempotency.agent_id", AgentId::parse)?,
            key: stored_key,
            message_id: MessageId::from_trusted(message_id),
            fingerprint,
            expires_at: ts(expires_at, "idempotency.expires_at")?,
        }))
    }

    /// Write a claim (the caller found no live one for its key in this transaction).
    pub(crate) fn insert(&self, conn: &Connection, c: &IdempotencyRecord) -> Result<(), DbError> {
        conn.prepare_cached(sql::INSERT_CLAIM)?.execute(params![
            c.account.as_str(),
            c.agent_id.as_str(),
            c.key,
            c.message_id.as_str(),
            c.fingerprint,
            ms(c.expires_at),
        ])?;
        let rowid = conn.last_insert_rowid();
        let mut st = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        st.map.insert(map_key(c.account.as_str(), c.agent_id.as_str(), &c.key), rowid);
        Ok(())
    }

    /// Delete up to `max` claims expired at `now`; their map entries go with them.
    pub(crate) fn purge(&self, conn: &Connection, now: Timestamp, max: i64) -> Result<usize, DbError> {
        let gone = conn
            .prepare_cached(sql::PURGE_CLAIMS)?
            .query_map(params![ms(now), max], |r| {
                Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, r.get::<_, String>(2)?, r.get::<_, String>(3)?))
            })?
            .collect::<Result<Vec<_>, _>>()?;
        let mut st = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        for (rowid, account, agent, key) in &gone {
            let k = map_key(account, agent, key);
            if st.map.get(&k) == Some(rowid) {
                st.map.remove(&k);
            }
        }
        Ok(gone.len())
    }
}

#[cfg(test)]
mod tests {
    use super::map_key;

    #[test]
    fn map_keys_never_collide_across_field_boundaries() {
        assert_ne!(map_key("ab", "c", "d"), map_key("a", "bc", "d"));
        assert_ne!(map_key("a", "b", "cd"), map_key("a", "bc", "d"));
        assert_eq!(map_key("a", "b", "c"), map_key("a", "b", "c"));
    }
}

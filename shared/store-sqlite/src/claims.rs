//! §8.1 idempotency claims: rows in an append-only table, found through an in-memory index.
//!
//! Why not a SQL index on `(account, agent_id, key)`: keys are chosen by agents (UUIDs, build
//! ids), so each new claim lands on a random leaf of such an index, and in WAL mode every commit
//! writes each page it touched in full. Measured on the submit benchmark: the key index was 38 of
//! the 60 pages a group commit of ~21 submits wrote (docs/BENCHMARKS.md). Here the table is
//! written in rowid order (plus its `expires_at` index, also in arrival order) and a hash → rowid
//! map lives in memory: about 20 bytes per live claim, built when the store opens.
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
use std::hash::{BuildHasher, RandomState};
use std::sync::{Mutex, PoisonError};

use ma2h_core::messages::records::IdempotencyRecord;
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
    keys: Keys,
    /// The writer connection's `data_version` when the map was last in step with the table.
    data_version: i64,
}

/// Rowids by a 64-bit keyed hash of (account, agent, key) — ~20 bytes per live claim instead of
/// a copy of the strings (560 k claims took 75 MB that way). Every candidate row is re-read and
/// its key compared, so a collision costs a read, never a wrong answer; the hash key is random
/// per process, so nobody can aim keys at one bucket.
struct Keys {
    hasher: RandomState,
    /// The newest rowid per hash.
    newest: HashMap<u64, i64>,
    /// Older rowids of a hash: a collision, or an expired claim its key's newer claim replaced.
    older: HashMap<u64, Vec<i64>>,
}

impl Keys {
    fn new(hasher: RandomState) -> Self {
        Self { hasher, newest: HashMap::new(), older: HashMap::new() }
    }

    /// `str` hashes with a terminator, so no two triples feed the hasher the same bytes.
    fn hash(&self, account: &str, agent: &str, key: &str) -> u64 {
        self.hasher.hash_one((account, agent, key))
    }

    fn candidates(&self, h: u64) -> Vec<i64> {
        let mut c: Vec<i64> = self.newest.get(&h).copied().into_iter().collect();
        c.extend(self.older.get(&h).into_iter().flatten().rev().copied());
        c
    }

    fn add(&mut self, h: u64, rowid: i64) {
        if let Some(old) = self.newest.insert(h, rowid)
            && old != rowid
        {
            self.older.entry(h).or_default().push(old);
        }
    }

    fn remove(&mut self, h: u64, rowid: i64) {
        if self.newest.get(&h) == Some(&rowid) {
            self.newest.remove(&h);
            if let Some(next) = self.older.get_mut(&h).and_then(Vec::pop) {
                self.newest.insert(h, next);
            }
        } else if let Some(v) = self.older.get_mut(&h) {
            v.retain(|r| *r != rowid);
        }
        if self.older.get(&h).is_some_and(Vec::is_empty) {
            self.older.remove(&h);
        }
    }
}

fn load(conn: &Connection, now: i64, hasher: RandomState) -> Result<Keys, DbError> {
    let mut stmt = conn.prepare(sql::LIVE_CLAIM_KEYS)?;
    let mut rows = stmt.query(params![now])?;
    let mut keys = Keys::new(hasher);
    // oldest first: the newest row of a hash ends up in `newest`
    while let Some(r) = rows.next()? {
        let text = |i: usize| -> Result<&str, DbError> {
            r.get_ref(i)?.as_str().map_err(|e| DbError::Corrupt(format!("idempotency column {i}: {e}")))
        };
        let h = keys.hash(text(1)?, text(2)?, text(3)?);
        keys.add(h, r.get(0)?);
    }
    Ok(keys)
}

fn data_version(conn: &Connection) -> Result<i64, DbError> {
    Ok(conn.prepare_cached("PRAGMA data_version")?.query_row([], |r| r.get::<_, i64>(0))?)
}

impl ClaimIndex {
    /// Build the map from the live claims, on the writer connection.
    pub(crate) fn open(writer: &Connection) -> Result<Self, DbError> {
        let now = chrono::Utc::now().timestamp_millis();
        let state = State { keys: load(writer, now, RandomState::new())?, data_version: data_version(writer)? };
        Ok(Self { inner: Mutex::new(state) })
    }

    /// The rowids that may hold the key, newest first; on the writer connection (`writer`), the
    /// map is first rebuilt if another connection committed since it was last in step.
    fn candidates(
        &self,
        conn: &Connection,
        writer: bool,
        (account, agent, key): (&str, &str, &str),
        now: i64,
    ) -> Result<Vec<i64>, DbError> {
        let mut st = self.inner.lock().unwrap_or_else(PoisonError::into_inner);
        if writer {
            let version = data_version(conn)?;
            if version != st.data_version {
                tracing::info!("sqlite store: the database was written by another connection; claim index rebuilt");
                let hasher = st.keys.hasher.clone();
                st.keys = load(conn, now, hasher)?;
                st.data_version = version;
            }
        }
        let h = st.keys.hash(account, agent, key);
        Ok(st.keys.candidates(h))
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
        let triple = (account.as_str(), agent.as_str(), key);
        for rowid in self.candidates(conn, writer, triple, ms(now))? {
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
            let Some((acc, agt, stored_key, message_id, fingerprint, expires_at)) = row else { continue };
            // a collision, a rolled-back row whose rowid was reused, or an expired claim
            if acc != triple.0 || agt != triple.1 || stored_key != key || expires_at <= ms(now) {
                continue;
            }
            return Ok(Some(IdempotencyRecord {
                account: parsed(&acc, "idempotency.account", AccountId::parse)?,
                agent_id: parsed(&agt, "idempotency.agent_id", AgentId::parse)?,
                key: stored_key,
                message_id: MessageId::from_trusted(message_id),
                fingerprint,
                expires_at: ts(expires_at, "idempotency.expires_at")?,
            }));
        }
        Ok(None)
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
        let h = st.keys.hash(c.account.as_str(), c.agent_id.as_str(), &c.key);
        st.keys.add(h, rowid);
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
            let h = st.keys.hash(account, agent, key);
            st.keys.remove(h, *rowid);
        }
        Ok(gone.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn triples_never_feed_the_hasher_the_same_bytes() {
        let k = Keys::new(RandomState::new());
        assert_ne!(k.hash("ab", "c", "d"), k.hash("a", "bc", "d"));
        assert_ne!(k.hash("a", "b", "cd"), k.hash("a", "bc", "d"));
        assert_eq!(k.hash("a", "b", "c"), k.hash("a", "b", "c"));
    }

    #[test]
    fn a_hash_keeps_every_rowid_until_each_is_removed_newest_first() {
        let mut k = Keys::new(RandomState::new());
        k.add(7, 1);
        k.add(7, 2); // a collision or a replacement: both stay candidates
        k.add(7, 3);
        assert_eq!(k.candidates(7), [3, 2, 1]);
        k.remove(7, 2);
        assert_eq!(k.candidates(7), [3, 1]);
        k.remove(7, 3);
        assert_eq!(k.candidates(7), [1]);
        k.remove(7, 1);
        assert!(k.candidates(7).is_empty());
        assert!(k.newest.is_empty() && k.older.is_empty());
    }
}

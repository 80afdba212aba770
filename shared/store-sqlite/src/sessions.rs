//! [`SessionStore`] over SQLite.
//!
//! Every transition is one writer job, and the writer runs jobs one at a time, so each guarded
//! `UPDATE` (no end yet, lease not lapsed) is the compare-and-set: of racing renewals, closes and
//! expiries exactly one terminal lands, and nothing renews after it. `register` checks the stop
//! record and the live count inside the job that inserts, so it cannot interleave with a stop.

use async_trait::async_trait;
use ma2h_core::mailbox::model::Mailbox;
use ma2h_core::ports::{SessionStore, StoreError};
use ma2h_core::sessions::model::{EndKind, Ended, Registered, SessionEnd, SessionRecord, StopRecord};
use ma2h_protocol::ids::{AccountId, AgentId, SessionId};
use ma2h_protocol::time::Timestamp;
use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::SqliteStore;
use crate::codec::{DbError, json_text, json_value, limit, ms, opt_ts, parsed, ts};

const COLUMNS: &str = "account, id, agent_id, created_at, expires_at, ttl_seconds, last_seen, meta, end_kind, \
     ended_at, retain_until, bounce_pending";

fn select(conn: &Connection, account: &str, id: &str) -> Result<Option<SessionRecord>, DbError> {
    conn.prepare_cached(&format!("SELECT {COLUMNS} FROM sessions WHERE account = ?1 AND id = ?2"))?
        .query_row(params![account, id], decode_row)
        .optional()?
        .transpose()
}

fn decode_row(r: &Row<'_>) -> rusqlite::Result<Result<SessionRecord, DbError>> {
    let raw = (
        r.get::<_, String>(0)?,
        r.get::<_, String>(1)?,
        r.get::<_, String>(2)?,
        r.get::<_, i64>(3)?,
        r.get::<_, i64>(4)?,
        r.get::<_, i64>(5)?,
        r.get::<_, Option<i64>>(6)?,
        r.get::<_, String>(7)?,
        r.get::<_, Option<String>>(8)?,
        r.get::<_, Option<i64>>(9)?,
        r.get::<_, Option<i64>>(10)?,
        r.get::<_, i64>(11)?,
    );
    Ok(decode(raw))
}

type Raw = (String, String, String, i64, i64, i64, Option<i64>, String, Option<String>, Option<i64>, Option<i64>, i64);

fn decode(raw: Raw) -> Result<SessionRecord, DbError> {
    let (account, id, agent, created, expires, ttl, seen, meta, end_kind, ended_at, retain, bounce) = raw;
    let end = match (end_kind, ended_at) {
        (None, _) => None,
        (Some(k), Some(at)) => Some(SessionEnd {
            at: ts(at, "sessions.ended_at")?,
            kind: parsed(&k, "sessions.end_kind", EndKind::parse)?,
        }),
        (Some(_), None) => return Err(DbError::Corrupt("sessions: end_kind without ended_at".into())),
    };
    let meta = match json_value(&meta, "sessions.meta")? {
        serde_json::Value::Object(m) => m,
        _ => return Err(DbError::Corrupt("sessions.meta is not an object".into())),
    };
    Ok(SessionRecord {
        account: parsed(&account, "sessions.account", AccountId::parse)?,
        agent: parsed(&agent, "sessions.agent_id", AgentId::parse)?,
        id: SessionId::from_trusted(id),
        created_at: ts(created, "sessions.created_at")?,
        expires_at: ts(expires, "sessions.expires_at")?,
        ttl_seconds: u32::try_from(ttl).unwrap_or(u32::MAX),
        last_seen: opt_ts(seen, "sessions.last_seen")?,
        meta,
        end,
        retain_until: opt_ts(retain, "sessions.retain_until")?,
        bounce_pending: bounce != 0,
    })
}

fn collect(conn: &Connection, sql: &str, p: impl rusqlite::Params) -> Result<Vec<SessionRecord>, DbError> {
    let mut stmt = conn.prepare_cached(sql)?;
    let rows = stmt.query_map(p, decode_row)?;
    rows.map(|row| row?).collect()
}

fn upsert_stop(conn: &Connection, account: &str, agent: &str, stop: &StopRecord) -> Result<(), DbError> {
    conn.prepare_cached(
        "INSERT INTO stops (account, agent_id, stopped_by, stopped_at, session_id) VALUES (?1, ?2, ?3, ?4, ?5) \
         ON CONFLICT (account, agent_id) DO UPDATE SET stopped_by = excluded.stopped_by, \
         stopped_at = excluded.stopped_at, session_id = excluded.session_id",
    )?
    .execute(params![account, agent, stop.by, ms(stop.at), stop.session.as_ref().map(SessionId::as_str)])?;
    Ok(())
}

#[async_trait]
impl SessionStore for SqliteStore {
    async fn register(&self, session: &SessionRecord, max_live: u32) -> Result<Registered, StoreError> {
        let s = session.clone();
        self.write(move |conn| {
            let (account, agent) = (s.account.as_str(), s.agent.as_str());
            let stopped: bool = conn
                .prepare_cached("SELECT EXISTS (SELECT 1 FROM stops WHERE account = ?1 AND agent_id = ?2)")?
                .query_row(params![account, agent], |r| r.get(0))?;
            if stopped {
                return Ok(Registered::Stopped);
            }
            let live: i64 = conn
                .prepare_cached(
                    "SELECT COUNT(*) FROM sessions WHERE account = ?1 AND agent_id = ?2 \
                     AND end_kind IS NULL AND expires_at >= ?3",
                )?
                .query_row(params![account, agent, ms(s.created_at)], |r| r.get(0))?;
            if live >= i64::from(max_live) {
                return Ok(Registered::Full);
            }
            conn.prepare_cached(
                "INSERT INTO sessions (account, id, agent_id, created_at, expires_at, ttl_seconds, last_seen, meta) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
            )?
            .execute(params![
                account,
                s.id.as_str(),
                agent,
                ms(s.created_at),
                ms(s.expires_at),
                i64::from(s.ttl_seconds),
                s.last_seen.map(ms),
                json_text(&serde_json::Value::Object(s.meta.clone())),
            ])?;
            Ok(Registered::New)
        })
        .await
    }

    async fn get_session(&self, account: &AccountId, id: &SessionId) -> Result<Option<SessionRecord>, StoreError> {
        let (account, id) = (account.to_string(), id.to_string());
        self.read(move |conn| select(conn, &account, &id)).await
    }

    async fn list_sessions(
        &self,
        account: &AccountId,
        agent: Option<&AgentId>,
        max: usize,
    ) -> Result<Vec<SessionRecord>, StoreError> {
        let (account, agent) = (account.to_string(), agent.map(ToString::to_string));
        self.read(move |conn| match &agent {
            Some(agent) => collect(
                conn,
                &format!(
                    "SELECT {COLUMNS} FROM sessions WHERE account = ?1 AND agent_id = ?2 \
                     ORDER BY created_at DESC, id DESC LIMIT ?3"
                ),
                params![account, agent, limit(max)],
            ),
            None => collect(
                conn,
                &format!(
                    "SELECT {COLUMNS} FROM sessions WHERE account = ?1 ORDER BY created_at DESC, id DESC LIMIT ?2"
                ),
                params![account, limit(max)],
            ),
        })
        .await
    }

    async fn renew_session(
        &self,
        account: &AccountId,
        agent: &AgentId,
        id: &SessionId,
        now: Timestamp,
    ) -> Result<Option<SessionRecord>, StoreError> {
        let (account, agent, id) = (account.to_string(), agent.to_string(), id.to_string());
        self.write(move |conn| {
            conn.prepare_cached(&format!(
                "UPDATE sessions SET expires_at = ?4 + ttl_seconds * 1000, last_seen = ?4 \
                 WHERE account = ?1 AND id = ?2 AND agent_id = ?3 AND end_kind IS NULL AND expires_at >= ?4 \
                 RETURNING {COLUMNS}"
            ))?
            .query_row(params![account, id, agent, ms(now)], decode_row)
            .optional()?
            .transpose()
        })
        .await
    }

    async fn end_session(
        &self,
        account: &AccountId,
        id: &SessionId,
        end: SessionEnd,
        retain_until: Timestamp,
        stop: Option<&StopRecord>,
    ) -> Result<Ended, StoreError> {
        let (account, id, stop) = (account.to_string(), id.to_string(), stop.cloned());
        self.write(move |conn| {
            let applied = conn
                .prepare_cached(&format!(
                    "UPDATE sessions SET end_kind = ?3, ended_at = ?4, retain_until = ?5, bounce_pending = 1 \
                     WHERE account = ?1 AND id = ?2 AND end_kind IS NULL AND expires_at >= ?4 RETURNING {COLUMNS}"
                ))?
                .query_row(params![account, id, end.kind.as_str(), ms(end.at), ms(retain_until)], decode_row)
                .optional()?
                .transpose()?;
            Ok(match applied {
                Some(rec) => {
                    if let Some(stop) = &stop {
                        upsert_stop(conn, &account, rec.agent.as_str(), stop)?;
                    }
                    Ended::Applied(rec)
                }
                None => match select(conn, &account, &id)? {
                    Some(rec) => Ended::AlreadyTerminal(rec),
                    None => Ended::Missing,
                },
            })
        })
        .await
    }

    async fn expire_due_sessions(
        &self,
        now: Timestamp,
        retention: chrono::Duration,
        max: usize,
    ) -> Result<usize, StoreError> {
        self.write(move |conn| {
            Ok(conn
                .prepare_cached(
                    "UPDATE sessions SET end_kind = 'expired', ended_at = expires_at, \
                     retain_until = expires_at + ?2, bounce_pending = 1 \
                     WHERE end_kind IS NULL AND (account, id) IN \
                       (SELECT account, id FROM sessions WHERE end_kind IS NULL AND expires_at < ?1 \
                        ORDER BY expires_at LIMIT ?3)",
                )?
                .execute(params![ms(now), retention.num_milliseconds(), limit(max)])?)
        })
        .await
    }

    async fn pending_bounces(&self, max: usize) -> Result<Vec<SessionRecord>, StoreError> {
        self.read(move |conn| {
            collect(
                conn,
                &format!("SELECT {COLUMNS} FROM sessions WHERE bounce_pending = 1 ORDER BY ended_at LIMIT ?1"),
                params![limit(max)],
            )
        })
        .await
    }

    async fn bounce_done(&self, account: &AccountId, id: &SessionId) -> Result<(), StoreError> {
        // Only a pending flag changes: a second completion changes no row, so records nothing.
        let (account, id) = (account.to_string(), id.to_string());
        self.write(move |conn| {
            conn.prepare_cached(
                "UPDATE sessions SET bounce_pending = 0 WHERE account = ?1 AND id = ?2 AND bounce_pending = 1",
            )?
            .execute(params![account, id])?;
            Ok(())
        })
        .await
    }

    async fn purge_sessions(&self, now: Timestamp, max: usize) -> Result<usize, StoreError> {
        self.write(move |conn| {
            // A session whose bounce is still owed is kept until the bounce is done.
            Ok(conn
                .prepare_cached(
                    "DELETE FROM sessions WHERE (account, id) IN (SELECT account, id FROM sessions \
                     WHERE retain_until IS NOT NULL AND retain_until <= ?1 AND bounce_pending = 0 \
                     ORDER BY retain_until LIMIT ?2)",
                )?
                .execute(params![ms(now), limit(max)])?)
        })
        .await
    }

    async fn put_stop(&self, mailbox: &Mailbox, stop: &StopRecord) -> Result<(), StoreError> {
        let (mailbox, stop) = (mailbox.clone(), stop.clone());
        self.write(move |conn| upsert_stop(conn, mailbox.account.as_str(), mailbox.agent.as_str(), &stop)).await
    }

    async fn get_stop(&self, mailbox: &Mailbox) -> Result<Option<StopRecord>, StoreError> {
        let (account, agent) = (mailbox.account.to_string(), mailbox.agent.to_string());
        self.read(move |conn| {
            let row = conn
                .prepare_cached(
                    "SELECT stopped_by, stopped_at, session_id FROM stops WHERE account = ?1 AND agent_id = ?2",
                )?
                .query_row(params![account, agent], |r| {
                    Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?, r.get::<_, Option<String>>(2)?))
                })
                .optional()?;
            row.map(|(by, at, session)| {
                Ok(StopRecord { by, at: ts(at, "stops.stopped_at")?, session: session.map(SessionId::from_trusted) })
            })
            .transpose()
        })
        .await
    }

    async fn lift_stop(&self, mailbox: &Mailbox) -> Result<bool, StoreError> {
        let (account, agent) = (mailbox.account.to_string(), mailbox.agent.to_string());
        self.write(move |conn| {
            Ok(conn
                .prepare_cached("DELETE FROM stops WHERE account = ?1 AND agent_id = ?2")?
                .execute(params![account, agent])?
                > 0)
        })
        .await
    }
}

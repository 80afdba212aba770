//! [`NotificationStore`] over SQLite: one `notifications` row per announced message.
//!
//! Every write is one writer job (the writer runs jobs one at a time), so the guarded `UPDATE`s
//! are the compare-and-sets: a claim only if `next_due <= now` and no lease is running, a save
//! only at the expected version (it ends the lease). A wake-up moves `next_due`, never the lease. The due and retention reads walk partial indexes (rows that have a `next_due` /
//! `retain_until`), never the table.

use async_trait::async_trait;
use ma2h_core::channels::outbox::{Notification, NotificationStore};
use ma2h_core::ports::StoreError;
use ma2h_protocol::ids::{AccountId, MessageId};
use ma2h_protocol::time::Timestamp;
use rusqlite::{Connection, OptionalExtension, Row, params};

use crate::SqliteStore;
use crate::codec::{DbError, limit, ms, opt_ms, opt_ts, parsed, ts};

const COLUMNS: &str = "account, message_id, version, created_at, next_due, retain_until, route, steps";

fn decode_row(r: &Row<'_>) -> rusqlite::Result<Result<Notification, DbError>> {
    let account: String = r.get(0)?;
    let id: String = r.get(1)?;
    let version: i64 = r.get(2)?;
    let created: i64 = r.get(3)?;
    let next_due: Option<i64> = r.get(4)?;
    let retain: Option<i64> = r.get(5)?;
    let route: String = r.get(6)?;
    let steps: String = r.get(7)?;
    Ok((|| {
        Ok(Notification {
            account: parsed(&account, "notifications.account", AccountId::parse)?,
            message_id: parsed(&id, "notifications.message_id", MessageId::parse)?,
            version: u64::try_from(version).unwrap_or(0),
            created_at: ts(created, "notifications.created_at")?,
            next_due: opt_ts(next_due, "notifications.next_due")?,
            retain_until: opt_ts(retain, "notifications.retain_until")?,
            route,
            steps: Notification::parse_steps(&steps).map_err(|e| DbError::Corrupt(e.to_string()))?,
        })
    })())
}

fn select(conn: &Connection, account: &str, id: &str) -> Result<Option<Notification>, DbError> {
    conn.prepare_cached(&format!("SELECT {COLUMNS} FROM notifications WHERE account = ?1 AND message_id = ?2"))?
        .query_row(params![account, id], decode_row)
        .optional()?
        .transpose()
}

fn version(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

#[async_trait]
impl NotificationStore for SqliteStore {
    async fn create_notification(&self, item: &Notification) -> Result<bool, StoreError> {
        let n = item.clone();
        self.write(move |conn| {
            let inserted = conn
                .prepare_cached(&format!(
                    "INSERT INTO notifications ({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) \
                     ON CONFLICT (account, message_id) DO NOTHING"
                ))?
                .execute(params![
                    n.account.as_str(),
                    n.message_id.as_str(),
                    version(n.version),
                    ms(n.created_at),
                    opt_ms(n.next_due),
                    opt_ms(n.retain_until),
                    n.route,
                    n.steps_json(),
                ])?;
            Ok(inserted == 1)
        })
        .await
    }

    async fn get_notification(&self, account: &AccountId, id: &MessageId) -> Result<Option<Notification>, StoreError> {
        let (account, id) = (account.to_string(), id.to_string());
        self.read(move |conn| select(conn, &account, &id)).await
    }

    async fn due_notifications(&self, now: Timestamp, n: usize) -> Result<Vec<(AccountId, MessageId)>, StoreError> {
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT account, message_id FROM notifications WHERE next_due IS NOT NULL AND next_due <= ?1 \
                 ORDER BY next_due LIMIT ?2",
            )?;
            let rows =
                stmt.query_map(params![ms(now), limit(n)], |r| Ok((r.get::<_, String>(0)?, r.get::<_, String>(1)?)))?;
            rows.map(|row| {
                let (a, i) = row?;
                Ok((
                    parsed(&a, "notifications.account", AccountId::parse)?,
                    parsed(&i, "notifications.message_id", MessageId::parse)?,
                ))
            })
            .collect()
        })
        .await
    }

    async fn claim_notification(
        &self,
        account: &AccountId,
        id: &MessageId,
        now: Timestamp,
        lease_until: Timestamp,
    ) -> Result<Option<Notification>, StoreError> {
        let (account, id) = (account.to_string(), id.to_string());
        self.write(move |conn| {
            let claimed = conn
                .prepare_cached(
                    "UPDATE notifications SET next_due = ?3, lease_until = ?3, version = version + 1 \
                     WHERE account = ?1 AND message_id = ?2 AND next_due IS NOT NULL AND next_due <= ?4 \
                     AND (lease_until IS NULL OR lease_until <= ?4)",
                )?
                .execute(params![account, id, ms(lease_until), ms(now)])?;
            if claimed == 0 {
                return Ok(None);
            }
            select(conn, &account, &id)
        })
        .await
    }

    async fn save_notification(&self, item: &Notification, expected: u64) -> Result<bool, StoreError> {
        let n = item.clone();
        self.write(move |conn| {
            let saved = conn
                .prepare_cached(
                    "UPDATE notifications SET version = ?3, next_due = ?4, retain_until = ?5, steps = ?6, \
                     lease_until = NULL WHERE account = ?1 AND message_id = ?2 AND version = ?7",
                )?
                .execute(params![
                    n.account.as_str(),
                    n.message_id.as_str(),
                    version(n.version),
                    opt_ms(n.next_due),
                    opt_ms(n.retain_until),
                    n.steps_json(),
                    version(expected),
                ])?;
            Ok(saved == 1)
        })
        .await
    }

    async fn wake_notification(&self, account: &AccountId, id: &MessageId, at: Timestamp) -> Result<(), StoreError> {
        let (account, id) = (account.to_string(), id.to_string());
        self.write(move |conn| {
            conn.prepare_cached(
                "UPDATE notifications SET next_due = ?3, retain_until = NULL, version = version + 1 \
                 WHERE account = ?1 AND message_id = ?2",
            )?
            .execute(params![account, id, ms(at)])?;
            Ok(())
        })
        .await
    }

    async fn purge_notifications(&self, now: Timestamp, n: usize) -> Result<usize, StoreError> {
        self.write(move |conn| {
            let deleted = conn
                .prepare_cached(
                    "DELETE FROM notifications WHERE (account, message_id) IN (SELECT account, message_id \
                     FROM notifications WHERE retain_until IS NOT NULL AND retain_until <= ?1 ORDER BY retain_until LIMIT ?2)",
                )?
                .execute(params![ms(now), limit(n)])?;
            Ok(deleted)
        })
        .await
    }
}

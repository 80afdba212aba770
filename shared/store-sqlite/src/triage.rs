//! [`TriageStore`] over SQLite (issue 39): one `triage` row per message, its claim, snoozes and
//! events as JSON; a put is one writer job, so the version-guarded `UPDATE` (or the `INSERT` of
//! a first version) is the compare-and-set. Purging walks `triage_retain`.

use async_trait::async_trait;
use ma2h_core::messages::triage::{TriageData, TriageRecord, TriageStore};
use ma2h_core::ports::StoreError;
use ma2h_protocol::ids::{AccountId, MessageId};
use ma2h_protocol::time::Timestamp;
use rusqlite::{OptionalExtension, params};

use crate::SqliteStore;
use crate::codec::{DbError, limit, ms, ts};

fn version(v: u64) -> i64 {
    i64::try_from(v).unwrap_or(i64::MAX)
}

#[async_trait]
impl TriageStore for SqliteStore {
    async fn get_triage(
        &self,
        account: &AccountId,
        ids: &[MessageId],
    ) -> Result<Vec<Option<TriageRecord>>, StoreError> {
        let (account, ids) = (account.clone(), ids.to_vec());
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT version, data, retain_until FROM triage WHERE account = ?1 AND message_id = ?2",
            )?;
            let mut out = Vec::with_capacity(ids.len());
            for id in &ids {
                let row = stmt
                    .query_row(params![account.as_str(), id.as_str()], |r| {
                        Ok((r.get::<_, i64>(0)?, r.get::<_, String>(1)?, r.get::<_, i64>(2)?))
                    })
                    .optional()?;
                out.push(match row {
                    None => None,
                    Some((v, data, retain)) => Some(TriageRecord {
                        account: account.clone(),
                        message_id: id.clone(),
                        version: u64::try_from(v).unwrap_or(0),
                        data: serde_json::from_str::<TriageData>(&data)
                            .map_err(|e| DbError::Corrupt(format!("triage.data of {id}: {e}")))?,
                        retain_until: ts(retain, "triage.retain_until")?,
                    }),
                });
            }
            Ok(out)
        })
        .await
    }

    async fn put_triage(&self, record: &TriageRecord, expected: Option<u64>) -> Result<bool, StoreError> {
        let r = record.clone();
        let data = serde_json::to_string(&r.data).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        self.write(move |conn| {
            let changed = match expected {
                None => conn
                    .prepare_cached(
                        "INSERT INTO triage (account, message_id, version, data, retain_until) \
                         VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT DO NOTHING",
                    )?
                    .execute(params![
                        r.account.as_str(),
                        r.message_id.as_str(),
                        version(r.version),
                        data,
                        ms(r.retain_until)
                    ])?,
                Some(v) => conn
                    .prepare_cached(
                        "UPDATE triage SET version = ?3, data = ?4, retain_until = ?5 \
                         WHERE account = ?1 AND message_id = ?2 AND version = ?6",
                    )?
                    .execute(params![
                        r.account.as_str(),
                        r.message_id.as_str(),
                        version(r.version),
                        data,
                        ms(r.retain_until),
                        version(v)
                    ])?,
            };
            Ok(changed == 1)
        })
        .await
    }

    async fn purge_triage(&self, now: Timestamp, n: usize) -> Result<usize, StoreError> {
        self.write(move |conn| {
            let deleted = conn
                .prepare_cached(
                    "DELETE FROM triage WHERE (account, message_id) IN (SELECT account, message_id \
                     FROM triage WHERE retain_until <= ?1 ORDER BY retain_until LIMIT ?2)",
                )?
                .execute(params![ms(now), limit(n)])?;
            Ok(deleted)
        })
        .await
    }
}

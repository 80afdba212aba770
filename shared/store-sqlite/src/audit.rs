//! [`AuditStore`] over SQLite (issue 42): `audit_entries` keyed (account, shard, sort key),
//! `audit_checkpoints` keyed (account, seq); an entry row's `data` is its record but the key and
//! time columns, as JSON.

use async_trait::async_trait;
use ma2h_core::audit::store::{AuditRecord, AuditStore, StoredCheckpoint};
use ma2h_core::ports::StoreError;
use ma2h_protocol::ids::AccountId;
use ma2h_protocol::time::Timestamp;
use rusqlite::params;

use crate::SqliteStore;
use crate::codec::{DbError, limit, ms};

fn json<T: serde::de::DeserializeOwned>(data: &str, what: &str) -> Result<T, DbError> {
    serde_json::from_str(data).map_err(|e| DbError::Corrupt(format!("{what}: {e}")))
}

/// An entry's row: (account, shard, sort key, at, data).
pub(crate) type Row = (String, u16, String, i64, String);

/// What `data` holds: the record but what the key and `at` columns say (the account, the shard,
/// the id — the sort key's tail — and the time), so the row a submit adds stays small.
#[derive(serde::Serialize)]
struct Body<'a> {
    kind: &'a str,
    principal: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    target: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    digest: Option<&'a str>,
    #[serde(skip_serializing_if = "serde_json::Map::is_empty")]
    detail: &'a serde_json::Map<String, serde_json::Value>,
}

/// [`Body`] read back (rows written before it was slimmed hold the whole record: the extra
/// members are ignored).
#[derive(serde::Deserialize)]
struct Owned {
    kind: String,
    principal: String,
    #[serde(default)]
    target: Option<String>,
    #[serde(default)]
    digest: Option<String>,
    #[serde(default)]
    detail: serde_json::Map<String, serde_json::Value>,
}

pub(crate) fn rows(records: &[AuditRecord]) -> Result<Vec<Row>, StoreError> {
    records
        .iter()
        .map(|r| {
            let body = Body {
                kind: &r.kind,
                principal: &r.principal,
                target: r.target.as_deref(),
                digest: r.digest.as_deref(),
                detail: &r.detail,
            };
            Ok((r.account.to_string(), r.shard, r.sort_key(), ms(r.at), serde_json::to_string(&body)?))
        })
        .collect::<Result<Vec<_>, serde_json::Error>>()
        .map_err(|e| StoreError::Corrupt(e.to_string()))
}

fn record(account: &AccountId, shard: u16, sort_key: &str, at: i64, data: &str) -> Result<AuditRecord, DbError> {
    let b: Owned = json(data, "audit_entries.data")?;
    let id =
        sort_key.split_once('#').map(|(_, id)| id).ok_or_else(|| DbError::Corrupt(format!("sort key {sort_key:?}")))?;
    Ok(AuditRecord {
        id: id.to_owned(),
        account: account.clone(),
        shard,
        at: ma2h_protocol::time::from_millis(at),
        kind: b.kind,
        principal: b.principal,
        target: b.target,
        digest: b.digest,
        detail: b.detail,
    })
}

/// Insert entry rows; one already stored under its key is kept (a retried append is a no-op).
pub(crate) fn insert_rows(conn: &rusqlite::Connection, rows: &[Row]) -> Result<(), DbError> {
    let mut stmt = conn.prepare_cached(
        "INSERT INTO audit_entries (account, shard, sort_key, at, data) VALUES (?1, ?2, ?3, ?4, ?5) \
         ON CONFLICT (account, shard, sort_key) DO NOTHING",
    )?;
    for (account, shard, key, at, data) in rows {
        stmt.execute(params![account, shard, key, at, data])?;
    }
    Ok(())
}

#[async_trait]
impl AuditStore for SqliteStore {
    fn audit_shards(&self) -> u16 {
        1
    }

    async fn append_audit(&self, records: &[AuditRecord]) -> Result<(), StoreError> {
        let rows = rows(records)?;
        self.write_plain(move |conn| insert_rows(conn, &rows)).await
    }

    async fn audit_entries(
        &self,
        account: &AccountId,
        shard: u16,
        after: Option<&str>,
        until: Timestamp,
        n: usize,
    ) -> Result<Vec<AuditRecord>, StoreError> {
        let (acct, after, until) = (account.clone(), after.unwrap_or("").to_owned(), ms(until));
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT sort_key, at, data FROM audit_entries \
                 WHERE account = ?1 AND shard = ?2 AND sort_key > ?3 AND at <= ?4 ORDER BY sort_key LIMIT ?5",
            )?;
            let rows = stmt.query_map(params![acct.as_str(), shard, after, until, limit(n)], |r| {
                Ok((r.get::<_, String>(0)?, r.get::<_, i64>(1)?, r.get::<_, String>(2)?))
            })?;
            rows.map(|r| {
                let (key, at, data) = r?;
                record(&acct, shard, &key, at, &data)
            })
            .collect()
        })
        .await
    }

    async fn last_audit_checkpoint(&self, account: &AccountId) -> Result<Option<StoredCheckpoint>, StoreError> {
        let account = account.to_string();
        self.read(move |conn| {
            let mut stmt =
                conn.prepare_cached("SELECT data FROM audit_checkpoints WHERE account = ?1 ORDER BY seq DESC LIMIT 1")?;
            let mut rows = stmt.query_map(params![account], |r| r.get::<_, String>(0))?;
            rows.next().map(|r| json(&r?, "audit_checkpoints.data")).transpose()
        })
        .await
    }

    async fn audit_checkpoints(
        &self,
        account: &AccountId,
        from_seq: u64,
        n: usize,
    ) -> Result<Vec<StoredCheckpoint>, StoreError> {
        let (account, from) = (account.to_string(), i64::try_from(from_seq).unwrap_or(i64::MAX));
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(
                "SELECT data FROM audit_checkpoints WHERE account = ?1 AND seq >= ?2 ORDER BY seq LIMIT ?3",
            )?;
            let rows = stmt.query_map(params![account, from, limit(n)], |r| r.get::<_, String>(0))?;
            rows.map(|r| json(&r?, "audit_checkpoints.data")).collect()
        })
        .await
    }

    async fn put_audit_checkpoint(&self, account: &AccountId, cp: &StoredCheckpoint) -> Result<bool, StoreError> {
        let data = serde_json::to_string(cp).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let (account, seq, at) = (account.to_string(), i64::try_from(cp.seq()).unwrap_or(i64::MAX), ms(cp.at));
        self.write(move |conn| {
            let n = conn
                .prepare_cached(
                    "INSERT INTO audit_checkpoints (account, seq, at, data) VALUES (?1, ?2, ?3, ?4) \
                     ON CONFLICT (account, seq) DO NOTHING",
                )?
                .execute(params![account, seq, at, data])?;
            Ok(n == 1)
        })
        .await
    }

    async fn audit_accounts(&self) -> Result<Vec<AccountId>, StoreError> {
        self.read(|conn| {
            let mut stmt = conn.prepare_cached("SELECT DISTINCT account FROM audit_entries ORDER BY account")?;
            let rows = stmt.query_map([], |r| r.get::<_, String>(0))?;
            rows.map(|r| {
                let a = r?;
                AccountId::parse(&a).ok_or_else(|| DbError::Corrupt(format!("audit_entries.account `{a}`")))
            })
            .collect()
        })
        .await
    }

    async fn prune_audit(&self, account: &AccountId, keep: &StoredCheckpoint, n: usize) -> Result<usize, StoreError> {
        let anchored = StoredCheckpoint { anchor: true, ..keep.clone() };
        let data = serde_json::to_string(&anchored).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        let (acct, seq) = (account.to_string(), i64::try_from(keep.seq()).unwrap_or(i64::MAX));
        let cursors: Vec<(u16, String)> = keep.cursors.iter().map(|(k, v)| (*k, v.clone())).collect();
        self.write_plain(move |conn| {
            conn.prepare_cached("UPDATE audit_checkpoints SET data = ?3 WHERE account = ?1 AND seq = ?2")?
                .execute(params![acct, seq, data])?;
            conn.prepare_cached("DELETE FROM audit_checkpoints WHERE account = ?1 AND seq < ?2")?
                .execute(params![acct, seq])?;
            let mut deleted = 0;
            for (shard, cursor) in &cursors {
                if deleted >= n {
                    break;
                }
                deleted += conn
                    .prepare_cached(
                        "DELETE FROM audit_entries WHERE account = ?1 AND shard = ?2 AND sort_key IN \
                         (SELECT sort_key FROM audit_entries WHERE account = ?1 AND shard = ?2 AND sort_key <= ?3 \
                          ORDER BY sort_key LIMIT ?4)",
                    )?
                    .execute(params![acct, shard, cursor, limit(n - deleted)])?;
            }
            Ok(deleted)
        })
        .await
    }
}

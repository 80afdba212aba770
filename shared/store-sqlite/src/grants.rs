//! [`GrantStore`] over SQLite (issue 40): one `grants` row per grant, its body as JSON and the
//! mutable parts (uses, revocation) as columns, so counting a use never rewrites a revocation.

use async_trait::async_trait;
use ma2h_core::decisions::grant_store::{Grant, GrantStore};
use ma2h_core::ports::StoreError;
use ma2h_protocol::ids::{AccountId, AgentId};
use ma2h_protocol::time::Timestamp;
use rusqlite::{Row, params};

use crate::SqliteStore;
use crate::codec::{DbError, limit, ms, opt_ms, opt_ts};

const COLUMNS: &str = "data, uses, last_used_at, revoked_at, revoked_by";

fn decode(r: &Row<'_>) -> rusqlite::Result<Result<Grant, DbError>> {
    let data: String = r.get(0)?;
    let uses: i64 = r.get(1)?;
    let last: Option<i64> = r.get(2)?;
    let revoked: Option<i64> = r.get(3)?;
    let by: Option<String> = r.get(4)?;
    Ok((|| {
        let mut g: Grant = serde_json::from_str(&data).map_err(|e| DbError::Corrupt(format!("grants.data: {e}")))?;
        g.uses = u64::try_from(uses).unwrap_or(0);
        g.last_used_at = opt_ts(last, "grants.last_used_at")?;
        g.revoked_at = opt_ts(revoked, "grants.revoked_at")?;
        g.revoked_by = by;
        Ok(g)
    })())
}

#[async_trait]
impl GrantStore for SqliteStore {
    async fn put_grant(&self, grant: &Grant) -> Result<(), StoreError> {
        let g = grant.clone();
        let data = serde_json::to_string(&g).map_err(|e| StoreError::Corrupt(e.to_string()))?;
        self.write(move |conn| {
            conn.prepare_cached(
                "INSERT INTO grants (account, id, agent_id, grant_key, created_at, retain_until, uses, last_used_at, \
                 revoked_at, revoked_by, data) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11) \
                 ON CONFLICT (account, id) DO UPDATE SET retain_until = excluded.retain_until, data = excluded.data",
            )?
            .execute(params![
                g.account.as_str(),
                g.id,
                g.agent.as_str(),
                g.key,
                ms(g.created_at),
                opt_ms(g.retain_until()),
                i64::try_from(g.uses).unwrap_or(i64::MAX),
                opt_ms(g.last_used_at),
                opt_ms(g.revoked_at),
                g.revoked_by,
                data
            ])?;
            Ok(())
        })
        .await
    }

    async fn grants_for(&self, account: &AccountId, agent: &AgentId, key: &str) -> Result<Vec<Grant>, StoreError> {
        let (account, agent, key) = (account.to_string(), agent.to_string(), key.to_owned());
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM grants WHERE account = ?1 AND agent_id = ?2 AND grant_key = ?3"
            ))?;
            let rows = stmt.query_map(params![account, agent, key], decode)?;
            rows.map(|r| r?).collect()
        })
        .await
    }

    async fn list_grants(&self, account: &AccountId, n: usize) -> Result<Vec<Grant>, StoreError> {
        let account = account.to_string();
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(&format!(
                "SELECT {COLUMNS} FROM grants WHERE account = ?1 ORDER BY created_at DESC, id DESC LIMIT ?2"
            ))?;
            let rows = stmt.query_map(params![account, limit(n)], decode)?;
            rows.map(|r| r?).collect()
        })
        .await
    }

    async fn get_grant(&self, account: &AccountId, id: &str) -> Result<Option<Grant>, StoreError> {
        let (account, id) = (account.to_string(), id.to_owned());
        self.read(move |conn| {
            let mut stmt =
                conn.prepare_cached(&format!("SELECT {COLUMNS} FROM grants WHERE account = ?1 AND id = ?2"))?;
            let mut rows = stmt.query_map(params![account, id], decode)?;
            rows.next().transpose()?.transpose()
        })
        .await
    }

    async fn record_grant_use(&self, grant: &Grant, at: Timestamp) -> Result<(), StoreError> {
        let (account, id) = (grant.account.to_string(), grant.id.clone());
        self.write(move |conn| {
            conn.prepare_cached("UPDATE grants SET uses = uses + 1, last_used_at = ?3 WHERE account = ?1 AND id = ?2")?
                .execute(params![account, id, ms(at)])?;
            Ok(())
        })
        .await
    }

    async fn revoke_grant(&self, grant: &Grant, at: Timestamp, by: &str) -> Result<bool, StoreError> {
        let (account, id, by) = (grant.account.to_string(), grant.id.clone(), by.to_owned());
        let retain = ms(at + ma2h_core::decisions::grant_store::KEEP);
        self.write(move |conn| {
            let changed = conn
                .prepare_cached(
                    "UPDATE grants SET revoked_at = ?3, revoked_by = ?4, retain_until = ?5 \
                     WHERE account = ?1 AND id = ?2 AND revoked_at IS NULL",
                )?
                .execute(params![account, id, ms(at), by, retain])?;
            Ok(changed == 1)
        })
        .await
    }

    async fn purge_grants(&self, now: Timestamp, n: usize) -> Result<usize, StoreError> {
        self.write(move |conn| {
            let deleted = conn
                .prepare_cached(
                    "DELETE FROM grants WHERE (account, id) IN (SELECT account, id FROM grants \
                     WHERE retain_until IS NOT NULL AND retain_until <= ?1 ORDER BY retain_until LIMIT ?2)",
                )?
                .execute(params![ms(now), limit(n)])?;
            Ok(deleted)
        })
        .await
    }
}

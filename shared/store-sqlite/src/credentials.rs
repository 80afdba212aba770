//! [`CredentialStore`] over SQLite: hashed API credentials and per-agent sealed secrets.
//!
//! * `put_credential` — upsert by `id` (`key_hash` is `UNIQUE`: reusing a hash under another id
//!   is refused as `Unavailable`).
//! * `credential_by_hash` / `credential_by_id` — point reads through the unique indexes.
//! * `list_credentials` — every credential, oldest first.
//! * `update_credential` — rewrites only `expires_at` and `revoked_at` of an existing id; an
//!   unknown id changes nothing (logged).
//! * `put_secret` / `get_secret` — keyed by `(account, agent, name)`; a put replaces.

use async_trait::async_trait;
use ma2h_core::channels::devices::Device;
use ma2h_core::inter_agent::policy::AccountPolicy;
use ma2h_core::kernel::credentials::{CredentialRecord, PrincipalId};
use ma2h_core::passkeys::Passkey;
use ma2h_core::ports::{CredentialStore, StoreError};
use ma2h_protocol::ids::{AccountId, AgentId, HumanId};
use ma2h_protocol::time::Timestamp;
use rusqlite::{OptionalExtension, Row, params};

use crate::codec::{DbError, ms, opt_ms, opt_ts, parsed, ts};
use crate::{SqliteStore, sql};

#[async_trait]
impl CredentialStore for SqliteStore {
    async fn put_credential(&self, credential: &CredentialRecord) -> Result<(), StoreError> {
        let c = credential.clone();
        self.write(move |conn| {
            conn.prepare_cached(sql::PUT_CREDENTIAL)?.execute(params![
                c.id,
                c.key_hash,
                c.account.as_str(),
                c.principal.kind(),
                c.principal.name(),
                c.label,
                ms(c.created_at),
                opt_ms(c.expires_at),
                opt_ms(c.revoked_at),
            ])?;
            Ok(())
        })
        .await
    }

    async fn credential_by_hash(&self, key_hash: &str) -> Result<Option<CredentialRecord>, StoreError> {
        let key_hash = key_hash.to_owned();
        self.read(move |conn| {
            conn.prepare_cached(sql::CREDENTIAL_BY_HASH)?
                .query_row(params![key_hash], RawCredential::read)
                .optional()?
                .map(RawCredential::decode)
                .transpose()
        })
        .await
    }

    async fn credential_by_id(&self, id: &str) -> Result<Option<CredentialRecord>, StoreError> {
        let id = id.to_owned();
        self.read(move |conn| {
            conn.prepare_cached(sql::CREDENTIAL_BY_ID)?
                .query_row(params![id], RawCredential::read)
                .optional()?
                .map(RawCredential::decode)
                .transpose()
        })
        .await
    }

    async fn list_credentials(&self) -> Result<Vec<CredentialRecord>, StoreError> {
        self.read(|conn| {
            let mut stmt = conn.prepare_cached(sql::LIST_CREDENTIALS)?;
            let rows = stmt.query_map([], RawCredential::read)?;
            rows.map(|row| row?.decode()).collect()
        })
        .await
    }

    async fn list_agents(&self, account: &AccountId) -> Result<Vec<AgentId>, StoreError> {
        let account = account.to_string();
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(sql::LIST_AGENTS)?;
            let names = stmt.query_map([&account], |row| row.get::<_, String>(0))?;
            names.map(|n| parsed(&n?, "credentials.principal_name", AgentId::parse)).collect()
        })
        .await
    }

    async fn update_credential(&self, credential: &CredentialRecord) -> Result<(), StoreError> {
        let c = credential.clone();
        self.write(move |conn| {
            let changed = conn.prepare_cached(sql::UPDATE_CREDENTIAL)?.execute(params![
                opt_ms(c.expires_at),
                opt_ms(c.revoked_at),
                c.id
            ])?;
            if changed == 0 {
                tracing::warn!(credential_id = %c.id, "sqlite store: update of an unknown credential ignored");
            }
            Ok(())
        })
        .await
    }

    async fn touch_operator(&self, account: &AccountId, human: &HumanId, at: Timestamp) -> Result<(), StoreError> {
        let (account, human) = (account.to_string(), human.to_string());
        self.write(move |conn| {
            conn.prepare_cached(sql::TOUCH_OPERATOR)?.execute(params![account, human, at.timestamp_millis()])?;
            Ok(())
        })
        .await
    }

    async fn operators_seen(&self, account: &AccountId) -> Result<Vec<(HumanId, Timestamp)>, StoreError> {
        let account = account.to_string();
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(sql::OPERATORS_SEEN)?;
            let rows = stmt.query_map([&account], |row| Ok((row.get::<_, String>(0)?, row.get::<_, i64>(1)?)))?;
            rows.map(|row| {
                let (human, at) = row?;
                Ok((parsed(&human, "operator_seen.human", HumanId::parse)?, ma2h_protocol::time::from_millis(at)))
            })
            .collect()
        })
        .await
    }

    async fn put_device(&self, d: &Device) -> Result<(), StoreError> {
        let d = d.clone();
        self.write(move |conn| {
            conn.prepare_cached(sql::PUT_DEVICE)?.execute(params![
                d.account.as_str(),
                d.human.as_str(),
                d.id,
                d.label,
                d.created_at.timestamp_millis(),
                d.push_host,
                d.sealed
            ])?;
            Ok(())
        })
        .await
    }

    async fn devices_of(&self, account: &AccountId, human: &HumanId) -> Result<Vec<Device>, StoreError> {
        let (account, human) = (account.clone(), human.clone());
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(sql::DEVICES_OF)?;
            let rows = stmt.query_map(params![account.as_str(), human.as_str()], |row| {
                Ok(Device {
                    account: account.clone(),
                    human: human.clone(),
                    id: row.get(0)?,
                    label: row.get(1)?,
                    created_at: ma2h_protocol::time::from_millis(row.get(2)?),
                    push_host: row.get(3)?,
                    sealed: row.get(4)?,
                })
            })?;
            rows.map(|r| r.map_err(DbError::from)).collect()
        })
        .await
    }

    async fn delete_device(&self, account: &AccountId, human: &HumanId, id: &str) -> Result<bool, StoreError> {
        let (account, human, id) = (account.to_string(), human.to_string(), id.to_owned());
        self.write(move |conn| Ok(conn.prepare_cached(sql::DELETE_DEVICE)?.execute(params![account, human, id])? > 0))
            .await
    }

    async fn put_passkey(&self, p: &Passkey, new: bool) -> Result<bool, StoreError> {
        let p = p.clone();
        self.write(move |conn| {
            let last = p.last_used_at.map(|t| t.timestamp_millis());
            let changed = if new {
                conn.prepare_cached(sql::INSERT_PASSKEY)?.execute(params![
                    p.id,
                    p.account.as_str(),
                    p.human.as_str(),
                    p.name,
                    p.created_at.timestamp_millis(),
                    last,
                    p.state
                ])?
            } else {
                conn.prepare_cached(sql::UPDATE_PASSKEY)?.execute(params![
                    p.id,
                    p.account.as_str(),
                    p.human.as_str(),
                    p.name,
                    last,
                    p.state
                ])?
            };
            Ok(changed > 0)
        })
        .await
    }

    async fn passkeys_of(&self, account: &AccountId, human: &HumanId) -> Result<Vec<Passkey>, StoreError> {
        let (account, human) = (account.to_string(), human.to_string());
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(sql::PASSKEYS_OF)?;
            let rows = stmt.query_map(params![account, human], passkey_row)?;
            rows.map(|r| r.map_err(DbError::from).and_then(passkey_parsed)).collect()
        })
        .await
    }

    async fn passkey_by_id(&self, id: &str) -> Result<Option<Passkey>, StoreError> {
        let id = id.to_owned();
        self.read(move |conn| {
            let row = conn.prepare_cached(sql::PASSKEY_BY_ID)?.query_row([&id], passkey_row).optional()?;
            row.map(passkey_parsed).transpose()
        })
        .await
    }

    async fn delete_passkey(&self, account: &AccountId, human: &HumanId, id: &str) -> Result<bool, StoreError> {
        let (account, human, id) = (account.to_string(), human.to_string(), id.to_owned());
        self.write(move |conn| Ok(conn.prepare_cached(sql::DELETE_PASSKEY)?.execute(params![account, human, id])? > 0))
            .await
    }

    async fn put_secret(
        &self,
        account: &AccountId,
        agent: &AgentId,
        name: &str,
        sealed: &[u8],
    ) -> Result<(), StoreError> {
        let (account, agent, name, sealed) = (account.clone(), agent.clone(), name.to_owned(), sealed.to_vec());
        self.write(move |conn| {
            conn.prepare_cached(sql::PUT_SECRET)?.execute(params![account.as_str(), agent.as_str(), name, sealed])?;
            Ok(())
        })
        .await
    }

    async fn get_secret(
        &self,
        account: &AccountId,
        agent: &AgentId,
        name: &str,
    ) -> Result<Option<Vec<u8>>, StoreError> {
        let (account, agent, name) = (account.clone(), agent.clone(), name.to_owned());
        self.read(move |conn| {
            Ok(conn
                .prepare_cached(sql::GET_SECRET)?
                .query_row(params![account.as_str(), agent.as_str(), name], |r| r.get(0))
                .optional()?)
        })
        .await
    }

    async fn list_secrets(&self, account: &AccountId, agent: &AgentId) -> Result<Vec<String>, StoreError> {
        self.names(sql::LIST_SECRETS, account, agent).await
    }

    async fn delete_secret(&self, account: &AccountId, agent: &AgentId, name: &str) -> Result<bool, StoreError> {
        self.delete(sql::DELETE_SECRET, account, agent, name).await
    }

    async fn get_account_policy(&self, account: &AccountId) -> Result<Option<AccountPolicy>, StoreError> {
        let account = account.to_string();
        self.read(move |conn| {
            let row: Option<(i64, String)> = conn
                .prepare_cached("SELECT version, policy FROM account_policy WHERE account = ?1")?
                .query_row(params![account], |r| Ok((r.get(0)?, r.get(1)?)))
                .optional()?;
            match row {
                None => Ok(None),
                Some((version, text)) => {
                    let mut p = AccountPolicy::from_json(&text)
                        .ok_or_else(|| DbError::Corrupt("account_policy.policy is not a policy".into()))?;
                    p.version = u64::try_from(version).unwrap_or(0);
                    Ok(Some(p))
                }
            }
        })
        .await
    }

    async fn put_account_policy(&self, account: &AccountId, policy: &AccountPolicy) -> Result<bool, StoreError> {
        let (account, policy) = (account.to_string(), policy.clone());
        self.write(move |conn| {
            let version = i64::try_from(policy.version).unwrap_or(i64::MAX);
            // Compare-and-set: insert the first version, or replace exactly the previous one.
            let sql = if version == 1 {
                "INSERT OR IGNORE INTO account_policy (account, version, policy) VALUES (?1, ?2, ?3)"
            } else {
                "UPDATE account_policy SET version = ?2, policy = ?3 WHERE account = ?1 AND version = ?2 - 1"
            };
            Ok(conn.prepare_cached(sql)?.execute(params![account, version, policy.to_json()])? == 1)
        })
        .await
    }

    async fn put_binding(&self, account: &AccountId, agent: &AgentId, host: &str) -> Result<(), StoreError> {
        let (account, agent, host) = (account.clone(), agent.clone(), host.to_owned());
        self.write(move |conn| {
            conn.prepare_cached(sql::PUT_BINDING)?.execute(params![account.as_str(), agent.as_str(), host])?;
            Ok(())
        })
        .await
    }

    async fn delete_binding(&self, account: &AccountId, agent: &AgentId, host: &str) -> Result<bool, StoreError> {
        self.delete(sql::DELETE_BINDING, account, agent, host).await
    }

    async fn list_bindings(&self, account: &AccountId, agent: &AgentId) -> Result<Vec<String>, StoreError> {
        self.names(sql::LIST_BINDINGS, account, agent).await
    }
}

/// A credential row as stored, before validation.
struct RawCredential {
    id: String,
    key_hash: String,
    account: String,
    principal_kind: String,
    principal_name: String,
    label: Option<String>,
    created_at: i64,
    expires_at: Option<i64>,
    revoked_at: Option<i64>,
}

impl RawCredential {
    fn read(r: &Row<'_>) -> rusqlite::Result<Self> {
        Ok(Self {
            id: r.get(0)?,
            key_hash: r.get(1)?,
            account: r.get(2)?,
            principal_kind: r.get(3)?,
            principal_name: r.get(4)?,
            label: r.get(5)?,
            created_at: r.get(6)?,
            expires_at: r.get(7)?,
            revoked_at: r.get(8)?,
        })
    }

    fn decode(self) -> Result<CredentialRecord, DbError> {
        let what = |field: &str| format!("credentials.{field} of {}", self.id);
        let name = &self.principal_name;
        let principal = match self.principal_kind.as_str() {
            "agent" => PrincipalId::Agent(parsed(name, &what("principal_name"), AgentId::parse)?),
            "operator" => PrincipalId::Operator(parsed(name, &what("principal_name"), HumanId::parse)?),
            other => {
                return Err(DbError::Corrupt(format!("{}: unknown principal kind {other:?}", what("principal_kind"))));
            }
        };
        Ok(CredentialRecord {
            account: parsed(&self.account, &what("account"), AccountId::parse)?,
            principal,
            created_at: ts(self.created_at, &what("created_at"))?,
            expires_at: opt_ts(self.expires_at, &what("expires_at"))?,
            revoked_at: opt_ts(self.revoked_at, &what("revoked_at"))?,
            key_hash: self.key_hash,
            label: self.label,
            id: self.id,
        })
    }
}

impl SqliteStore {
    /// One text column of rows keyed by `(account, agent)`.
    async fn names(
        &self,
        query: &'static str,
        account: &AccountId,
        agent: &AgentId,
    ) -> Result<Vec<String>, StoreError> {
        let (account, agent) = (account.clone(), agent.clone());
        self.read(move |conn| {
            let mut stmt = conn.prepare_cached(query)?;
            let rows = stmt.query_map(params![account.as_str(), agent.as_str()], |r| r.get::<_, String>(0))?;
            Ok(rows.collect::<Result<Vec<_>, _>>()?)
        })
        .await
    }

    /// Delete one `(account, agent, key)` row; `true` if it existed.
    async fn delete(
        &self,
        query: &'static str,
        account: &AccountId,
        agent: &AgentId,
        key: &str,
    ) -> Result<bool, StoreError> {
        let (account, agent, key) = (account.clone(), agent.clone(), key.to_owned());
        self.write(move |conn| {
            Ok(conn.prepare_cached(query)?.execute(params![account.as_str(), agent.as_str(), key])? > 0)
        })
        .await
    }
}

type PasskeyRow = (String, String, String, String, i64, Option<i64>, String);

fn passkey_row(row: &rusqlite::Row<'_>) -> rusqlite::Result<PasskeyRow> {
    Ok((row.get(0)?, row.get(1)?, row.get(2)?, row.get(3)?, row.get(4)?, row.get(5)?, row.get(6)?))
}

fn passkey_parsed((id, account, human, name, created, last, state): PasskeyRow) -> Result<Passkey, DbError> {
    Ok(Passkey {
        id,
        account: parsed(&account, "passkeys.account", AccountId::parse)?,
        human: parsed(&human, "passkeys.human", HumanId::parse)?,
        name,
        created_at: ma2h_protocol::time::from_millis(created),
        last_used_at: last.map(ma2h_protocol::time::from_millis),
        state,
    })
}

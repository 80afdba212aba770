//! Standing grants and their store port (issue 40): "allow this for the next hour / this session
//! / this project / this agent". A grant answers a later ask of the same agent carrying the same
//! grant key inside its scope; the use cases are in [`crate::decisions::grants`].

use async_trait::async_trait;
use ma2h_protocol::ids::{AccountId, AgentId, HumanId, MessageId};
use ma2h_protocol::time::Timestamp;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::kernel::error::StoreError;

/// Revoked and expired grants stay listed this long (the record of who granted what).
pub const KEEP: chrono::Duration = chrono::Duration::days(30);

/// Where a grant applies besides its agent and key.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum GrantScope {
    /// Until `expires_at`.
    Minutes,
    /// Asks made in this session of the agent (§16).
    Session { session: String },
    /// Asks whose `agent.project` is this.
    Project { project: String },
    /// Every ask of the agent with the key, until revoked.
    Agent,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Grant {
    /// `grt_…`.
    pub id: String,
    pub account: AccountId,
    pub agent: AgentId,
    /// The ask's `request.grant_key` (e.g. `Bash:git push`).
    pub key: String,
    pub scope: GrantScope,
    /// The answer it gives (the granting answer's value).
    pub value: Value,
    pub granted_by: HumanId,
    /// The ask whose answer created it.
    pub from_message: MessageId,
    pub created_at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_by: Option<String>,
    /// Asks it answered, and the last one's time (updated best effort).
    #[serde(default)]
    pub uses: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_used_at: Option<Timestamp>,
}

impl Grant {
    pub fn is_active(&self, now: Timestamp) -> bool {
        self.revoked_at.is_none() && self.expires_at.is_none_or(|e| now < e)
    }

    /// Whether the scope admits an ask made in `session` for `project`.
    pub fn covers(&self, session: Option<&str>, project: Option<&str>) -> bool {
        match &self.scope {
            GrantScope::Minutes | GrantScope::Agent => true,
            GrantScope::Session { session: s } => session == Some(s.as_str()),
            GrantScope::Project { project: p } => project == Some(p.as_str()),
        }
    }

    /// The store may drop it after this: a revoked or expired grant is kept a while for the
    /// record (the audit of issue 42 builds on it).
    pub fn retain_until(&self) -> Option<Timestamp> {
        match (self.revoked_at, self.expires_at) {
            (Some(r), _) => Some(r + KEEP),
            (None, Some(e)) => Some(e + KEEP),
            (None, None) => None,
        }
    }
}

/// The store port: grants by id, found by (account, agent, key), listed by account.
#[async_trait]
pub trait GrantStore: Send + Sync + 'static {
    /// Write (create or replace) a grant.
    async fn put_grant(&self, grant: &Grant) -> Result<(), StoreError>;
    /// The account's grants of `agent` for `key`, active or not.
    async fn grants_for(&self, account: &AccountId, agent: &AgentId, key: &str) -> Result<Vec<Grant>, StoreError>;
    /// The account's grants, newest first, at most `limit`.
    async fn list_grants(&self, account: &AccountId, limit: usize) -> Result<Vec<Grant>, StoreError>;
    /// One grant by id (reads the account's grants where the store keys them otherwise).
    async fn get_grant(&self, account: &AccountId, id: &str) -> Result<Option<Grant>, StoreError>;
    /// Count one use (`uses + 1`, `last_used_at`) without rewriting the rest, so a revocation
    /// written meanwhile stands.
    async fn record_grant_use(&self, grant: &Grant, at: Timestamp) -> Result<(), StoreError>;
    /// Revoke at `at` (only a grant not yet revoked: `false` otherwise), without rewriting the
    /// rest.
    async fn revoke_grant(&self, grant: &Grant, at: Timestamp, by: &str) -> Result<bool, StoreError>;
    /// Delete up to `limit` grants past their retention (revoked or expired for a while); a
    /// store with a native TTL returns 0.
    async fn purge_grants(&self, now: Timestamp, limit: usize) -> Result<usize, StoreError>;
}

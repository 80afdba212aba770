//! The audit ledger's records and store port (issue 42, docs/design/audit.md). Entries are stored
//! unchained, keyed per (account, shard) by `{at ms, 13 digits}#{id}`; checkpoints by
//! (account, seq), each with the sort key of the last entry it covers in every shard.

use std::collections::BTreeMap;

use async_trait::async_trait;
use ma2h_protocol::audit::{Entry, SignedCheckpoint};
use ma2h_protocol::ids::AccountId;
use ma2h_protocol::time::{self, Timestamp};
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::kernel::error::StoreError;

/// Chains per account on DynamoDB ([`AuditStore::audit_shards`]: one on SQLite, whose single
/// writer appends in time order): an event goes to one at random, so no single partition takes an
/// account's whole ledger. DynamoDB gives a partition 1,000 WCU/s; an ask at the scale goal's
/// 20,000/s on one account writes ~3 entries of 2 WRU each (in a transaction): 120,000 WRU/s,
/// under 500 a partition over 256 (docs/COST.md "Audit ledger").
pub const SHARDS: u16 = 256;

/// One recorded event, as stored.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AuditRecord {
    /// `aud_…`.
    pub id: String,
    pub account: AccountId,
    pub shard: u16,
    pub at: Timestamp,
    pub kind: String,
    pub principal: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub detail: Map<String, Value>,
}

impl AuditRecord {
    /// Its place in its shard: time, then id (ids are unique, so no two keys tie).
    pub fn sort_key(&self) -> String {
        format!("{:013}#{}", self.at.timestamp_millis().max(0), self.id)
    }

    /// The export form, before the chain numbers it.
    pub fn entry(&self) -> Entry {
        Entry {
            account: self.account.to_string(),
            shard: self.shard,
            seq: 0,
            id: self.id.clone(),
            at: time::format(self.at),
            kind: self.kind.clone(),
            principal: self.principal.clone(),
            target: self.target.clone(),
            digest: self.digest.clone(),
            detail: self.detail.clone(),
        }
    }
}

/// A signed checkpoint and, per shard, the sort key of the last entry it covers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StoredCheckpoint {
    pub signed: SignedCheckpoint,
    pub at: Timestamp,
    pub cursors: BTreeMap<u16, String>,
    /// The ledger's oldest kept checkpoint: the entries it covers and the checkpoints before it
    /// were pruned past `MA2H_AUDIT_RETENTION_DAYS`, so an export from the beginning starts here.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub anchor: bool,
}

impl StoredCheckpoint {
    pub fn seq(&self) -> u64 {
        self.signed.body.seq
    }
}

/// The store port of the ledger.
#[async_trait]
pub trait AuditStore: Send + Sync + 'static {
    /// How many chains an account's ledger has here: [`SHARDS`] unless the store has no
    /// partition to spread (SQLite: one, so its entries append at the end of one index in time
    /// order instead of dirtying a page in each of 256 places).
    fn audit_shards(&self) -> u16 {
        SHARDS
    }
    /// Store entries (all of one account or several; ids are unique). An entry already stored
    /// under its key is kept as it is: appending the same record again (a retry) is a no-op.
    async fn append_audit(&self, records: &[AuditRecord]) -> Result<(), StoreError>;
    /// One shard's entries after the sort key `after` (from the start without one) whose time is
    /// at most `until`, in sort-key order, at most `limit`.
    async fn audit_entries(
        &self,
        account: &AccountId,
        shard: u16,
        after: Option<&str>,
        until: Timestamp,
        limit: usize,
    ) -> Result<Vec<AuditRecord>, StoreError>;
    /// The account's latest checkpoint.
    async fn last_audit_checkpoint(&self, account: &AccountId) -> Result<Option<StoredCheckpoint>, StoreError>;
    /// The account's checkpoints from `from_seq` on, in order, at most `limit`.
    async fn audit_checkpoints(
        &self,
        account: &AccountId,
        from_seq: u64,
        limit: usize,
    ) -> Result<Vec<StoredCheckpoint>, StoreError>;
    /// Store a checkpoint unless one with its `seq` exists (`false`: another sealer made it).
    async fn put_audit_checkpoint(&self, account: &AccountId, cp: &StoredCheckpoint) -> Result<bool, StoreError>;
    /// Every account that has entries.
    async fn audit_accounts(&self) -> Result<Vec<AccountId>, StoreError>;
    /// Retention: store `keep` again marked as the anchor, delete every checkpoint before it,
    /// then delete at most `limit` of the entries it covers (per shard, sort keys at or before
    /// its cursor). Returns the entries deleted: called again while it returns `limit`.
    async fn prune_audit(
        &self,
        account: &AccountId,
        keep: &StoredCheckpoint,
        limit: usize,
    ) -> Result<usize, StoreError>;
}

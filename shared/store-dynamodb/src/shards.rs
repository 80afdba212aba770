//! Sharded sweeper partitions (issue 38): every time index the sweeper reads — `DUE`, `RET`,
//! `PUSH`, `NOTEDUE`, `MBXDUE`, `MBXRET`, `SESSDUE`, `SESSBNC`, `SESSRET` — used to be one
//! constant partition, so every submit, terminal, push retry, directive and lease wrote to one
//! index partition (1,000 WCU/s for the whole deployment; docs/COST.md "Partition heat"). Each is
//! now `{base}#{shard:03}`, the shard taken from a hash of the item's own `pk`: an item always
//! lands in the same shard, so moving its due time rewrites one partition, and the sweeper reads
//! all shards in parallel, merging them by due time.
//!
//! Items written before the upgrade keep the bare `{base}` partition; the sweeper reads it too,
//! so nothing is stranded and no backfill is needed. The shard count may be raised at any time
//! (`MA2H_DYNAMODB_SHARDS`); lowering it strands the items in the shards above the new count
//! until it is raised again — the store refuses nothing, the deployment guide says so.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use futures_util::{StreamExt as _, TryStreamExt as _};
use ma2h_core::ports::StoreError;

use crate::codec::{get_n, n, s};
use crate::{DynamoStore, unavailable};

/// Enough for the issue 38 goal with margin: the hottest family, `DUE` at 20,000 asks/s, puts
/// and deletes 40,000 WCU/s, 313 per shard (the bound is 500).
pub const DEFAULT_SHARDS: u16 = 128;
/// More would make every sweep a thousand reads per family for nothing.
pub const MAX_SHARDS: u16 = 1024;
/// Shards of an account's session list (`SESSACCT#{account}`): every registration and purge of
/// the account writes it, 667 WCU/s for one account at issue 38's goal; the operator's list reads
/// them all (five Queries with the unsharded one), so it stays a few.
pub const ACCOUNT_LIST_SHARDS: u16 = 4;
/// Shards of an account's message listing (`{account}#open` / `{account}#done` in the `inbox`
/// index): every submit and terminal writes one entry there, 40,000 WCU/s for one account at issue
/// 38's goal, 313 per shard. A listing page reads every shard (a k-way merge, `listing.rs`).
pub const DEFAULT_LIST_SHARDS: u16 = 128;
/// Shards of one family read at once.
const READ_CONCURRENCY: usize = 16;

/// How many shards each sweeper partition family has, and how many an account's listing has.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Shards {
    sweep: u16,
    list: u16,
}

impl Default for Shards {
    fn default() -> Self {
        Self { sweep: DEFAULT_SHARDS, list: DEFAULT_LIST_SHARDS }
    }
}

impl Shards {
    /// `count` shards for every family (sweeper and listing), clamped to `1..=MAX_SHARDS`.
    pub fn new(count: u16) -> Self {
        let count = count.clamp(1, MAX_SHARDS);
        Self { sweep: count, list: count }
    }

    /// The same, with `count` shards for an account's listing (`MA2H_DYNAMODB_LIST_SHARDS`).
    pub fn with_list(self, count: u16) -> Self {
        Self { list: count.clamp(1, MAX_SHARDS), ..self }
    }

    pub fn count(self) -> u16 {
        self.sweep
    }

    pub fn list_count(self) -> u16 {
        self.list
    }

    /// The partition of `base` that the item keyed `pk` belongs to.
    pub fn key(self, base: &str, pk: &str) -> String {
        shard_of(base, pk, self.sweep)
    }

    /// Every partition of `base` the sweeper reads: the unsharded one (items written before the
    /// upgrade), then each shard.
    pub fn all(self, base: &str) -> Vec<String> {
        partitions(base, self.sweep)
    }

    /// The listing partition of `base` (`{account}#open`) that the message keyed `pk` belongs to.
    pub fn list_key(self, base: &str, pk: &str) -> String {
        shard_of(base, pk, self.list)
    }

    /// Every partition of a listing: the unsharded one (entries written before issue 38), then
    /// each shard.
    pub fn list_all(self, base: &str) -> Vec<String> {
        partitions(base, self.list)
    }
}

fn shard_of(base: &str, pk: &str, count: u16) -> String {
    format!("{base}#{:03}", fnv1a(pk) % u64::from(count))
}

fn partitions(base: &str, count: u16) -> Vec<String> {
    std::iter::once(base.to_owned()).chain((0..count).map(|i| format!("{base}#{i:03}"))).collect()
}

/// FNV-1a: stable across processes and releases (a shard is stored in the item).
fn fnv1a(text: &str) -> u64 {
    text.bytes().fold(0xcbf2_9ce4_8422_2325, |h, b| (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3))
}

/// Which rows of a partition family are due.
pub(crate) enum Due {
    /// `sk <= at`
    AtOrBefore(i64),
    /// `sk < at`
    Before(i64),
    /// Every row (an outbox: present means owed).
    All,
}

impl DynamoStore {
    /// The due rows of one sweeper partition family, oldest first: every shard read at once
    /// (`limit` from each), merged by the sort key, the first `limit` kept. One Query per shard
    /// per call, whatever the open set holds.
    pub(crate) async fn due_rows(
        &self,
        index: &str,
        (pk_attr, sk_attr): (&str, &str),
        base: &str,
        due: Due,
        limit: usize,
    ) -> Result<Vec<HashMap<String, AttributeValue>>, StoreError> {
        let limit_i32 = i32::try_from(limit.max(1)).unwrap_or(i32::MAX);
        let condition = match due {
            Due::AtOrBefore(_) => format!("{pk_attr} = :p AND {sk_attr} <= :at"),
            Due::Before(_) => format!("{pk_attr} = :p AND {sk_attr} < :at"),
            Due::All => format!("{pk_attr} = :p"),
        };
        let at = match due {
            Due::AtOrBefore(t) | Due::Before(t) => Some(t),
            Due::All => None,
        };
        let reads = self.shards.all(base).into_iter().map(|partition| {
            let mut q = self
                .client
                .query()
                .table_name(&self.table)
                .index_name(index)
                .key_condition_expression(condition.clone())
                .expression_attribute_values(":p", s(partition))
                .limit(limit_i32);
            if let Some(t) = at {
                q = q.expression_attribute_values(":at", n(t));
            }
            async move { q.send().await.map(|out| out.items.unwrap_or_default()).map_err(|e| unavailable("Query", e)) }
        });
        let mut rows: Vec<HashMap<String, AttributeValue>> = futures_util::stream::iter(reads)
            .buffer_unordered(READ_CONCURRENCY)
            .try_fold(Vec::new(), |mut all, page| async move {
                all.extend(page);
                Ok(all)
            })
            .await?;
        rows.sort_by_key(|r| get_n(r, sk_attr).unwrap_or(i64::MAX));
        rows.truncate(limit);
        Ok(rows)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_item_always_lands_in_the_same_shard_and_shards_spread() {
        let shards = Shards::new(8);
        assert_eq!(shards.key("DUE", "MSG#acme#msg_1"), shards.key("DUE", "MSG#acme#msg_1"));
        let used: std::collections::HashSet<String> =
            (0..200).map(|i| shards.key("DUE", &format!("MSG#acme#msg_{i}"))).collect();
        assert_eq!(used.len(), 8, "200 items cover all 8 shards: {used:?}");
        assert!(used.iter().all(|k| k.starts_with("DUE#00")));
    }

    #[test]
    fn the_sweeper_reads_the_unsharded_partition_then_every_shard() {
        assert_eq!(Shards::new(3).all("PUSH"), ["PUSH", "PUSH#000", "PUSH#001", "PUSH#002"]);
        assert_eq!(Shards::new(0).count(), 1);
        assert_eq!(Shards::new(u16::MAX).count(), MAX_SHARDS);
        assert_eq!(Shards::new(3).with_list(2).list_all("acme#open"), ["acme#open", "acme#open#000", "acme#open#001"]);
        assert_eq!(Shards::default().list_count(), DEFAULT_LIST_SHARDS);
    }
}

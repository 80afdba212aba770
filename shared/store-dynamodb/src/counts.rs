//! The account's open counts from maintained counters (issue 38: `?counts=true` used to read
//! every open entry of the account — ~250 MB of index at 1M open asks — on every inbox view).
//!
//! * **Counter items** `OPENCNT#{account}#{shard}` / `CNT`, one cell per (priority, type):
//!   `c{rank}{n|a|t}`. The shard is the message's listing shard (`Shards::list_key`), so a busy
//!   account's counter writes spread like its listing writes (312 WCU/s a shard at the goal).
//!   Reading the counts is one eventually consistent `BatchGetItem` of every shard — whatever the
//!   open set holds.
//! * **Which messages are counted:** an open message item carries `cnt` (written by
//!   `codec::message_item`). Its insert adds one to its cell; the terminal transition that wins the
//!   §7 compare-and-set subtracts one iff the item it replaced carried `cnt` (the `PutItem`'s
//!   `ALL_OLD`, free). Open messages from before the counters have no `cnt`: they are neither in
//!   the counts nor ever subtracted, until `ma2h-admin-aws backfill-counts` counts them — each in
//!   one transaction with its `cnt` stamp, so a message is counted exactly once whatever runs
//!   beside it.
//! * A counter write that fails after its message write (after the SDK's retries) is logged, not
//!   returned: the message is committed and the client must see its outcome. The counts are then
//!   off by one until `ma2h-admin-aws recount-open` rewrites the account's counters from its
//!   messages (they are a view, not a limit — the §8.6 depth limit counts the agent's `@open`
//!   partition instead, `admission.rs`).
//! * **Filters:** counts by type and priority come from the cells. A filter on agent, project or
//!   tag is counted by reading the filtered listing, at most [`MATCH_SCAN_PAGES`] pages' worth of
//!   entries across the shards; past it `matching` is a lower bound (`matching_partial`).

use std::collections::HashMap;

use aws_sdk_dynamodb::types::{AttributeValue, Select};
use futures_util::{StreamExt as _, TryStreamExt as _};
use ma2h_core::messages::listing::{ListFilter, MessageSummary, OpenCounts};
use ma2h_core::messages::records::MessageRecord;
use ma2h_core::ports::StoreError;
use ma2h_protocol::envelope::{MessageType, Priority};
use ma2h_protocol::ids::{AccountId, key_part};

use crate::codec::*;
use crate::{DynamoStore, unavailable};

type R<T> = Result<T, StoreError>;

/// The sort key of a counter item.
pub(crate) const COUNTER_SK: &str = "CNT";
/// The attribute marking an open message as counted.
pub(crate) const COUNTED: &str = "cnt";
/// Index entries a filtered count reads at most, over all shards, as a multiple of what one
/// listing page may read (`MAX_SCANNED_PER_PAGE`: 10,000 by default).
pub const MATCH_SCAN_PAGES: i32 = 5;

const PRIORITIES: [Priority; 4] = [Priority::Urgent, Priority::High, Priority::Normal, Priority::Low];
const KINDS: [MessageType; 3] = [MessageType::Notify, MessageType::Ask, MessageType::Task];

fn counter_base(account: &AccountId) -> String {
    format!("OPENCNT#{}", key_part(account.as_str()))
}

/// The cell of one (priority, type).
fn cell(priority: Priority, kind: MessageType) -> String {
    let k = match kind {
        MessageType::Notify => 'n',
        MessageType::Ask => 'a',
        MessageType::Task => 't',
    };
    format!("c{}{k}", priority.rank())
}

/// The counter item (key) a message is counted in.
pub(crate) fn counter_key(d: &DynamoStore, m: &MessageRecord) -> Item {
    key(d.shards.list_key(&counter_base(&m.account), &msg_pk(&m.account, &m.id)), COUNTER_SK)
}

/// The `ADD` of `delta` to `m`'s cell, as an update (expression, names, values).
pub(crate) fn cell_update(
    m: &MessageRecord,
    delta: i64,
) -> (String, HashMap<String, String>, HashMap<String, AttributeValue>) {
    (
        "ADD #c :d".to_owned(),
        HashMap::from([("#c".to_owned(), cell(m.priority, m.kind))]),
        HashMap::from([(":d".to_owned(), n(delta))]),
    )
}

impl DynamoStore {
    /// Add `delta` to `m`'s cell. A failure is logged, not returned (module docs).
    pub(crate) async fn count_open_message(&self, m: &MessageRecord, delta: i64) {
        let (update, names, values) = cell_update(m, delta);
        let res = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(counter_key(self, m)))
            .update_expression(update)
            .set_expression_attribute_names(Some(names))
            .set_expression_attribute_values(Some(values))
            .send()
            .await;
        if let Err(e) = res {
            tracing::warn!(message = %m.id, error = ?e, "open counter not updated: the counts are off by one");
        }
    }

    /// The account's open counts: the cells of every shard; `matching` from the cells, or from a
    /// bounded read of the filtered listing (module docs).
    pub(crate) async fn open_counts_maintained(&self, account: &AccountId, f: &ListFilter) -> R<OpenCounts> {
        let keys: Vec<Item> = (0..self.shards.list_count())
            .map(|i| key(format!("{}#{i:03}", counter_base(account)), COUNTER_SK))
            .collect();
        let mut counts = OpenCounts::default();
        let by_cells = f.agent_id.is_none() && f.project.is_none() && f.tag.is_none();
        for item in self.batch_get(keys, false, None).await? {
            for p in PRIORITIES {
                for k in KINDS {
                    let v = opt_n(&item, &cell(p, k))?.unwrap_or(0);
                    // a counter driven below zero by drift counts as none
                    let v = u64::try_from(v).unwrap_or(0);
                    let matches = by_cells && f.kind.is_none_or(|x| x == k) && f.priority.is_none_or(|x| x == p);
                    counts.add(p, k, matches, v);
                }
            }
        }
        if !by_cells {
            let (matching, partial) = self.count_matching(account, f).await?;
            counts.matching = matching;
            counts.matching_partial = partial;
        }
        Ok(counts)
    }

    /// Open entries passing `f`, reading at most [`MATCH_SCAN_PAGES`] pages' worth across the shards; `true`
    /// when the budget ended the count early.
    async fn count_matching(&self, account: &AccountId, f: &ListFilter) -> R<(u64, bool)> {
        let partitions = self.shards.list_all(&list_pk(account, true));
        let total = self.max_scanned.saturating_mul(MATCH_SCAN_PAGES);
        let budget = (total / i32::try_from(partitions.len()).unwrap_or(i32::MAX)).max(10);
        let reads = partitions.into_iter().map(|p| self.count_matching_in(p, f, budget));
        let parts: Vec<(u64, bool)> = futures_util::stream::iter(reads).buffer_unordered(32).try_collect().await?;
        Ok(parts.into_iter().fold((0, false), |(n, cut), (m, c)| (n + m, cut || c)))
    }

    async fn count_matching_in(&self, partition: String, f: &ListFilter, budget: i32) -> R<(u64, bool)> {
        let (mut matching, mut scanned, mut start) = (0u64, 0i32, None);
        let mut legacy = false;
        loop {
            let res = self
                .client
                .query()
                .table_name(&self.table)
                .index_name(if legacy { crate::listing::LEGACY_INDEX } else { crate::listing::INDEX })
                .key_condition_expression("list_pk = :p")
                .expression_attribute_values(":p", s(&partition))
                .select(Select::AllProjectedAttributes)
                .limit((budget - scanned).clamp(1, 1000))
                .set_exclusive_start_key(start.clone())
                .send()
                .await;
            let out = match res {
                // An upgrade in progress: the `inbox` index is not there yet (docs/dynamodb.md).
                Err(e) if !legacy && crate::listing::index_unavailable(&e) => {
                    legacy = true;
                    continue;
                }
                other => other.map_err(|e| unavailable("Query", e))?,
            };
            scanned += out.scanned_count();
            for item in out.items() {
                let m: MessageSummary = match legacy {
                    false => summary_from(item)?,
                    true => MessageSummary::from(&message_from(item)?),
                };
                matching += u64::from(f.matches(&m));
            }
            match out.last_evaluated_key {
                Some(k) if !k.is_empty() && scanned >= budget => return Ok((matching, true)),
                Some(k) if !k.is_empty() => start = Some(k),
                _ => return Ok((matching, false)),
            }
        }
    }
}

impl DynamoStore {
    /// A scan of the open message items that also pass `also` (which may use `#cnt`, the
    /// counted mark): the admin repairs' one read (never on a request path).
    fn open_messages_scan(&self, also: &str) -> aws_sdk_dynamodb::operation::scan::builders::ScanFluentBuilder {
        self.client
            .scan()
            .table_name(&self.table)
            .filter_expression(format!("sk = :msg AND #st = :open AND {also}"))
            .expression_attribute_names("#st", "status")
            .expression_attribute_names("#cnt", COUNTED)
            .expression_attribute_values(":msg", s(MSG_SK))
            .expression_attribute_values(":open", s("open"))
    }

    /// Count the open messages written before the counters (no `cnt`): each one's stamp — `cnt`,
    /// and for an ask or task its `@open` keys (`admission.rs`) — and its cell's `ADD` in one
    /// transaction, conditioned on the message being open and unstamped, so a message is counted
    /// once whatever runs beside it (a terminal either comes first and the stamp is refused, or
    /// after and subtracts it). A scan of the table; idempotent; returns how many it counted.
    /// (`ma2h-admin-aws backfill-counts`.)
    pub async fn backfill_counts(&self) -> R<usize> {
        use aws_sdk_dynamodb::types::{TransactWriteItem, Update};
        let mut counted = 0;
        let mut items = self.open_messages_scan("attribute_not_exists(#cnt)").into_paginator().items().send();
        while let Some(item) = items.next().await {
            let item = item.map_err(|e| unavailable("Scan", e))?;
            let m = message_from(&item)?;
            let mut stamp = "SET #cnt = :one".to_owned();
            let mut values = HashMap::from([(":one".to_owned(), n(1)), (":open".to_owned(), s("open"))]);
            if m.kind != MessageType::Notify {
                stamp.push_str(", mbx_pk = :op, mbx_sk = :id");
                values.insert(":op".into(), s(open_pk_of(&m.account, &m.agent_id)));
                values.insert(":id".into(), s(m.id.as_str()));
            }
            let build = |e: aws_sdk_dynamodb::error::BuildError| unavailable("update", e);
            let stamp = Update::builder()
                .table_name(&self.table)
                .set_key(Some(key(msg_pk(&m.account, &m.id), MSG_SK)))
                .update_expression(stamp)
                .condition_expression("#st = :open AND attribute_not_exists(#cnt)")
                .expression_attribute_names("#st", "status")
                .expression_attribute_names("#cnt", COUNTED)
                .set_expression_attribute_values(Some(values))
                .build()
                .map_err(build)?;
            let (add, names, values) = cell_update(&m, 1);
            let add = Update::builder()
                .table_name(&self.table)
                .set_key(Some(counter_key(self, &m)))
                .update_expression(add)
                .set_expression_attribute_names(Some(names))
                .set_expression_attribute_values(Some(values))
                .build()
                .map_err(build)?;
            let tx = vec![
                TransactWriteItem::builder().update(stamp).build(),
                TransactWriteItem::builder().update(add).build(),
            ];
            // refused: closed or stamped meanwhile — nothing to count
            if self.transact(tx).await? {
                counted += 1;
            }
        }
        Ok(counted)
    }
}

impl DynamoStore {
    /// Recount `account`'s open counters from its counted open messages and overwrite them (every
    /// shard: those holding none are set to zero). The repair for drift — a counter write lost
    /// after its message write (module docs). Submits and terminals of the account while it runs
    /// may be lost from the counts: run it when the account is quiet. A scan of the table; returns
    /// how many open messages it counted. (`ma2h-admin-aws recount-open`.)
    pub async fn recount_counts(&self, account: &AccountId) -> R<usize> {
        // (account names are escaped in keys: `MSG#acme#` never starts another account's)
        let prefix = format!("MSG#{}#", key_part(account.as_str()));
        let mut cells: HashMap<String, HashMap<String, i64>> = HashMap::new();
        let mut counted = 0;
        let mut items = self
            .open_messages_scan("begins_with(pk, :p) AND attribute_exists(#cnt)")
            .expression_attribute_values(":p", s(prefix))
            .into_paginator()
            .items()
            .send();
        while let Some(item) = items.next().await {
            let m = message_from(&item.map_err(|e| unavailable("Scan", e))?)?;
            let shard = get_s(&counter_key(self, &m), "pk")?.to_owned();
            *cells.entry(shard).or_default().entry(cell(m.priority, m.kind)).or_default() += 1;
            counted += 1;
        }
        for i in 0..self.shards.list_count() {
            let pk = format!("{}#{i:03}", counter_base(account));
            let mut item = key(pk.clone(), COUNTER_SK);
            for (c, v) in cells.remove(&pk).unwrap_or_default() {
                item.insert(c, n(v));
            }
            self.put_if(item, None, HashMap::new()).await?;
        }
        Ok(counted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_priority_and_type_has_its_own_cell() {
        let cells: std::collections::HashSet<String> =
            PRIORITIES.iter().flat_map(|p| KINDS.iter().map(move |k| cell(*p, *k))).collect();
        assert_eq!(cells.len(), 12);
        assert_eq!(cell(Priority::Urgent, MessageType::Ask), "c0a");
    }
}

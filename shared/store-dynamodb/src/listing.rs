//! The operator listing on DynamoDB, read from the `inbox` index (partition: account + open or
//! done; sort key: the listing order, see `codec::list_sk`). The index projects only the summary
//! attributes, so a page never reads an envelope.
//!
//! Keyset pages are key conditions (`list_sk > cursor` ascending for open, `< cursor` descending
//! for done), so a page starts exactly after the previous one even if that row has since moved.
//! A priority filter on the open listing narrows the key range (the sort key leads with the
//! rank); the other filters are a `FilterExpression`, applied before the page is cut: the query
//! keeps reading until the page is full or the partition ends. The counts read every open entry
//! of the account once (small items: see docs/COST.md).

use std::collections::HashMap;

use futures_util::{StreamExt as _, TryStreamExt as _};

use aws_sdk_dynamodb::error::{ProvideErrorMetadata, SdkError};
use aws_sdk_dynamodb::operation::query::QueryError;
use aws_sdk_dynamodb::types::AttributeValue;
use ma2h_core::messages::listing::{ListCursor, ListFilter, ListPage, ListQuery, MessageSummary};
use ma2h_core::ports::StoreError;
use ma2h_protocol::ids::AccountId;

use crate::codec::{
    MSG_SK, PUSH_READ, cursor_from_sk, get_s, key, list_pk, list_sk, message_from, message_item, msg_pk, push_from, s,
    summary_from,
};
use crate::merge::{self, End, Lane, Step};
use crate::{DynamoStore, unavailable};

/// The index the listing reads.
pub(crate) const INDEX: &str = "inbox";

/// One Query's key condition, filter and their names/values.
#[derive(Default)]
struct Expr {
    /// The filter itself, for the legacy index (applied here, not by DynamoDB).
    filter_of: ListFilter,
    key: String,
    filter: Vec<&'static str>,
    names: HashMap<String, String>,
    values: HashMap<String, AttributeValue>,
}

impl Expr {
    fn value(&mut self, k: &str, v: AttributeValue) {
        self.values.insert(k.to_owned(), v);
    }

    fn filter(&mut self, clause: &'static str, name: (&str, &str), value: (&str, AttributeValue)) {
        self.filter.push(clause);
        self.names.insert(name.0.to_owned(), name.1.to_owned());
        self.value(value.0, value.1);
    }

    fn filters(&mut self, f: &ListFilter, priority_in_key: bool) {
        if let Some(k) = f.kind {
            self.filter("#kind = :kind", ("#kind", "kind"), (":kind", s(k.as_str())));
        }
        if let (Some(p), false) = (f.priority, priority_in_key) {
            self.filter("#prio = :prio", ("#prio", "priority"), (":prio", s(p.as_str())));
        }
        if let Some(a) = &f.agent_id {
            self.filter("#agent = :agent", ("#agent", "agent_id"), (":agent", s(a.as_str())));
        }
        if let Some(p) = &f.project {
            self.filter("#proj = :proj", ("#proj", "project"), (":proj", s(p)));
        }
        if let Some(t) = &f.tag {
            self.filter("contains(#tags, :tag)", ("#tags", "tags"), (":tag", s(t)));
        }
    }
}

/// The key condition and filter for reading `partition` after `after` (a sort key) for a page of
/// `q`; `None` when the read is empty by construction (a cursor already past the filtered
/// priority).
fn page_expr(partition: &str, q: &ListQuery, after: Option<&str>) -> Option<Expr> {
    let mut e = Expr { key: "list_pk = :p".into(), ..Expr::default() };
    e.value(":p", s(partition));
    match (q.open, q.filter.priority, after) {
        (true, Some(p), after) => {
            // Every id character sorts above a space, so `sk + " "` is the least key after `sk`.
            let floor = format!("{}#", p.rank());
            let lo = match after {
                Some(a) if a >= floor.as_str() => format!("{a} "),
                _ => floor,
            };
            let hi = format!("{}#~", p.rank());
            if lo > hi {
                return None;
            }
            e.key.push_str(" AND list_sk BETWEEN :lo AND :hi");
            e.value(":lo", s(lo));
            e.value(":hi", s(hi));
        }
        (true, None, Some(a)) => {
            e.key.push_str(" AND list_sk > :after");
            e.value(":after", s(a));
        }
        (false, _, Some(a)) => {
            e.key.push_str(" AND list_sk < :before");
            e.value(":before", s(a));
        }
        (_, _, None) => {}
    }
    e.filters(&q.filter, q.open);
    e.filter_of = q.filter.clone();
    Some(e)
}

/// The index a deployment made before the `inbox` index still has (projection `ALL`, same keys):
/// read while `inbox` does not exist yet or is still being built (docs/dynamodb.md, upgrading).
pub(crate) const LEGACY_INDEX: &str = "list";

/// At most this many index entries are read for one page: past it the page ends early (shorter
/// than asked) with `next` at the last entry read, so a selective filter over a flooded account
/// never turns one request into a read of the whole partition.
pub(crate) const MAX_SCANNED_PER_PAGE: i32 = 2_000;

/// A Query refused because the index is absent or not yet active (an upgrade in progress).
pub(crate) fn index_unavailable<E: ProvideErrorMetadata>(e: &SdkError<E>) -> bool {
    e.as_service_error().is_some_and(|s| {
        // DynamoDB: ValidationException ("does not have the specified index", "backfilling global
        // secondary index"); moto: ResourceNotFoundException ("Invalid index").
        matches!(s.code(), Some("ValidationException" | "ResourceNotFoundException"))
            && s.message().is_some_and(|m| m.to_ascii_lowercase().contains("index"))
    })
}

/// Listing shards read at once.
const READ_CONCURRENCY: usize = 32;

impl DynamoStore {
    /// Read summaries in index order until `want` pass, the range ends, or `budget` entries were
    /// read: one lane of the merge (`merge.rs`).
    async fn read_range(&self, e: &Expr, forward: bool, want: usize, budget: i32) -> Result<(Lane, i32), StoreError> {
        match self.read_index(e, forward, want, budget, false).await {
            Err(err) if index_unavailable(&err) => {
                tracing::warn!("the `inbox` index is not available yet: listing from the legacy `list` index");
                self.read_index(e, forward, want, budget, true).await.map_err(|e| unavailable("Query", e))?
            }
            other => other.map_err(|e| unavailable("Query", e))?,
        }
    }

    /// `legacy`: read `list` (whole items, possibly without the summary attributes) and apply the
    /// filter here instead of in a `FilterExpression`. Returns the lane and the entries read.
    async fn read_index(
        &self,
        e: &Expr,
        forward: bool,
        want: usize,
        budget: i32,
        legacy: bool,
    ) -> Result<Result<(Lane, i32), StoreError>, SdkError<QueryError>> {
        let mut out = Vec::new();
        let (mut start, mut scanned) = (None, 0);
        let filter = (!e.filter.is_empty() && !legacy).then(|| e.filter.join(" AND "));
        let names = (!e.names.is_empty() && !legacy).then(|| e.names.clone());
        let values: HashMap<_, _> = match legacy {
            // only the key condition's values: unused values are refused
            true => e
                .values
                .iter()
                .filter(|(k, _)| e.key.contains(k.as_str()))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect(),
            false => e.values.clone(),
        };
        // Paged by hand, not with the SDK paginator: each request's size follows what the page
        // still needs and what is left of the scan budget.
        loop {
            // Without a filter every entry read is kept: read no more than the page needs.
            let need = i32::try_from(want - out.len()).unwrap_or(i32::MAX);
            let page_limit =
                if e.filter.is_empty() { need.min(1000) } else { need.clamp(200, 1000) }.min((budget - scanned).max(1));
            let page = self
                .client
                .query()
                .table_name(&self.table)
                .index_name(if legacy { LEGACY_INDEX } else { INDEX })
                .key_condition_expression(&e.key)
                .set_filter_expression(filter.clone())
                .set_expression_attribute_names(names.clone())
                .set_expression_attribute_values(Some(values.clone()))
                .scan_index_forward(forward)
                .limit(page_limit)
                .set_exclusive_start_key(start)
                .send()
                .await?;
            scanned += page.scanned_count();
            for item in page.items() {
                let summary = match legacy {
                    false => summary_from(item),
                    true => message_from(item).map(|m| MessageSummary::from(&m)),
                };
                let (summary, sk) = match (summary, get_s(item, "list_sk")) {
                    (Ok(s), Ok(sk)) => (s, sk.to_owned()),
                    (Err(err), _) | (_, Err(err)) => return Ok(Err(err)),
                };
                if legacy && !e.filter_of.matches(&summary) {
                    continue;
                }
                out.push((sk, summary));
                if out.len() >= want {
                    return Ok(Ok((Lane { items: out, end: End::More }, scanned)));
                }
            }
            let Some(last) = page.last_evaluated_key else {
                return Ok(Ok((Lane { items: out, end: End::Ended }, scanned)));
            };
            if scanned >= budget {
                let end = match last.get("list_sk").and_then(|v| v.as_s().ok()) {
                    Some(sk) => End::Cut(sk.clone()),
                    None => End::Ended,
                };
                return Ok(Ok((Lane { items: out, end }, scanned)));
            }
            start = Some(last);
        }
    }

    /// A page of the account's listing: every shard read a little at once, then further where
    /// the merge needs it (`merge::settle`). The scan budget ([`MAX_SCANNED_PER_PAGE`]) is shared
    /// out over the shards.
    pub(crate) async fn list_page(&self, account: &AccountId, q: &ListQuery) -> Result<ListPage, StoreError> {
        let partitions = self.shards.list_all(&list_pk(account, q.open));
        let want = q.limit.saturating_add(1);
        let after = q.after.as_ref().map(list_sk);
        let budget = (self.max_scanned / i32::try_from(partitions.len()).unwrap_or(i32::MAX)).max(2);
        let mut lanes: Vec<Lane> = vec![Lane { items: Vec::new(), end: End::More }; partitions.len()];
        let mut spent = vec![0i32; partitions.len()];
        let mut reading: Vec<usize> = (0..partitions.len()).collect();
        let mut ask = merge::first_read(want, partitions.len());
        let (items, cut_at) = loop {
            let jobs: Vec<(usize, Option<String>, String, i32)> = reading
                .iter()
                .map(|&i| {
                    let from = lanes[i].items.last().map(|(sk, _)| sk.clone()).or_else(|| after.clone());
                    (i, from, partitions[i].clone(), budget - spent[i])
                })
                .collect();
            let reads = jobs.into_iter().map(|(i, from, partition, left)| {
                async move {
                    if left <= 0 {
                        // This shard's share of the budget is spent: it ends the page here.
                        return Ok((i, Lane { items: Vec::new(), end: End::Cut(from.unwrap_or_default()) }, 0));
                    }
                    match page_expr(&partition, q, from.as_deref()) {
                        None => Ok((i, Lane { items: Vec::new(), end: End::Ended }, 0)),
                        Some(e) => self.read_range(&e, q.open, ask, left).await.map(|(lane, n)| (i, lane, n)),
                    }
                }
            });
            let read: Vec<(usize, Lane, i32)> =
                futures_util::stream::iter(reads).buffer_unordered(READ_CONCURRENCY).try_collect().await?;
            for (i, lane, n) in read {
                lanes[i].items.extend(lane.items);
                lanes[i].end = lane.end;
                spent[i] += n;
            }
            match merge::settle(&lanes, q.open, want) {
                Step::Page { items, cut_at } => break (items, cut_at),
                Step::Read { lanes: next, missing } => {
                    ask = missing.max(2).min(want);
                    reading = next;
                }
            }
        };
        let (mut items, cut_at) = (items, cut_at.and_then(|sk| cursor_from_sk(q.open, &sk)));
        let more = items.len() > q.limit;
        items.truncate(q.limit);
        if !q.open {
            self.with_push_tracks(account, &mut items).await?;
        }
        let next = if more { items.last().map(ListCursor::of) } else { cut_at };
        Ok(ListPage { items, next })
    }

    /// The push track of each terminal ask/task on a page, read from the items (it is not in the
    /// index, so that recording a delivery writes one item: `codec::push_from`). One eventually
    /// consistent `BatchGetItem` per page, like the index itself.
    async fn with_push_tracks(&self, account: &AccountId, items: &mut [MessageSummary]) -> Result<(), StoreError> {
        let wanted: Vec<usize> =
            (0..items.len()).filter(|&i| items[i].kind != ma2h_protocol::envelope::MessageType::Notify).collect();
        let keys = wanted.iter().map(|&i| key(msg_pk(account, &items[i].id), MSG_SK)).collect();
        let mut tracks: HashMap<String, Option<ma2h_core::messages::records::PushTrack>> = HashMap::new();
        for item in self.batch_get(keys, false, Some(PUSH_READ)).await? {
            tracks.insert(get_s(&item, "pk")?.to_owned(), push_from(&item)?);
        }
        for i in wanted {
            if let Some(track) = tracks.remove(&msg_pk(account, &items[i].id)) {
                items[i].push = track;
            }
        }
        Ok(())
    }

    /// Give message items written before the `inbox` index existed the listing's summary
    /// attributes (project, tags, actor, comment), so the index's filters see them: a scan of the
    /// table, one conditional update per item that lacks one. Idempotent; returns how many items
    /// it updated. (`ma2h-admin-aws backfill-listing`.)
    pub async fn backfill_listing(&self) -> Result<usize, StoreError> {
        let mut updated = 0;
        let mut items = self
            .client
            .scan()
            .table_name(&self.table)
            .filter_expression("sk = :msg")
            .expression_attribute_values(":msg", s(MSG_SK))
            .into_paginator()
            .items()
            .send();
        while let Some(item) = items.next().await {
            let item = item.map_err(|e| unavailable("Scan", e))?;
            let m = message_from(&item)?;
            let fresh = message_item(&m, self.shards);
            let missing: Vec<(&str, &AttributeValue)> = ["project", "tags", "actor", "comment"]
                .into_iter()
                .filter_map(|k| fresh.get(k).filter(|v| item.get(k) != Some(*v)).map(|v| (k, v)))
                .collect();
            if missing.is_empty() {
                continue;
            }
            let set: Vec<String> = (0..missing.len()).map(|i| format!("#a{i} = :v{i}")).collect();
            let mut update = self
                .client
                .update_item()
                .table_name(&self.table)
                .set_key(Some(key(msg_pk(&m.account, &m.id), MSG_SK)))
                .update_expression(format!("SET {}", set.join(", ")))
                .condition_expression("attribute_exists(pk)");
            for (i, (k, v)) in missing.iter().enumerate() {
                update = update
                    .expression_attribute_names(format!("#a{i}"), *k)
                    .expression_attribute_values(format!(":v{i}"), (*v).clone());
            }
            match update.send().await {
                Ok(_) => updated += 1,
                // purged meanwhile
                Err(e) if e.as_service_error().is_some_and(|s| s.is_conditional_check_failed_exception()) => {}
                Err(e) => return Err(unavailable("UpdateItem", e)),
            }
        }
        Ok(updated)
    }
}

#[cfg(test)]
mod tests {
    use ma2h_core::messages::records::{MessageRecord, PushTrack};
    use ma2h_protocol::lifecycle::Status;
    use ma2h_store_contract::fixtures::{account, agent, ask, at, terminal};
    use serde_json::Value;

    use super::*;
    use crate::codec::message_item;
    use crate::provision::TABLE_DEFINITION;

    /// What the `inbox` index holds of an item: its keys, the table's keys and the projected
    /// attributes, as `infra/dynamodb-table.json` declares them.
    fn projected(item: &crate::codec::Item) -> crate::codec::Item {
        let def: Value = serde_json::from_str(TABLE_DEFINITION).unwrap();
        let index = def["GlobalSecondaryIndexes"].as_array().unwrap().iter().find(|g| g["IndexName"] == INDEX).unwrap();
        let keep: Vec<&str> = ["pk", "sk", "list_pk", "list_sk"]
            .into_iter()
            .chain(index["Projection"]["NonKeyAttributes"].as_array().unwrap().iter().map(|a| a.as_str().unwrap()))
            .collect();
        item.iter().filter(|(k, _)| keep.contains(&k.as_str())).map(|(k, v)| (k.clone(), v.clone())).collect()
    }

    #[test]
    fn a_sort_key_reads_back_as_the_position_it_encodes() {
        let id = ma2h_store_contract::fixtures::message_id();
        for c in [
            ListCursor::Open { rank: 3, created_at: at(7), id: id.clone() },
            ListCursor::Done { updated_at: at(9), id: id.clone() },
        ] {
            assert_eq!(crate::codec::cursor_from_sk(c.is_open(), &list_sk(&c)), Some(c));
        }
        assert_eq!(crate::codec::cursor_from_sk(true, "x#1#msg_1"), None);
    }

    #[test]
    fn the_index_projects_every_attribute_a_summary_reads_and_no_envelope() {
        let mut m = ask(&account("acme"), &agent("bot"), at(1));
        m.expires_at = Some(at(60));
        let w = terminal(Status::Answered, at(5));
        m = MessageRecord {
            status: w.status,
            response: Some(w.response.clone()),
            resolution_id: Some(w.resolution_id.clone()),
            updated_at: w.resolved_at,
            push: Some(PushTrack { last_error: Some("502".into()), ..PushTrack::pending(at(5)) }),
            ..m
        };
        let item = projected(&message_item(&m, crate::Shards::default()));
        assert!(
            !item.contains_key("z")
                && !item.contains_key("envelope")
                && !item.contains_key("state_text")
                && !item.contains_key("response")
        );
        // The push track is not in the index (a delivery writes no index entry): the listing
        // reads it from the item (`with_push_tracks`).
        assert!(!item.keys().any(|k| k.starts_with("track_") || k.starts_with("push_")), "{item:?}");
        assert_eq!(summary_from(&item).unwrap(), MessageSummary { push: None, ..MessageSummary::from(&m) });
        assert_eq!(crate::codec::push_from(&message_item(&m, crate::Shards::default())).unwrap(), m.push);
    }
}

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

use aws_sdk_dynamodb::types::{AttributeValue, Select};
use ma2h_core::listing::{ListCursor, ListFilter, ListPage, ListQuery, MessageSummary, OpenCounts};
use ma2h_core::ports::StoreError;
use ma2h_protocol::ids::AccountId;

use crate::codec::{list_pk, list_sk, s, summary_from};
use crate::{DynamoStore, unavailable};

/// The index the listing reads.
pub(crate) const INDEX: &str = "inbox";

/// One Query's key condition, filter and their names/values.
#[derive(Default)]
struct Expr {
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

/// The key condition and filter for a page of `q`; `None` when the page is empty by construction
/// (a cursor already past the filtered priority).
fn page_expr(account: &AccountId, q: &ListQuery) -> Option<Expr> {
    let mut e = Expr { key: "list_pk = :p".into(), ..Expr::default() };
    e.value(":p", s(list_pk(account, q.open)));
    let after = q.after.as_ref().map(list_sk);
    match (q.open, q.filter.priority, after) {
        (true, Some(p), after) => {
            // Every id character sorts above a space, so `sk + " "` is the least key after `sk`.
            let floor = format!("{}#", p.rank());
            let lo = match after {
                Some(a) if a >= floor => format!("{a} "),
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
    Some(e)
}

impl DynamoStore {
    /// Read summaries in index order until `want` pass, or the range ends.
    async fn read_range(&self, e: Expr, forward: bool, want: usize) -> Result<Vec<MessageSummary>, StoreError> {
        let mut out = Vec::new();
        let mut start = None;
        let filter = (!e.filter.is_empty()).then(|| e.filter.join(" AND "));
        loop {
            // Without a filter every entry read is kept: read no more than the page needs.
            let need = i32::try_from(want - out.len()).unwrap_or(i32::MAX);
            let page_limit = if filter.is_some() { need.clamp(200, 1000) } else { need.min(1000) };
            let page = self
                .client
                .query()
                .table_name(&self.table)
                .index_name(INDEX)
                .key_condition_expression(&e.key)
                .set_filter_expression(filter.clone())
                .set_expression_attribute_names((!e.names.is_empty()).then(|| e.names.clone()))
                .set_expression_attribute_values(Some(e.values.clone()))
                .scan_index_forward(forward)
                .limit(page_limit)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(|e| unavailable("Query", e))?;
            for item in page.items() {
                out.push(summary_from(item)?);
                if out.len() >= want {
                    return Ok(out);
                }
            }
            match page.last_evaluated_key {
                Some(k) => start = Some(k),
                None => return Ok(out),
            }
        }
    }

    pub(crate) async fn list_page(&self, account: &AccountId, q: &ListQuery) -> Result<ListPage, StoreError> {
        let Some(expr) = page_expr(account, q) else { return Ok(ListPage::default()) };
        let mut items = self.read_range(expr, q.open, q.limit.saturating_add(1)).await?;
        let more = items.len() > q.limit;
        items.truncate(q.limit);
        let next = if more { items.last().map(ListCursor::of) } else { None };
        Ok(ListPage { items, next })
    }

    pub(crate) async fn count_open_listing(
        &self,
        account: &AccountId,
        f: &ListFilter,
    ) -> Result<OpenCounts, StoreError> {
        let mut counts = OpenCounts::default();
        let mut start = None;
        loop {
            let page = self
                .client
                .query()
                .table_name(&self.table)
                .index_name(INDEX)
                .key_condition_expression("list_pk = :p")
                .expression_attribute_values(":p", s(list_pk(account, true)))
                .select(Select::AllProjectedAttributes)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(|e| unavailable("Query", e))?;
            for item in page.items() {
                let m = summary_from(item)?;
                counts.add(m.priority, m.kind, f.matches(&m), 1);
            }
            match page.last_evaluated_key {
                Some(k) => start = Some(k),
                None => return Ok(counts),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use ma2h_core::records::{MessageRecord, PushTrack};
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
        let item = projected(&message_item(&m));
        assert!(!item.contains_key("envelope") && !item.contains_key("state_text") && !item.contains_key("response"));
        assert_eq!(summary_from(&item).unwrap(), MessageSummary::from(&m));
    }
}

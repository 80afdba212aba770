//! §8.6 on DynamoDB: one write per submit for both limits.
//!
//! Each agent has one counter item (`OPEN#{account}#{agent}`) holding its request window (`rw`:
//! the minute, `rc`: requests in it) and `open_count`. A submit's `admit` is one `UpdateItem`
//! that adds the request to the window (starting a new window when the minute changed) and, for
//! an ask or task, one to `open_count`.
//!
//! Terminals never decrement `open_count` (that was one more write per ask): it is an **upper
//! bound** of the agent's open asks/tasks — every open one was counted before it was inserted,
//! and nothing is subtracted for it until a recount has seen it closed. Only a bound at the
//! depth limit matters, and then `recount_open` counts exactly and re-bases the bound on the
//! exact count — conditionally on the bound being unchanged, so two recounts never subtract
//! twice. The exact count reads the agent's own `@open` partition of the `mailbox` index (each
//! open ask/task item carries `mbx_pk = {account}#{agent}#@open` until its terminal write drops
//! it; issue 38): a read of about the depth limit's entries, never the account's open set. What
//! the cap can miss: submits in flight at the same moment (the index is read eventually
//! consistently), so the limit is soft by at most the agent's concurrency; and open asks written
//! before issue 38, which lack the key until `ma2h-admin-aws backfill-counts` adds it.

use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue, Select};
use ma2h_core::ports::{Admission, StoreError};
use ma2h_protocol::ids::{AccountId, AgentId};

use crate::codec::*;
use crate::{DynamoStore, unavailable};

type R<T> = Result<T, StoreError>;

impl DynamoStore {
    /// `UpdateItem` on the agent's counter item: `Ok(None)` when `condition` failed.
    async fn update_counter(
        &self,
        k: &Item,
        update: &str,
        condition: &str,
        values: &[(&str, AttributeValue)],
    ) -> R<Option<Item>> {
        let mut req = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(k.clone()))
            .update_expression(update)
            .condition_expression(condition)
            .return_values(ReturnValue::AllNew);
        for (name, v) in values {
            req = req.expression_attribute_values(*name, v.clone());
        }
        match req.send().await {
            Ok(out) => Ok(Some(out.attributes.unwrap_or_default())),
            Err(e) if e.as_service_error().is_some_and(|s| s.is_conditional_check_failed_exception()) => Ok(None),
            Err(e) => Err(unavailable("UpdateItem", e)),
        }
    }

    pub(crate) async fn admit_submit(
        &self,
        account: &AccountId,
        agent: &AgentId,
        window: i64,
        opens: bool,
    ) -> R<Admission> {
        let k = key(open_pk(account, agent), "OPEN");
        let values = [(":w", n(window)), (":one", n(1)), (":d", n(i64::from(opens)))];
        for _ in 0..4 {
            // Within the window: count. Otherwise (first request of a minute, billed as one more
            // write): start it at 1. A clock behind another container's restarts it too.
            let item = match self.update_counter(&k, "ADD rc :one, open_count :d", "rw = :w", &values).await? {
                Some(item) => item,
                None => match self
                    .update_counter(
                        &k,
                        "SET rw = :w, rc = :one ADD open_count :d",
                        "attribute_not_exists(rw) OR rw <> :w",
                        &values,
                    )
                    .await?
                {
                    Some(item) => item,
                    None => continue, // another request started the window first
                },
            };
            let count = |a: &str| opt_n(&item, a).map(|v| u64::try_from(v.unwrap_or(0).max(0)).unwrap_or(0));
            return Ok(Admission {
                requests: count("rc")?,
                open_before: count("open_count")?.saturating_sub(u64::from(opens)),
            });
        }
        Err(StoreError::Unavailable(format!("counter of {agent}: too much contention")))
    }

    /// The agent's open asks/tasks: its `@open` partition of the `mailbox` index (keys only,
    /// `codec::open_pk_of`), counted — a read bounded by the agent's own open set (about the
    /// depth limit), whatever the account holds.
    pub(crate) async fn count_open_exact(&self, account: &AccountId, agent: &AgentId) -> R<u64> {
        let mut total = 0u64;
        let mut start = None;
        loop {
            let out = self
                .client
                .query()
                .table_name(&self.table)
                .index_name("mailbox")
                .key_condition_expression("mbx_pk = :p")
                .expression_attribute_values(":p", s(open_pk_of(account, agent)))
                .select(Select::Count)
                .set_exclusive_start_key(start)
                .send()
                .await
                .map_err(|e| unavailable("Query", e))?;
            total += u64::try_from(out.count).unwrap_or(0);
            match out.last_evaluated_key {
                Some(k) if !k.is_empty() => start = Some(k),
                _ => return Ok(total),
            }
        }
    }

    /// See the module docs: count exactly and re-base the bound; `admitted` includes the submit
    /// asking, which is not inserted yet.
    pub(crate) async fn recount(&self, account: &AccountId, agent: &AgentId, admitted: u64) -> R<u64> {
        let k = key(open_pk(account, agent), "OPEN");
        let exact = self.count_open_exact(account, agent).await?;
        let rebase = [
            (":seen", n(i64::try_from(admitted).unwrap_or(i64::MAX))),
            (":exact", n(i64::try_from(exact + 1).unwrap_or(i64::MAX))),
        ];
        // Unchanged since this submit counted itself: nothing else is in flight that the bound
        // knows of. Changed: keep the (higher) bound; a later recount re-bases it.
        self.update_counter(&k, "SET open_count = :exact", "open_count = :seen", &rebase).await?;
        Ok(exact)
    }
}

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
//! depth limit matters, and then `recount_open` counts exactly (a `Query` of the account's open
//! `inbox` partition for this agent) and re-bases the bound on the exact count — conditionally on
//! the bound being unchanged, so two recounts never subtract twice. What the cap can miss is what
//! the old one could too (docs/dynamodb.md): submits in flight at the same moment (the index is
//! read eventually consistently), so the limit is soft by at most the agent's concurrency. Every
//! submit refused at the limit recounts (its reads grow with the account's open asks; the
//! request-rate limit bounds how often an agent can make it happen).

use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue, Select};
use futures_util::{StreamExt as _, TryStreamExt as _};
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

    /// The agent's open asks/tasks, counted in the `inbox` index (every listing shard at once).
    pub(crate) async fn count_open_exact(&self, account: &AccountId, agent: &AgentId) -> R<u64> {
        let reads = self.shards.list_all(&list_pk(account, true)).into_iter().map(|p| self.count_agent_in(p, agent));
        let parts: Vec<u64> = futures_util::stream::iter(reads).buffer_unordered(32).try_collect().await?;
        Ok(parts.into_iter().sum())
    }

    async fn count_agent_in(&self, partition: String, agent: &AgentId) -> R<u64> {
        let mut total = 0u64;
        let mut start = None;
        loop {
            let out = self
                .client
                .query()
                .table_name(&self.table)
                .index_name(crate::listing::INDEX)
                .key_condition_expression("list_pk = :p")
                .filter_expression("agent_id = :a")
                .expression_attribute_values(":p", s(&partition))
                .expression_attribute_values(":a", s(agent.as_str()))
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

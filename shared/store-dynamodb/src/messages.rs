//! [`MessageStore`] on DynamoDB.

use std::collections::HashMap;

use async_trait::async_trait;
use aws_sdk_dynamodb::operation::transact_write_items::TransactWriteItemsError;
use aws_sdk_dynamodb::types::{AttributeValue, CancellationReason, Put, ReturnValue, TransactWriteItem};
use ma2h_core::messages::listing::{ListFilter, ListPage, ListQuery, OpenCounts};
use ma2h_core::messages::records::{
    Completion, IdempotencyRecord, Inserted, Lookup, MessageRecord, PushStatus, PushTrack, TerminalWrite,
};
use ma2h_core::ports::{MessageStore, StoreError};
use ma2h_protocol::ids::{AccountId, AgentId, MessageId};
use ma2h_protocol::lifecycle::Status;
use ma2h_protocol::time::Timestamp;

use crate::shards::Due;

use crate::codec::*;
use crate::{DynamoStore, unavailable};

type R<T> = Result<T, StoreError>;

/// Was a cancelled transaction cancelled because one of its conditions failed? (No reasons at
/// all is read as a failed condition: nothing says it was anything else.)
fn condition_failed(reasons: &[CancellationReason]) -> bool {
    reasons.is_empty() || reasons.iter().any(|r| r.code() == Some("ConditionalCheckFailed"))
}

/// Retries of a transaction cancelled by a conflict, not by a failed condition (10–80 ms apart).
const CONFLICT_RETRIES: u32 = 4;

impl DynamoStore {
    pub(crate) fn put(
        &self,
        item: Item,
        condition: Option<&str>,
        values: HashMap<String, AttributeValue>,
    ) -> R<TransactWriteItem> {
        let mut b = Put::builder().table_name(&self.table).set_item(Some(item));
        if let Some(c) = condition {
            b = b.condition_expression(c);
        }
        if !values.is_empty() {
            b = b.set_expression_attribute_values(Some(values));
        }
        Ok(TransactWriteItem::builder().put(b.build().map_err(|e| unavailable("put", e))?).build())
    }

    /// `Ok(false)` when a condition failed (the compare-and-set or the idempotency claim was
    /// lost). A cancellation for any other reason — most often `TransactionConflict` with a
    /// concurrent transaction on a shared item such as the agent's open counter — wrote nothing
    /// and decided nothing, so it is retried, and reported `Unavailable` (503) if it persists.
    pub(crate) async fn transact(&self, items: Vec<TransactWriteItem>) -> Result<bool, StoreError> {
        let mut attempt = 0u32;
        loop {
            let e = match self.client.transact_write_items().set_transact_items(Some(items.clone())).send().await {
                Ok(_) => return Ok(true),
                Err(e) => e,
            };
            let Some(TransactWriteItemsError::TransactionCanceledException(cancelled)) = e.as_service_error() else {
                return Err(unavailable("TransactWriteItems", e));
            };
            if condition_failed(cancelled.cancellation_reasons()) {
                return Ok(false);
            }
            if attempt >= CONFLICT_RETRIES {
                return Err(unavailable("TransactWriteItems", e));
            }
            attempt += 1;
            tokio::time::sleep(std::time::Duration::from_millis(5 << attempt)).await;
        }
    }

    async fn message(&self, account: &AccountId, id: &MessageId) -> R<Option<MessageRecord>> {
        self.get(key(msg_pk(account, id), MSG_SK)).await?.map(|i| message_from(&i)).transpose()
    }

    /// `incr_counter` with audit records pending (a logout): the increment — or a new window —
    /// in a transaction with them; the value read back after (a transaction returns none).
    async fn incr_audited(&self, counter: &str, k: Item, expires_at: Timestamp, now: Timestamp) -> R<u64> {
        let names = HashMap::from([("#v".to_owned(), "value".to_owned()), ("#ttl".to_owned(), "ttl".to_owned())]);
        for _ in 0..5 {
            let values = HashMap::from([
                (":zero".to_owned(), n(0)),
                (":one".to_owned(), n(1)),
                (":exp".to_owned(), n(ms(expires_at))),
                (":ttl".to_owned(), ttl_secs(expires_at + chrono::Duration::minutes(5))),
                (":now".to_owned(), n(ms(now))),
            ]);
            let add = self.update_tx(
                k.clone(),
                "SET #v = if_not_exists(#v, :zero) + :one, expires_at = if_not_exists(expires_at, :exp), \
                 #ttl = if_not_exists(#ttl, :ttl)",
                Some("attribute_not_exists(pk) OR expires_at > :now"),
                names.clone(),
                values,
            )?;
            if self.transact_audited(vec![add]).await? {
                let item = self.get(k.clone()).await?.unwrap_or_default();
                return Ok(u64::try_from(get_n(&item, "value").unwrap_or(1)).unwrap_or(1));
            }
            // an expired window: start a new one at 1
            let mut item = k.clone();
            item.insert("value".into(), n(1));
            item.insert("expires_at".into(), n(ms(expires_at)));
            item.insert("ttl".into(), ttl_secs(expires_at + chrono::Duration::minutes(5)));
            let fresh = self.put(item, Some("expires_at <= :now"), HashMap::from([(":now".to_owned(), n(ms(now)))]))?;
            if self.transact_audited(vec![fresh]).await? {
                return Ok(1);
            }
        }
        Err(StoreError::Unavailable(format!("counter {counter}: too much contention")))
    }

    /// Keys from a sparse time index, due at `now`, oldest first.
    /// Due message keys of one partition family, oldest first, across its shards.
    async fn due(
        &self,
        index: &str,
        attrs: (&str, &str),
        base: &str,
        at: Timestamp,
        limit: usize,
    ) -> R<Vec<(AccountId, MessageId)>> {
        let rows = self.due_rows(index, attrs, base, Due::AtOrBefore(ms(at)), limit).await?;
        Ok(rows.iter().filter_map(|i| get_s(i, "pk").ok().and_then(parse_msg_pk)).collect())
    }
}

#[async_trait]
impl MessageStore for DynamoStore {
    async fn insert_message(
        &self,
        m: &MessageRecord,
        claim: Option<&IdempotencyRecord>,
        entry: Option<(&ma2h_core::mailbox::model::MailboxEntry, u32)>,
        now: Timestamp,
    ) -> R<Inserted> {
        match entry {
            Some((e, cap)) => self.insert_addressed(m, claim, e, cap, now).await,
            None => self.insert_plain(m, claim, now).await,
        }
    }

    async fn get_claim(
        &self,
        account: &AccountId,
        agent: &AgentId,
        key_: &str,
        now: Timestamp,
    ) -> R<Option<IdempotencyRecord>> {
        let Some(item) = self.get(key(claim_pk(account, agent, key_), "IDEM")).await? else { return Ok(None) };
        let c = claim_from(&item)?;
        // TTL deletes late: the read-time filter decides liveness.
        Ok((now < c.expires_at).then_some(c))
    }

    async fn get_message(&self, account: &AccountId, id: &MessageId) -> R<Lookup> {
        let out = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("pk = :pk")
            .expression_attribute_values(":pk", s(msg_pk(account, id)))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| unavailable("Query", e))?;
        let mut tomb = None;
        for item in out.items() {
            match get_s(item, "sk")? {
                MSG_SK => return Ok(Lookup::Found(message_from(item)?)),
                TOMB_SK => tomb = Some(get_s(item, "agent_id")?.to_owned()),
                _ => {}
            }
        }
        Ok(match tomb.and_then(|a| AgentId::parse(&a)) {
            // A tombstone without its message: purged after retention (§8.2 410).
            Some(agent_id) => Lookup::Gone { agent_id },
            None => Lookup::Missing,
        })
    }

    async fn complete(&self, account: &AccountId, id: &MessageId, w: &TerminalWrite) -> R<Completion> {
        // The caller's read of the message saves a GetItem per terminal (docs/COST.md); it is
        // trusted only under the CAS, which also requires the stored `updated_at` to match.
        let seen = w.seen.as_deref().filter(|m| m.account == *account && m.id == *id);
        let mut current = match seen {
            Some(m) => m.clone(),
            None => match self.message(account, id).await? {
                Some(m) => m,
                None => return Ok(Completion::Missing),
            },
        };
        let mut retried = seen.is_none();
        loop {
            if current.status == Status::Open
                && let Some(next) = self.try_terminal(&current, w).await?
            {
                return Ok(Completion::Applied(next));
            }
            let Some(now) = self.message(account, id).await? else { return Ok(Completion::Missing) };
            // Refused with a stale copy (changed since the caller read it, still open): once more
            // from the store's record. Otherwise it is terminal, or overdue (§7) — the caller's to judge.
            if retried || now.status != Status::Open || now.updated_at == current.updated_at {
                return Ok(Completion::AlreadyTerminal(now));
            }
            (current, retried) = (now, true);
        }
    }

    async fn due_expiries(&self, now: Timestamp, limit: usize) -> R<Vec<(AccountId, MessageId)>> {
        self.due("due", ("due_pk", "due_sk"), DUE, now, limit).await
    }

    /// Messages past retention are DynamoDB's TTL's to delete (free; `codec::message_item`), and
    /// the Hub reads them as gone meanwhile; expired claims and counters are filtered at read time
    /// and removed by the TTL too. Nothing to do here (issue 38: no `retain` index, no paid
    /// deletes).
    async fn purge(&self, _now: Timestamp, _limit: usize) -> R<usize> {
        Ok(0)
    }

    fn native_ttl(&self) -> bool {
        true
    }

    async fn list_messages(&self, account: &AccountId, q: &ListQuery) -> R<ListPage> {
        self.list_page(account, q).await
    }

    async fn open_counts(&self, account: &AccountId, filter: &ListFilter) -> R<OpenCounts> {
        self.open_counts_maintained(account, filter).await
    }

    async fn search_messages(
        &self,
        account: &AccountId,
        q: &ma2h_core::messages::listing::SearchQuery,
    ) -> R<ma2h_core::messages::listing::SearchHits> {
        self.search_titles(account, q).await
    }

    async fn claim_due_pushes(
        &self,
        now: Timestamp,
        lease_until: Timestamp,
        limit: usize,
    ) -> R<Vec<(AccountId, MessageId)>> {
        let mut claimed = Vec::new();
        for (account, id) in self.due("push", ("push_pk", "push_sk"), PUSH, now, limit).await? {
            // Claim = move the due time to the lease end, only if nobody else did first.
            let res = self
                .client
                .update_item()
                .table_name(&self.table)
                .set_key(Some(key(msg_pk(&account, &id), MSG_SK)))
                // (the second branch: a track written before 2026-12-04, see `codec::push_from`)
                .update_expression("SET track_next_at = :lease, push_next_at = :lease, push_sk = :lease")
                .condition_expression(
                    "(track_status = :pending AND track_next_at <= :now) \
                     OR (attribute_not_exists(track_status) AND push_status = :pending AND push_next_at <= :now)",
                )
                .expression_attribute_values(":lease", n(ms(lease_until)))
                .expression_attribute_values(":pending", s(PushStatus::Pending.as_str()))
                .expression_attribute_values(":now", n(ms(now)))
                .send()
                .await;
            match res {
                Ok(_) => claimed.push((account, id)),
                Err(e) if e.as_service_error().is_some_and(|s| s.is_conditional_check_failed_exception()) => {}
                Err(e) => return Err(unavailable("UpdateItem", e)),
            }
        }
        Ok(claimed)
    }

    async fn record_push(&self, account: &AccountId, id: &MessageId, track: &PushTrack) -> R<()> {
        let attrs = push_attrs(track, &msg_pk(account, id), self.shards);
        let mut set: Vec<String> = Vec::new();
        let mut values = HashMap::new();
        for (i, (k, v)) in attrs.iter().enumerate() {
            set.push(format!("{k} = :v{i}"));
            values.insert(format!(":v{i}"), v.clone());
        }
        let present: Vec<&str> = attrs.iter().map(|(k, _)| k.as_str()).collect();
        let remove: Vec<&str> = push_removable().into_iter().filter(|k| !present.contains(k)).collect();
        let mut expr = format!("SET {}", set.join(", "));
        if !remove.is_empty() {
            expr.push_str(&format!(" REMOVE {}", remove.join(", ")));
        }
        if ma2h_core::audit::scope::current().is_some() {
            // issue 42: a final outcome's record commits with it
            let update = self.update_tx(
                key(msg_pk(account, id), MSG_SK),
                &expr,
                Some("attribute_exists(pk)"),
                HashMap::new(),
                values,
            )?;
            if !self.transact_audited(vec![update]).await? {
                return Err(StoreError::Unavailable(format!("message {id} is gone")));
            }
            return Ok(());
        }
        self.client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key(msg_pk(account, id), MSG_SK)))
            .update_expression(expr)
            .condition_expression("attribute_exists(pk)")
            .set_expression_attribute_values(Some(values))
            .send()
            .await
            .map_err(|e| unavailable("UpdateItem", e))?;
        Ok(())
    }

    async fn mark_delivered(&self, account: &AccountId, id: &MessageId, at: Timestamp) -> R<Option<Timestamp>> {
        let res = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key(msg_pk(account, id), MSG_SK)))
            .update_expression("SET delivered_at = :at")
            .condition_expression(
                "attribute_exists(pk) AND #status <> :open AND #kind <> :notify AND attribute_not_exists(delivered_at)",
            )
            .expression_attribute_names("#status", "status")
            .expression_attribute_names("#kind", "kind")
            .expression_attribute_values(":at", n(ms(at)))
            .expression_attribute_values(":open", s(Status::Open.as_str()))
            .expression_attribute_values(":notify", s("notify"))
            .send()
            .await;
        match res {
            Ok(_) => Ok(Some(at)),
            // Already stamped (or not stampable): report what is stored.
            Err(e) if e.as_service_error().is_some_and(|s| s.is_conditional_check_failed_exception()) => {
                let item = self.get(key(msg_pk(account, id), MSG_SK)).await?;
                Ok(item
                    .map(|i| message_from(&i))
                    .transpose()?
                    .filter(|m| !m.status.is_open())
                    .and_then(|m| m.delivered_at))
            }
            Err(e) => Err(unavailable("UpdateItem", e)),
        }
    }

    async fn ack_response(
        &self,
        account: &AccountId,
        id: &MessageId,
        ack: &ma2h_core::mailbox::model::AckRecord,
    ) -> R<Option<ma2h_core::mailbox::model::AckRecord>> {
        let mut update = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key(msg_pk(account, id), MSG_SK)))
            .condition_expression(
                "attribute_exists(pk) AND #status <> :open AND #kind <> :notify AND attribute_not_exists(ack_at) \
                 AND (attribute_exists(delivered_at) OR track_status = :delivered OR push_status = :delivered)",
            )
            .expression_attribute_names("#status", "status")
            .expression_attribute_names("#kind", "kind")
            .expression_attribute_values(":by", s(ack.by.clone()))
            .expression_attribute_values(":at", n(ms(ack.acked_at)))
            .expression_attribute_values(":open", s(Status::Open.as_str()))
            .expression_attribute_values(":notify", s("notify"))
            .expression_attribute_values(":delivered", s(PushStatus::Delivered.as_str()));
        update = match &ack.note {
            Some(note) => update
                .update_expression("SET ack_by = :by, ack_at = :at, ack_note = :note")
                .expression_attribute_values(":note", s(note.clone())),
            None => update.update_expression("SET ack_by = :by, ack_at = :at"),
        };
        match update.send().await {
            Ok(_) => Ok(Some(ack.clone())),
            Err(e) if e.as_service_error().is_some_and(|s| s.is_conditional_check_failed_exception()) => {
                let item = self.get(key(msg_pk(account, id), MSG_SK)).await?;
                Ok(item.map(|i| message_from(&i)).transpose()?.and_then(|m| m.ack))
            }
            Err(e) => Err(unavailable("UpdateItem", e)),
        }
    }

    async fn count_open(&self, account: &AccountId, agent: &AgentId) -> R<u64> {
        self.count_open_exact(account, agent).await
    }

    async fn admit(
        &self,
        account: &AccountId,
        agent: &AgentId,
        window: i64,
        _window_end: Timestamp,
        opens: bool,
        _now: Timestamp,
    ) -> R<ma2h_core::ports::Admission> {
        self.admit_submit(account, agent, window, opens).await
    }

    async fn recount_open(&self, account: &AccountId, agent: &AgentId, admitted: u64) -> R<u64> {
        self.recount(account, agent, admitted).await
    }

    async fn incr_counter(&self, counter: &str, expires_at: Timestamp, now: Timestamp) -> R<u64> {
        let k = key(format!("CNT#{counter}"), "CNT");
        if ma2h_core::audit::scope::current().is_some() {
            return self.incr_audited(counter, k, expires_at, now).await;
        }
        for _ in 0..5 {
            // Within a live window: atomic ADD.
            let res = self
                .client
                .update_item()
                .table_name(&self.table)
                .set_key(Some(k.clone()))
                .update_expression("ADD #v :one")
                .condition_expression("expires_at > :now")
                .expression_attribute_names("#v", "value")
                .expression_attribute_values(":one", n(1))
                .expression_attribute_values(":now", n(ms(now)))
                .return_values(ReturnValue::UpdatedNew)
                .send()
                .await;
            match res {
                Ok(out) => {
                    let v = out.attributes.as_ref().map(|a| get_n(a, "value")).transpose()?.unwrap_or(1);
                    return Ok(u64::try_from(v).unwrap_or(0));
                }
                Err(e) if e.as_service_error().is_some_and(|s| s.is_conditional_check_failed_exception()) => {}
                Err(e) => return Err(unavailable("UpdateItem", e)),
            }
            // Missing or expired: start a new window at 1, unless another writer just did.
            let mut item = k.clone();
            item.insert("value".into(), n(1));
            item.insert("expires_at".into(), n(ms(expires_at)));
            item.insert("ttl".into(), ttl_secs(expires_at + chrono::Duration::minutes(5)));
            let res = self
                .client
                .put_item()
                .table_name(&self.table)
                .set_item(Some(item))
                .condition_expression("attribute_not_exists(pk) OR expires_at <= :now")
                .expression_attribute_values(":now", n(ms(now)))
                .send()
                .await;
            match res {
                Ok(_) => return Ok(1),
                Err(e) if e.as_service_error().is_some_and(|s| s.is_conditional_check_failed_exception()) => {}
                Err(e) => return Err(unavailable("PutItem", e)),
            }
        }
        Err(StoreError::Unavailable(format!("counter {counter}: too much contention")))
    }

    async fn read_counter(&self, counter: &str, now: Timestamp) -> R<u64> {
        let Some(item) = self.get(key(format!("CNT#{counter}"), "CNT")).await? else { return Ok(0) };
        // the TTL deletes late: an expired window reads as absent, as in `incr_counter`
        if get_n(&item, "expires_at")? <= ms(now) {
            return Ok(0);
        }
        Ok(u64::try_from(get_n(&item, "value")?).unwrap_or(0))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reasons(codes: &[&str]) -> Vec<CancellationReason> {
        codes.iter().map(|c| CancellationReason::builder().code(*c).build()).collect()
    }

    #[test]
    fn a_failed_condition_is_a_lost_compare_and_set() {
        assert!(condition_failed(&reasons(&["None", "ConditionalCheckFailed", "None"])));
        assert!(condition_failed(&[]));
    }

    #[test]
    fn a_conflict_with_another_transaction_is_not_a_lost_compare_and_set() {
        // e.g. two submits of one agent racing on its open counter: neither decided anything.
        assert!(!condition_failed(&reasons(&["None", "TransactionConflict", "None"])));
        assert!(!condition_failed(&reasons(&["ThrottlingError"])));
    }
}

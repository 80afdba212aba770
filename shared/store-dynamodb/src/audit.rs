//! [`AuditStore`] on DynamoDB (issue 42, docs/design/audit.md): entries in one partition per
//! (account, shard), `AUD#{account}#{shard}` / `{at ms}#{id}`, so an account's ledger spreads
//! over `ma2h_core::audit::SHARDS` partitions; checkpoints in `AUDCP#{account}` / `{seq, 20
//! digits}`, put only if absent (two sweepers never fork the chain); the accounts with a ledger
//! in `AUDACCOUNTS` / `{account}`, written once per account per process.

use async_trait::async_trait;
use std::collections::HashMap;

use aws_sdk_dynamodb::types::{AttributeValue, Delete, TransactWriteItem, Update};
use ma2h_core::audit::store::{AuditRecord, AuditStore, StoredCheckpoint};
use ma2h_core::ports::StoreError;
use ma2h_protocol::ids::{AccountId, key_part};
use ma2h_protocol::time::Timestamp;

use crate::codec::*;
use crate::{DynamoStore, unavailable};

type R<T> = Result<T, StoreError>;

const ROSTER: &str = "AUDACCOUNTS";

fn entry_pk(account: &AccountId, shard: u16) -> String {
    format!("AUD#{}#{shard}", key_part(account.as_str()))
}

fn checkpoint_pk(account: &AccountId) -> String {
    format!("AUDCP#{}", key_part(account.as_str()))
}

fn json<T: serde::Serialize>(v: &T) -> R<AttributeValue> {
    serde_json::to_string(v).map(s).map_err(|e| StoreError::Corrupt(e.to_string()))
}

fn data<T: serde::de::DeserializeOwned>(item: &Item, what: &str) -> R<T> {
    serde_json::from_str(get_s(item, "data")?).map_err(|_| corrupt(what))
}

impl DynamoStore {
    async fn query_items(&self, q: aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder) -> R<Vec<Item>> {
        let out = q.send().await.map_err(|e| unavailable("Query", e))?;
        Ok(out.items.unwrap_or_default())
    }

    /// List `account` in the roster the sealer walks (once per account per process).
    async fn list_audit_account(&self, account: &AccountId) -> R<()> {
        if self.audit_listed.lock().unwrap_or_else(std::sync::PoisonError::into_inner).contains(account.as_str()) {
            return Ok(());
        }
        let mut item = key(ROSTER.into(), account.as_str());
        item.insert("account".into(), s(account.as_str()));
        self.put_if(item, None, HashMap::new()).await?;
        self.audit_listed.lock().unwrap_or_else(std::sync::PoisonError::into_inner).insert(account.to_string());
        Ok(())
    }
}

/// A checkpoint's item.
fn checkpoint_item(account: &AccountId, cp: &StoredCheckpoint) -> R<Item> {
    let mut item = key(checkpoint_pk(account), &format!("{:020}", cp.seq()));
    item.insert("at".into(), n(ms(cp.at)));
    item.insert("data".into(), json(cp)?);
    Ok(item)
}

/// An entry's item.
fn entry_item(r: &AuditRecord) -> R<Item> {
    let mut item = key(entry_pk(&r.account, r.shard), &r.sort_key());
    item.insert("at".into(), n(ms(r.at)));
    item.insert("data".into(), json(r)?);
    Ok(item)
}

/// Issue 42: how an event's audit records join the write that commits it
/// (`ma2h_core::audit::scope`). A method whose commit is one conditional write sends it alone
/// when nothing is pending, and as a `TransactWriteItems` with the entries when something is.
impl DynamoStore {
    /// `transact`, with the pending audit records (if any) as further items of the same
    /// transaction; they count as written once it commits.
    pub(crate) async fn transact_audited(&self, mut items: Vec<TransactWriteItem>) -> R<bool> {
        let Some(pending) = ma2h_core::audit::scope::current() else { return self.transact(items).await };
        let records = pending.records();
        for r in &records {
            self.list_audit_account(&r.account).await?;
            // unconditional: a transaction retried after a cancellation wrote nothing before
            items.push(self.put(entry_item(r)?, None, HashMap::new())?);
        }
        let committed = self.transact(items).await?;
        if committed {
            pending.written();
        }
        Ok(committed)
    }

    /// `put_if`, or — with records pending — the same put in a transaction with them.
    pub(crate) async fn put_if_audited(
        &self,
        item: Item,
        condition: Option<&str>,
        values: HashMap<String, AttributeValue>,
    ) -> R<bool> {
        if ma2h_core::audit::scope::current().is_none() {
            return self.put_if(item, condition, values).await;
        }
        self.transact_audited(vec![self.put(item, condition, values)?]).await
    }

    /// `delete_key` (whether the item existed), or — with records pending — a delete on the
    /// condition that it exists, in a transaction with them.
    pub(crate) async fn delete_key_audited(&self, pk: String, sk: &str) -> R<bool> {
        if ma2h_core::audit::scope::current().is_none() {
            return self.delete_key(pk, sk).await;
        }
        let delete = Delete::builder()
            .table_name(&self.table)
            .set_key(Some(key(pk, sk)))
            .condition_expression("attribute_exists(pk)")
            .build()
            .map_err(|e| unavailable("delete", e))?;
        self.transact_audited(vec![TransactWriteItem::builder().delete(delete).build()]).await
    }

    /// An `UpdateItem` as a transaction item (for a write that joins `transact_audited`).
    pub(crate) fn update_tx(
        &self,
        key_item: Item,
        expression: &str,
        condition: Option<&str>,
        names: HashMap<String, String>,
        values: HashMap<String, AttributeValue>,
    ) -> R<TransactWriteItem> {
        let mut b = Update::builder()
            .table_name(&self.table)
            .set_key(Some(key_item))
            .update_expression(expression)
            .set_condition_expression(condition.map(str::to_owned));
        if !names.is_empty() {
            b = b.set_expression_attribute_names(Some(names));
        }
        if !values.is_empty() {
            b = b.set_expression_attribute_values(Some(values));
        }
        Ok(TransactWriteItem::builder().update(b.build().map_err(|e| unavailable("update", e))?).build())
    }
}

#[async_trait]
impl AuditStore for DynamoStore {
    async fn append_audit(&self, records: &[AuditRecord]) -> R<()> {
        for r in records {
            self.list_audit_account(&r.account).await?;
            let item = entry_item(r)?;
            // never overwritten; the same record again (a retried append) is a no-op
            self.put_if(item, Some("attribute_not_exists(pk)"), HashMap::new()).await?;
        }
        Ok(())
    }

    async fn audit_entries(
        &self,
        account: &AccountId,
        shard: u16,
        after: Option<&str>,
        until: Timestamp,
        limit: usize,
    ) -> R<Vec<AuditRecord>> {
        // sort keys start with the time: bounded above by the first key past `until`
        let upper = format!("{:013}$", ms(until).max(0));
        // (a key attribute may not be empty: "0" sorts before every key, which starts with digits)
        let lower = after.map_or_else(|| "0".to_owned(), str::to_owned);
        let mut out = Vec::new();
        let mut start: Option<Item> = None;
        while out.len() < limit {
            let q = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("pk = :pk AND sk BETWEEN :lo AND :hi")
                .expression_attribute_values(":pk", s(entry_pk(account, shard)))
                .expression_attribute_values(":lo", s(lower.clone()))
                .expression_attribute_values(":hi", s(upper.clone()))
                .consistent_read(true)
                .limit(i32::try_from(limit - out.len()).unwrap_or(i32::MAX).saturating_add(1))
                .set_exclusive_start_key(start.take());
            let page = q.send().await.map_err(|e| unavailable("Query", e))?;
            for item in page.items.unwrap_or_default() {
                if get_s(&item, "sk")? == lower {
                    continue; // BETWEEN is inclusive; `after` is not
                }
                if out.len() < limit {
                    out.push(data(&item, "audit entry")?);
                }
            }
            match page.last_evaluated_key {
                Some(k) if out.len() < limit => start = Some(k),
                _ => break,
            }
        }
        Ok(out)
    }

    async fn last_audit_checkpoint(&self, account: &AccountId) -> R<Option<StoredCheckpoint>> {
        let q = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("pk = :pk")
            .expression_attribute_values(":pk", s(checkpoint_pk(account)))
            .scan_index_forward(false)
            .limit(1)
            .consistent_read(true);
        self.query_items(q).await?.first().map(|i| data(i, "audit checkpoint")).transpose()
    }

    async fn audit_checkpoints(&self, account: &AccountId, from_seq: u64, limit: usize) -> R<Vec<StoredCheckpoint>> {
        let q = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("pk = :pk AND sk >= :from")
            .expression_attribute_values(":pk", s(checkpoint_pk(account)))
            .expression_attribute_values(":from", s(format!("{from_seq:020}")))
            .limit(i32::try_from(limit).unwrap_or(i32::MAX))
            .consistent_read(true);
        self.query_items(q).await?.iter().map(|i| data(i, "audit checkpoint")).collect()
    }

    async fn put_audit_checkpoint(&self, account: &AccountId, cp: &StoredCheckpoint) -> R<bool> {
        // one checkpoint per seq: two sealers never fork the chain
        self.put_if(checkpoint_item(account, cp)?, Some("attribute_not_exists(pk)"), HashMap::new()).await
    }

    async fn audit_accounts(&self) -> R<Vec<AccountId>> {
        let q = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("pk = :pk")
            .expression_attribute_values(":pk", s(ROSTER))
            .consistent_read(true);
        let mut out = Vec::new();
        let mut items = q.into_paginator().items().send();
        while let Some(item) = items.next().await {
            let item = item.map_err(|e| unavailable("Query", e))?;
            if let Some(a) = opt_s(&item, "account").and_then(|a| AccountId::parse(&a)) {
                out.push(a);
            }
        }
        Ok(out)
    }

    async fn prune_audit(&self, account: &AccountId, keep: &StoredCheckpoint, limit: usize) -> R<usize> {
        // the anchor first: an export from the beginning is valid at every step of the pruning
        let anchored = StoredCheckpoint { anchor: true, ..keep.clone() };
        self.put_if(checkpoint_item(account, &anchored)?, None, HashMap::new()).await?;
        let older = self
            .client
            .query()
            .table_name(&self.table)
            .key_condition_expression("pk = :pk AND sk < :keep")
            .expression_attribute_values(":pk", s(checkpoint_pk(account)))
            .expression_attribute_values(":keep", s(format!("{:020}", keep.seq())))
            .projection_expression("pk, sk");
        let mut doomed: Vec<Item> = self.query_items(older).await?;
        let mut deleted = 0;
        for (shard, cursor) in &keep.cursors {
            if deleted >= limit {
                break;
            }
            let q = self
                .client
                .query()
                .table_name(&self.table)
                .key_condition_expression("pk = :pk AND sk <= :cursor")
                .expression_attribute_values(":pk", s(entry_pk(account, *shard)))
                .expression_attribute_values(":cursor", s(cursor.clone()))
                .projection_expression("pk, sk")
                .limit(i32::try_from(limit - deleted).unwrap_or(i32::MAX));
            let keys = self.query_items(q).await?;
            deleted += keys.len();
            doomed.extend(keys);
        }
        self.delete_items(doomed).await?;
        Ok(deleted)
    }
}

impl DynamoStore {
    /// Delete items by key, 25 to a `BatchWriteItem`, retrying what comes back unprocessed.
    async fn delete_items(&self, keys: Vec<Item>) -> R<()> {
        use aws_sdk_dynamodb::types::{DeleteRequest, WriteRequest};
        for chunk in keys.chunks(25) {
            let mut requests = chunk
                .iter()
                .map(|k| {
                    let delete = DeleteRequest::builder()
                        .set_key(Some(k.clone()))
                        .build()
                        .map_err(|e| unavailable("delete", e))?;
                    Ok(WriteRequest::builder().delete_request(delete).build())
                })
                .collect::<R<Vec<_>>>()?;
            for attempt in 0..8u32 {
                if requests.is_empty() {
                    break;
                }
                if attempt > 0 {
                    tokio::time::sleep(std::time::Duration::from_millis(10 << attempt.min(6))).await;
                }
                let out = self
                    .client
                    .batch_write_item()
                    .request_items(self.table.clone(), requests)
                    .send()
                    .await
                    .map_err(|e| unavailable("BatchWriteItem", e))?;
                requests = out.unprocessed_items.and_then(|mut u| u.remove(&self.table)).unwrap_or_default();
            }
            if !requests.is_empty() {
                return Err(StoreError::Unavailable("audit pruning: deletes left unprocessed".into()));
            }
        }
        Ok(())
    }
}

//! [`NotificationStore`] on DynamoDB (design: `docs/dynamodb.md`, "Notification outbox").
//!
//! One item per announced message, `NOTE#{account}#{id}` / `NOTE`, its steps as JSON text. While
//! something is due it carries the `due` index keys `due_pk = NOTEDUE`, `due_sk = next_due`
//! (sparse: a finished item leaves the index, so the due read is O(due)); a finished item keeps
//! only its `ttl`, and DynamoDB's TTL deletes it. Every write is one conditional write: the
//! create on `attribute_not_exists`, the claim on `next_due <= :now` with no running
//! `lease_until`, the save on `version` (a whole-item put: it ends the lease). A wake-up moves
//! `next_due`, never the lease.

use std::collections::HashMap;

use async_trait::async_trait;
use aws_sdk_dynamodb::types::{AttributeValue, ReturnValue};
use ma2h_core::channels::outbox::{Notification, NotificationStore};
use ma2h_core::ports::StoreError;
use ma2h_protocol::ids::{AccountId, MessageId, key_part};
use ma2h_protocol::time::{self, Timestamp};

use crate::codec::*;
use crate::mailbox::is_condition_failure;
use crate::shards::{Due, Shards};
use crate::{DynamoStore, unavailable};

type R<T> = Result<T, StoreError>;

const SK: &str = "NOTE";
const DUE: &str = "NOTEDUE";

fn note_pk(account: &AccountId, id: &MessageId) -> String {
    format!("NOTE#{}#{}", key_part(account.as_str()), id)
}

fn values(pairs: Vec<(&str, AttributeValue)>) -> HashMap<String, AttributeValue> {
    pairs.into_iter().map(|(k, v)| (k.to_owned(), v)).collect()
}

fn item_of(x: &Notification, shards: Shards) -> Item {
    let pk = note_pk(&x.account, &x.message_id);
    let mut item = key(pk.clone(), SK);
    item.insert("account".into(), s(x.account.as_str()));
    item.insert("id".into(), s(x.message_id.as_str()));
    item.insert("version".into(), n(i64::try_from(x.version).unwrap_or(i64::MAX)));
    item.insert("created_at".into(), n(ms(x.created_at)));
    item.insert("route".into(), s(x.route.clone()));
    item.insert("steps".into(), s(x.steps_json()));
    if let Some(due) = x.next_due {
        item.insert("next_due".into(), n(ms(due)));
        item.insert("due_pk".into(), s(shards.key(DUE, &pk)));
        item.insert("due_sk".into(), n(ms(due)));
    }
    if let Some(r) = x.retain_until {
        item.insert("retain_until".into(), n(ms(r)));
        item.insert("ttl".into(), ttl_secs(r));
    }
    item
}

fn from_item(item: &Item) -> R<Notification> {
    let corrupt = |what: &str| StoreError::Corrupt(format!("dynamodb notification item: {what}"));
    Ok(Notification {
        account: AccountId::parse(get_s(item, "account")?).ok_or_else(|| corrupt("account"))?,
        message_id: MessageId::parse(get_s(item, "id")?).ok_or_else(|| corrupt("id"))?,
        version: u64::try_from(get_n(item, "version")?).unwrap_or(0),
        created_at: time::from_millis(get_n(item, "created_at")?),
        next_due: opt_n(item, "next_due")?.map(time::from_millis),
        retain_until: opt_n(item, "retain_until")?.map(time::from_millis),
        route: get_s(item, "route")?.to_owned(),
        steps: Notification::parse_steps(get_s(item, "steps")?)?,
    })
}

#[async_trait]
impl NotificationStore for DynamoStore {
    async fn create_notification(&self, item: &Notification) -> R<bool> {
        self.put_if(item_of(item, self.shards), Some("attribute_not_exists(pk)"), HashMap::new()).await
    }

    async fn get_notification(&self, account: &AccountId, id: &MessageId) -> R<Option<Notification>> {
        self.get(key(note_pk(account, id), SK)).await?.as_ref().map(from_item).transpose()
    }

    async fn due_notifications(&self, now: Timestamp, limit: usize) -> R<Vec<(AccountId, MessageId)>> {
        let rows = self.due_rows("due", ("due_pk", "due_sk"), DUE, Due::AtOrBefore(ms(now)), limit).await?;
        let mut due = Vec::new();
        for row in rows {
            // `NOTE#{account}#{id}`: the account part is escaped, the id never contains `#`.
            let pk = get_s(&row, "pk")?;
            let parsed = pk.strip_prefix("NOTE#").and_then(|rest| rest.rsplit_once('#')).and_then(|(a, i)| {
                Some((AccountId::parse(&ma2h_protocol::ids::key_part_decode(a)?)?, MessageId::parse(i)?))
            });
            match parsed {
                Some(k) => due.push(k),
                None => return Err(StoreError::Corrupt(format!("notification key {pk}"))),
            }
        }
        Ok(due)
    }

    async fn claim_notification(
        &self,
        account: &AccountId,
        id: &MessageId,
        now: Timestamp,
        lease_until: Timestamp,
    ) -> R<Option<Notification>> {
        let res = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key(note_pk(account, id), SK)))
            .update_expression("SET next_due = :lease, lease_until = :lease, due_pk = :p, due_sk = :lease ADD version :one")
            .condition_expression(
                "attribute_exists(pk) AND next_due <= :now AND (attribute_not_exists(lease_until) OR lease_until <= :now)",
            )
            .set_expression_attribute_values(Some(values(vec![
                (":lease", n(ms(lease_until))),
                (":p", s(self.shards.key(DUE, &note_pk(account, id)))),
                (":one", n(1)),
                (":now", n(ms(now))),
            ])))
            .return_values(ReturnValue::AllNew)
            .send()
            .await;
        match res {
            Ok(out) => out.attributes.as_ref().map(from_item).transpose(),
            Err(e) if is_condition_failure(&e) => Ok(None),
            Err(e) => Err(unavailable("UpdateItem", e)),
        }
    }

    async fn save_notification(&self, item: &Notification, expected: u64) -> R<bool> {
        let expected = n(i64::try_from(expected).unwrap_or(i64::MAX));
        self.put_if(item_of(item, self.shards), Some("version = :v"), values(vec![(":v", expected)])).await
    }

    async fn wake_notification(&self, account: &AccountId, id: &MessageId, at: Timestamp) -> R<()> {
        let res = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key(note_pk(account, id), SK)))
            .update_expression(
                "SET next_due = :at, due_pk = :p, due_sk = :at ADD version :one REMOVE retain_until, #ttl",
            )
            .condition_expression("attribute_exists(pk)")
            .expression_attribute_names("#ttl", "ttl")
            .set_expression_attribute_values(Some(values(vec![
                (":at", n(ms(at))),
                (":p", s(self.shards.key(DUE, &note_pk(account, id)))),
                (":one", n(1)),
            ])))
            .send()
            .await;
        match res {
            Ok(_) => Ok(()),
            Err(e) if is_condition_failure(&e) => Ok(()),
            Err(e) => Err(unavailable("UpdateItem", e)),
        }
    }

    async fn purge_notifications(&self, _now: Timestamp, _limit: usize) -> R<usize> {
        // Finished items carry `ttl` (their `retain_until`): DynamoDB's TTL deletes them.
        Ok(0)
    }
}

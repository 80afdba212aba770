//! [`TriageStore`] on DynamoDB (issue 39): one item per triaged message, in the message's
//! notification partition (`NOTE#{account}#{id}` / `TRIAGE`: no new key family, never in an
//! index), its claim, snoozes and events as JSON text. A put is one conditional `PutItem` on the
//! version (`attribute_not_exists` for the first); the list reads one `BatchGetItem` per page;
//! DynamoDB's TTL (`ttl` = `retain_until`) removes old records, so there is nothing to purge.

use std::collections::HashMap;

use async_trait::async_trait;
use ma2h_core::messages::triage::{TriageData, TriageRecord, TriageStore};
use ma2h_core::ports::StoreError;
use ma2h_protocol::ids::{AccountId, MessageId, key_part};
use ma2h_protocol::time::{self, Timestamp};

use crate::DynamoStore;
use crate::codec::*;

const SK: &str = "TRIAGE";

fn pk(account: &AccountId, id: &MessageId) -> String {
    format!("NOTE#{}#{}", key_part(account.as_str()), id)
}

fn item_of(r: &TriageRecord) -> Result<Item, StoreError> {
    let mut item = key(pk(&r.account, &r.message_id), SK);
    item.insert("id".into(), s(r.message_id.as_str()));
    item.insert("version".into(), n(i64::try_from(r.version).unwrap_or(i64::MAX)));
    item.insert("data".into(), s(serde_json::to_string(&r.data).map_err(|e| StoreError::Corrupt(e.to_string()))?));
    item.insert("retain_until".into(), n(ms(r.retain_until)));
    item.insert("ttl".into(), ttl_secs(r.retain_until));
    Ok(item)
}

fn from_item(account: &AccountId, item: &Item) -> Result<TriageRecord, StoreError> {
    let id = MessageId::parse(get_s(item, "id")?).ok_or_else(|| corrupt("triage id"))?;
    Ok(TriageRecord {
        account: account.clone(),
        message_id: id,
        version: u64::try_from(get_n(item, "version")?).unwrap_or(0),
        data: serde_json::from_str::<TriageData>(get_s(item, "data")?).map_err(|_| corrupt("triage data"))?,
        retain_until: time::from_millis(get_n(item, "retain_until")?),
    })
}

#[async_trait]
impl TriageStore for DynamoStore {
    async fn get_triage(
        &self,
        account: &AccountId,
        ids: &[MessageId],
    ) -> Result<Vec<Option<TriageRecord>>, StoreError> {
        let keys = ids.iter().map(|id| key(pk(account, id), SK)).collect();
        let mut found: HashMap<String, TriageRecord> = HashMap::new();
        for item in self.batch_get(keys, true, None).await? {
            let r = from_item(account, &item)?;
            found.insert(r.message_id.to_string(), r);
        }
        Ok(ids.iter().map(|id| found.remove(id.as_str())).collect())
    }

    async fn put_triage(&self, record: &TriageRecord, expected: Option<u64>) -> Result<bool, StoreError> {
        let item = item_of(record)?;
        match expected {
            None => self.put_if_audited(item, Some("attribute_not_exists(pk)"), HashMap::new()).await,
            Some(v) => {
                let values = HashMap::from([(":v".to_owned(), n(i64::try_from(v).unwrap_or(i64::MAX)))]);
                self.put_if_audited(item, Some("version = :v"), values).await
            }
        }
    }

    async fn purge_triage(&self, _now: Timestamp, _limit: usize) -> Result<usize, StoreError> {
        Ok(0) // the TTL's
    }
}

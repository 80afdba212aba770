//! [`GrantStore`] on DynamoDB (issue 40): one item per grant in its agent's grant partition,
//! `GRANT#{account}#{agent}` / `{key}#{id}` — so the submit-time lookup of a keyed ask is one
//! `Query` on its agent's partition (`begins_with` the key), and no account-wide partition takes
//! every keyed ask. The grant is JSON text; uses and the revocation are separate attributes
//! changed by `UpdateItem` (a use never rewrites a revocation; a revocation is conditional on
//! none yet). Listing walks the account's agent roster (one `Query` per agent). DynamoDB's TTL
//! removes a grant 30 days after it was revoked or expired.

use std::collections::HashMap;

use async_trait::async_trait;
use aws_sdk_dynamodb::types::AttributeValue;
use ma2h_core::decisions::grant_store::{Grant, GrantStore, KEEP};
use ma2h_core::ports::{CredentialStore, StoreError};
use ma2h_protocol::ids::{AccountId, AgentId, key_part};
use ma2h_protocol::time::{self, Timestamp};

use crate::codec::*;
use crate::mailbox::is_condition_failure;
use crate::{DynamoStore, unavailable};

type R<T> = Result<T, StoreError>;

fn pk(account: &AccountId, agent: &AgentId) -> String {
    format!("GRANT#{}#{}", key_part(account.as_str()), key_part(agent.as_str()))
}

/// The sort-key prefix of one key's grants (the key escaped: `#` never ends it early).
fn key_prefix(key: &str) -> String {
    format!("{}#", key_part(key))
}

fn item_of(g: &Grant) -> R<Item> {
    let mut item = key(pk(&g.account, &g.agent), &format!("{}{}", key_prefix(&g.key), g.id));
    item.insert("id".into(), s(g.id.clone()));
    item.insert("created_at".into(), n(ms(g.created_at)));
    item.insert("data".into(), s(serde_json::to_string(g).map_err(|e| StoreError::Corrupt(e.to_string()))?));
    item.insert("uses".into(), n(i64::try_from(g.uses).unwrap_or(i64::MAX)));
    if let Some(r) = g.retain_until() {
        item.insert("ttl".into(), ttl_secs(r));
    }
    Ok(item)
}

fn from_item(item: &Item) -> R<Grant> {
    let mut g: Grant = serde_json::from_str(get_s(item, "data")?).map_err(|_| corrupt("grant data"))?;
    g.uses = u64::try_from(opt_n(item, "uses")?.unwrap_or(0)).unwrap_or(0);
    g.last_used_at = opt_n(item, "last_used_at")?.map(time::from_millis);
    g.revoked_at = opt_n(item, "revoked_at")?.map(time::from_millis);
    g.revoked_by = item.get("revoked_by").and_then(|v| v.as_s().ok()).cloned();
    Ok(g)
}

impl DynamoStore {
    async fn grant_items(&self, pk: String, prefix: Option<String>) -> R<Vec<Item>> {
        let mut q =
            self.client.query().table_name(&self.table).expression_attribute_values(":pk", s(pk)).consistent_read(true);
        q = match prefix {
            Some(p) => {
                q.key_condition_expression("pk = :pk AND begins_with(sk, :p)").expression_attribute_values(":p", s(p))
            }
            None => q.key_condition_expression("pk = :pk"),
        };
        let mut out = Vec::new();
        let mut items = q.into_paginator().items().send();
        while let Some(item) = items.next().await {
            out.push(item.map_err(|e| unavailable("Query", e))?);
        }
        Ok(out)
    }

    fn grant_key(g: &Grant) -> Item {
        key(pk(&g.account, &g.agent), &format!("{}{}", key_prefix(&g.key), g.id))
    }
}

#[async_trait]
impl GrantStore for DynamoStore {
    async fn put_grant(&self, grant: &Grant) -> R<()> {
        self.put_if_audited(item_of(grant)?, None, HashMap::new()).await.map(|_| ())
    }

    async fn grants_for(&self, account: &AccountId, agent: &AgentId, key: &str) -> R<Vec<Grant>> {
        self.grant_items(pk(account, agent), Some(key_prefix(key))).await?.iter().map(from_item).collect()
    }

    async fn list_grants(&self, account: &AccountId, limit: usize) -> R<Vec<Grant>> {
        let mut all = Vec::new();
        for agent in self.list_agents(account).await? {
            for item in self.grant_items(pk(account, &agent), None).await? {
                all.push(from_item(&item)?);
            }
        }
        all.sort_by(|a, b| b.created_at.cmp(&a.created_at).then_with(|| b.id.cmp(&a.id)));
        all.truncate(limit);
        Ok(all)
    }

    async fn get_grant(&self, account: &AccountId, id: &str) -> R<Option<Grant>> {
        for agent in self.list_agents(account).await? {
            for item in self.grant_items(pk(account, &agent), None).await? {
                if get_s(&item, "id")? == id {
                    return from_item(&item).map(Some);
                }
            }
        }
        Ok(None)
    }

    async fn record_grant_use(&self, grant: &Grant, at: Timestamp) -> R<()> {
        let res = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(Self::grant_key(grant)))
            .update_expression("SET last_used_at = :at ADD uses :one")
            .condition_expression("attribute_exists(pk)")
            .set_expression_attribute_values(Some(HashMap::from([
                (":at".to_owned(), n(ms(at))),
                (":one".to_owned(), n(1)),
            ])))
            .send()
            .await;
        match res {
            Ok(_) => Ok(()),
            Err(e) if is_condition_failure(&e) => Ok(()), // purged meanwhile: nothing to count
            Err(e) => Err(unavailable("UpdateItem", e)),
        }
    }

    async fn revoke_grant(&self, grant: &Grant, at: Timestamp, by: &str) -> R<bool> {
        let expression = "SET revoked_at = :at, revoked_by = :by, #ttl = :ttl";
        let condition = "attribute_exists(pk) AND attribute_not_exists(revoked_at)";
        let names = HashMap::from([("#ttl".to_owned(), "ttl".to_owned())]);
        let values = HashMap::from([
            (":at".to_owned(), n(ms(at))),
            (":by".to_owned(), AttributeValue::S(by.to_owned())),
            (":ttl".to_owned(), ttl_secs(at + KEEP)),
        ]);
        if ma2h_core::audit::scope::current().is_some() {
            let update = self.update_tx(Self::grant_key(grant), expression, Some(condition), names, values)?;
            return self.transact_audited(vec![update]).await;
        }
        let res = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(Self::grant_key(grant)))
            .update_expression(expression)
            .condition_expression(condition)
            .set_expression_attribute_names(Some(names))
            .set_expression_attribute_values(Some(values))
            .send()
            .await;
        match res {
            Ok(_) => Ok(true),
            Err(e) if is_condition_failure(&e) => Ok(false),
            Err(e) => Err(unavailable("UpdateItem", e)),
        }
    }

    async fn purge_grants(&self, _now: Timestamp, _limit: usize) -> R<usize> {
        Ok(0) // the TTL's
    }
}

//! [`CredentialStore`] on DynamoDB: credentials keyed by key hash (the hot lookup), a pointer item
//! by credential id and one under its principal's partition (a Slack press or an email answer
//! checks that one human's credentials, never a scan), and per-agent secrets and bindings under
//! one partition per agent.

use std::collections::HashMap;

use async_trait::async_trait;
use aws_sdk_dynamodb::types::{AttributeValue, Put, TransactWriteItem};
use ma2h_core::channels::devices::Device;
use ma2h_core::inter_agent::policy::AccountPolicy;
use ma2h_core::kernel::credentials::{CredentialRecord, PrincipalId};
use ma2h_core::passkeys::Passkey;
use ma2h_core::ports::{CredentialStore, StoreError};
use ma2h_protocol::ids::{AccountId, AgentId, HumanId, key_part};
use ma2h_protocol::time::Timestamp;

use crate::codec::*;
use crate::{DynamoStore, unavailable};

type R<T> = Result<T, StoreError>;

const POLICY_SK: &str = "POLICY";

/// The account's one policy item (§8.0 `inter_agent`).
fn policy_pk(account: &AccountId) -> String {
    format!("ACCT#{}", ma2h_protocol::ids::key_part(account.as_str()))
}

fn id_pointer(c: &CredentialRecord) -> Item {
    let mut item = key(format!("CRED#{}", c.id), "CRED");
    item.insert("key_hash".into(), s(c.key_hash.clone()));
    item
}

/// The partition of one principal's credentials in an account.
fn principal_pk(account: &AccountId, principal: &PrincipalId) -> String {
    format!("PRIN#{}#{}#{}", key_part(account.as_str()), principal.kind(), key_part(principal.name()))
}

/// A credential's pointer under its principal's partition.
fn principal_pointer(c: &CredentialRecord) -> Item {
    let mut item = key(principal_pk(&c.account, &c.principal), &format!("CRED#{}", c.id));
    item.insert("key_hash".into(), s(c.key_hash.clone()));
    item
}

/// The account's roster entry of an agent credential (`ACCT#{account}` / `AGENT#{agent}`), so the
/// Agents page lists every agent with one Query (issue 39); `None` for an operator's.
fn roster_item(c: &CredentialRecord) -> Option<Item> {
    let PrincipalId::Agent(agent) = &c.principal else { return None };
    let mut item = key(policy_pk(&c.account), &format!("{ROSTER_PREFIX}{}", key_part(agent.as_str())));
    item.insert("agent".into(), s(agent.as_str()));
    Some(item)
}

/// Sort-key prefix of roster entries in the account partition (`$` sorts right after `#`).
const ROSTER_PREFIX: &str = "AGENT#";
/// The partition of one operator's Web Push devices (issue 41): one `Query` lists them.
fn device_pk(account: &AccountId, human: &HumanId) -> String {
    format!("DEV#{}#{}", key_part(account.as_str()), key_part(human.as_str()))
}

/// Sort-key prefix of operator activity in the account partition (issue 40).
const SEEN_PREFIX: &str = "SEEN#";

impl DynamoStore {
    /// Give credentials stored before the per-principal pointers existed their pointer (a scan
    /// of the credentials, one put each; idempotent). `ma2h-admin-aws backfill-credentials`.
    pub async fn backfill_credentials(&self) -> R<usize> {
        let all = self.list_credentials().await?;
        for c in &all {
            self.client
                .put_item()
                .table_name(&self.table)
                .set_item(Some(principal_pointer(c)))
                .send()
                .await
                .map_err(|e| unavailable("PutItem", e))?;
            // issue 39: the account's agent roster (idempotent: the same item each time)
            if let Some(entry) = roster_item(c) {
                self.client
                    .put_item()
                    .table_name(&self.table)
                    .set_item(Some(entry))
                    .send()
                    .await
                    .map_err(|e| unavailable("PutItem", e))?;
            }
        }
        Ok(all.len())
    }

    /// The items of an agent's partition whose sort keys lie in `from..=to` (strongly consistent).
    async fn agent_items(&self, account: &AccountId, agent: &AgentId, from: &str, to: &str) -> R<Vec<Item>> {
        self.partition_items(agent_pk(account, agent), Some((from, to))).await
    }

    /// A partition's items (sort keys in `range`, when given), strongly consistent.
    pub(crate) async fn partition_items(&self, pk: String, range: Option<(&str, &str)>) -> R<Vec<Item>> {
        let mut out = Vec::new();
        let mut query =
            self.client.query().table_name(&self.table).expression_attribute_values(":pk", s(pk)).consistent_read(true);
        query = match range {
            Some((from, to)) => query
                .key_condition_expression("pk = :pk AND sk BETWEEN :from AND :to")
                .expression_attribute_values(":from", s(from))
                .expression_attribute_values(":to", s(to)),
            None => query.key_condition_expression("pk = :pk"),
        };
        let mut items = query.into_paginator().items().send();
        while let Some(item) = items.next().await {
            out.push(item.map_err(|e| unavailable("Query", e))?);
        }
        Ok(out)
    }

    /// Sort keys under an agent's partition with `prefix` (ending in `#`), prefix stripped.
    async fn agent_names(&self, account: &AccountId, agent: &AgentId, prefix: &str) -> R<Vec<String>> {
        // `$` sorts right after `#`: every `{name}#…` key is below `{name}$`
        let upper = format!("{}$", prefix.trim_end_matches('#'));
        let mut names = Vec::new();
        for item in self.agent_items(account, agent, prefix, &upper).await? {
            if let Some(n) = get_s(&item, "sk")?.strip_prefix(prefix) {
                names.push(n.to_owned());
            }
        }
        Ok(names)
    }

    async fn delete_agent_item(&self, account: &AccountId, agent: &AgentId, sk: String) -> R<bool> {
        self.delete_key_audited(agent_pk(account, agent), &sk).await
    }

    /// Delete one item; whether it existed.
    pub(crate) async fn delete_key(&self, pk: String, sk: &str) -> R<bool> {
        let out = self
            .client
            .delete_item()
            .table_name(&self.table)
            .set_key(Some(key(pk, sk)))
            .return_values(aws_sdk_dynamodb::types::ReturnValue::AllOld)
            .send()
            .await
            .map_err(|e| unavailable("DeleteItem", e))?;
        Ok(out.attributes.is_some())
    }

    async fn put_agent_item(
        &self,
        account: &AccountId,
        agent: &AgentId,
        sk: String,
        extra: Option<(&str, AttributeValue)>,
    ) -> R<()> {
        let mut item = key(agent_pk(account, agent), &sk);
        if let Some((k, v)) = extra {
            item.insert(k.to_owned(), v);
        }
        self.put_if_audited(item, None, HashMap::new()).await.map(|_| ())
    }
}

#[async_trait]
impl CredentialStore for DynamoStore {
    async fn put_credential(&self, c: &CredentialRecord) -> R<()> {
        let put = |item: Item| -> R<TransactWriteItem> {
            let p = Put::builder()
                .table_name(&self.table)
                .set_item(Some(item))
                .build()
                .map_err(|e| unavailable("put", e))?;
            Ok(TransactWriteItem::builder().put(p).build())
        };
        let mut items = vec![put(credential_item(c))?, put(id_pointer(c))?, put(principal_pointer(c))?];
        if let Some(entry) = roster_item(c) {
            items.push(put(entry)?);
        }
        // (no conditions: it commits, or fails as unavailable)
        self.transact_audited(items).await?;
        Ok(())
    }

    async fn credential_by_hash(&self, key_hash: &str) -> R<Option<CredentialRecord>> {
        self.get(key(format!("KEY#{key_hash}"), "KEY")).await?.map(|i| credential_from(&i)).transpose()
    }

    async fn credential_by_id(&self, id: &str) -> R<Option<CredentialRecord>> {
        let Some(pointer) = self.get(key(format!("CRED#{id}"), "CRED")).await? else { return Ok(None) };
        self.credential_by_hash(get_s(&pointer, "key_hash")?).await
    }

    /// An admin listing: a Scan filtered to credential items (never on a request path).
    async fn list_credentials(&self) -> R<Vec<CredentialRecord>> {
        let mut out = Vec::new();
        let mut items = self
            .client
            .scan()
            .table_name(&self.table)
            .filter_expression("sk = :k")
            .expression_attribute_values(":k", s("KEY"))
            .consistent_read(true)
            .into_paginator()
            .items()
            .send();
        while let Some(item) = items.next().await {
            out.push(credential_from(&item.map_err(|e| unavailable("Scan", e))?)?);
        }
        out.sort_by_key(|c| c.created_at);
        Ok(out)
    }

    async fn list_agents(&self, account: &AccountId) -> R<Vec<AgentId>> {
        let upper = format!("{}$", ROSTER_PREFIX.trim_end_matches('#'));
        let mut out = Vec::new();
        for item in self.partition_items(policy_pk(account), Some((ROSTER_PREFIX, &upper))).await? {
            out.push(AgentId::parse(get_s(&item, "agent")?).ok_or_else(|| corrupt("roster entry: agent id"))?);
        }
        out.sort();
        Ok(out)
    }

    async fn credentials_of(&self, account: &AccountId, principal: &PrincipalId) -> R<Vec<CredentialRecord>> {
        let mut out = Vec::new();
        for p in self.partition_items(principal_pk(account, principal), None).await? {
            if let Some(c) = self.credential_by_hash(get_s(&p, "key_hash")?).await? {
                out.push(c);
            }
        }
        Ok(out)
    }

    async fn update_credential(&self, c: &CredentialRecord) -> R<()> {
        // Only revocation and expiry change; the item is rewritten whole if it exists.
        self.put_if_audited(credential_item(c), Some("attribute_exists(pk)"), HashMap::new()).await.map(|_| ())
    }

    async fn touch_operator(&self, account: &AccountId, human: &HumanId, at: Timestamp) -> R<()> {
        let res = self
            .client
            .update_item()
            .table_name(&self.table)
            .set_key(Some(key(policy_pk(account), &format!("{SEEN_PREFIX}{}", key_part(human.as_str())))))
            .update_expression("SET last_seen = :t, human = :h")
            .condition_expression("attribute_not_exists(last_seen) OR last_seen < :t")
            .expression_attribute_values(":t", n(ms(at)))
            .expression_attribute_values(":h", s(human.as_str()))
            .send()
            .await;
        match res {
            Ok(_) => Ok(()),
            // A later activity is already recorded: never move backwards.
            Err(e) if e.as_service_error().is_some_and(|s| s.is_conditional_check_failed_exception()) => Ok(()),
            Err(e) => Err(unavailable("UpdateItem", e)),
        }
    }

    async fn operators_seen(&self, account: &AccountId) -> R<Vec<(HumanId, Timestamp)>> {
        let upper = format!("{}$", SEEN_PREFIX.trim_end_matches('#'));
        let mut out = Vec::new();
        for item in self.partition_items(policy_pk(account), Some((SEEN_PREFIX, &upper))).await? {
            let human = HumanId::parse(get_s(&item, "human")?).ok_or_else(|| corrupt("operator activity: human id"))?;
            out.push((human, ma2h_protocol::time::from_millis(get_n(&item, "last_seen")?)));
        }
        out.sort_by(|a, b| a.0.as_str().cmp(b.0.as_str()));
        Ok(out)
    }

    async fn put_device(&self, d: &Device) -> R<()> {
        let mut item = key(device_pk(&d.account, &d.human), &d.id);
        item.insert("label".into(), s(d.label.clone()));
        item.insert("created_at".into(), n(ms(d.created_at)));
        item.insert("push_host".into(), s(d.push_host.clone()));
        item.insert("sealed".into(), s(d.sealed.clone()));
        self.put_if_audited(item, None, HashMap::new()).await.map(|_| ())
    }

    async fn devices_of(&self, account: &AccountId, human: &HumanId) -> R<Vec<Device>> {
        let mut out = Vec::new();
        for item in self.partition_items(device_pk(account, human), None).await? {
            out.push(Device {
                account: account.clone(),
                human: human.clone(),
                id: get_s(&item, "sk")?.to_owned(),
                label: get_s(&item, "label")?.to_owned(),
                created_at: ma2h_protocol::time::from_millis(get_n(&item, "created_at")?),
                push_host: get_s(&item, "push_host")?.to_owned(),
                sealed: get_s(&item, "sealed")?.to_owned(),
            });
        }
        out.sort_by(|a, b| (a.created_at, &a.id).cmp(&(b.created_at, &b.id)));
        Ok(out)
    }

    async fn delete_device(&self, account: &AccountId, human: &HumanId, id: &str) -> R<bool> {
        self.delete_key(device_pk(account, human), id).await
    }

    async fn put_passkey(&self, p: &Passkey, new: bool) -> R<bool> {
        self.put_passkey_items(p, new).await
    }

    async fn passkeys_of(&self, account: &AccountId, human: &HumanId) -> R<Vec<Passkey>> {
        self.passkeys_of_operator(account, human).await
    }

    async fn passkey_by_id(&self, id: &str) -> R<Option<Passkey>> {
        self.passkey_of_id(id).await
    }

    async fn delete_passkey(&self, account: &AccountId, human: &HumanId, id: &str) -> R<bool> {
        self.delete_passkey_items(account, human, id).await
    }

    async fn put_secret(&self, account: &AccountId, agent: &AgentId, name: &str, sealed: &[u8]) -> R<()> {
        let blob = AttributeValue::B(aws_sdk_dynamodb::primitives::Blob::new(sealed.to_vec()));
        self.put_agent_item(account, agent, format!("SECRET#{name}"), Some(("sealed", blob))).await
    }

    async fn get_secret(&self, account: &AccountId, agent: &AgentId, name: &str) -> R<Option<Vec<u8>>> {
        let item = self.get(key(agent_pk(account, agent), &format!("SECRET#{name}"))).await?;
        Ok(item.and_then(|i| i.get("sealed").and_then(|v| v.as_b().ok()).map(|b| b.as_ref().to_vec())))
    }

    async fn list_secrets(&self, account: &AccountId, agent: &AgentId) -> R<Vec<String>> {
        self.agent_names(account, agent, "SECRET#").await
    }

    async fn delete_secret(&self, account: &AccountId, agent: &AgentId, name: &str) -> R<bool> {
        self.delete_agent_item(account, agent, format!("SECRET#{name}")).await
    }

    async fn get_account_policy(&self, account: &AccountId) -> R<Option<AccountPolicy>> {
        let Some(item) = self.get(key(policy_pk(account), POLICY_SK)).await? else { return Ok(None) };
        let mut policy = AccountPolicy::from_json(get_s(&item, "policy")?)
            .ok_or_else(|| StoreError::Corrupt("dynamodb policy item: not a policy".into()))?;
        policy.version = u64::try_from(get_n(&item, "version")?).unwrap_or(0);
        Ok(Some(policy))
    }

    async fn put_account_policy(&self, account: &AccountId, policy: &AccountPolicy) -> R<bool> {
        let mut item = key(policy_pk(account), POLICY_SK);
        item.insert("policy".into(), s(policy.to_json()));
        item.insert("version".into(), n(i64::try_from(policy.version).unwrap_or(i64::MAX)));
        // Compare-and-set on the version: the first write, or exactly the next one.
        let version = i64::try_from(policy.version).unwrap_or(i64::MAX);
        if version <= 1 {
            self.put_if_audited(item, Some("attribute_not_exists(pk)"), HashMap::new()).await
        } else {
            let prev = HashMap::from([(":prev".to_owned(), n(version - 1))]);
            self.put_if_audited(item, Some("version = :prev"), prev).await
        }
    }

    async fn put_binding(&self, account: &AccountId, agent: &AgentId, host: &str) -> R<()> {
        self.put_agent_item(account, agent, format!("BIND#{host}"), None).await
    }

    async fn delete_binding(&self, account: &AccountId, agent: &AgentId, host: &str) -> R<bool> {
        self.delete_agent_item(account, agent, format!("BIND#{host}")).await
    }

    async fn list_bindings(&self, account: &AccountId, agent: &AgentId) -> R<Vec<String>> {
        self.agent_names(account, agent, "BIND#").await
    }

    /// One `Query` of the agent's partition from `BIND#` to the last `SECRET#` key (presence, in
    /// between, is a few bytes): the bindings and the sealed secrets a submit or a push checks.
    async fn agent_material(&self, account: &AccountId, agent: &AgentId) -> R<ma2h_core::ports::AgentMaterial> {
        let mut material = ma2h_core::ports::AgentMaterial::default();
        for item in self.agent_items(account, agent, "BIND#", "SECRET$").await? {
            let sk = get_s(&item, "sk")?;
            if let Some(host) = sk.strip_prefix("BIND#") {
                material.bindings.push(host.to_owned());
            } else if let Some(name) = sk.strip_prefix("SECRET#")
                && let Some(sealed) = item.get("sealed").and_then(|v| v.as_b().ok())
            {
                material.secrets.insert(name.to_owned(), sealed.as_ref().to_vec());
            }
        }
        Ok(material)
    }
}

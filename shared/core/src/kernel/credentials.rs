//! Credentials as the store keeps them (only the key's SHA-256), the agent material (callback
//! bindings, sealed secrets) and the account policy document, and the store port over them.

use crate::kernel::error::StoreError;
use async_trait::async_trait;
use ma2h_protocol::ids::{AccountId, AgentId};
use ma2h_protocol::time::Timestamp;

use crate::inter_agent::policy::AccountPolicy;
use ma2h_protocol::ids::HumanId;

/// Who a credential authenticates.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum PrincipalId {
    Agent(AgentId),
    Operator(HumanId),
}

impl PrincipalId {
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Agent(_) => "agent",
            Self::Operator(_) => "operator",
        }
    }
    pub fn name(&self) -> &str {
        match self {
            Self::Agent(a) => a.as_str(),
            Self::Operator(h) => h.as_str(),
        }
    }
}

/// A stored API credential. Only the SHA-256 of the key is kept.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CredentialRecord {
    /// Public handle (`cred_…`) used by the admin commands.
    pub id: String,
    pub account: AccountId,
    pub principal: PrincipalId,
    pub key_hash: String,
    pub label: Option<String>,
    pub created_at: Timestamp,
    /// Set when rotated (the overlap window's end) or created with a lifetime.
    pub expires_at: Option<Timestamp>,
    pub revoked_at: Option<Timestamp>,
}

impl CredentialRecord {
    pub fn is_active(&self, now: Timestamp) -> bool {
        self.revoked_at.is_none() && self.expires_at.is_none_or(|e| now < e)
    }
}

/// Credentials (hashed) and per-agent sealed secrets.
#[async_trait]
pub trait CredentialStore: Send + Sync + 'static {
    async fn put_credential(&self, credential: &CredentialRecord) -> Result<(), StoreError>;
    async fn credential_by_hash(&self, key_hash: &str) -> Result<Option<CredentialRecord>, StoreError>;
    async fn credential_by_id(&self, id: &str) -> Result<Option<CredentialRecord>, StoreError>;
    async fn list_credentials(&self) -> Result<Vec<CredentialRecord>, StoreError>;
    /// Every agent `account` ever issued a credential to (revoked ones included: their
    /// history stays readable), sorted — the inbox's Agents page (issue 39). Not a scan.
    async fn list_agents(&self, account: &AccountId) -> Result<Vec<AgentId>, StoreError>;
    /// One principal's credentials in `account`, active or not — what an answer arriving
    /// outside the API (a Slack press, an email link) checks on every use, so it must not read
    /// every credential. The default filters [`Self::list_credentials`] (fine for a local store);
    /// a store whose listing is a table scan keeps an index.
    async fn credentials_of(
        &self,
        account: &AccountId,
        principal: &PrincipalId,
    ) -> Result<Vec<CredentialRecord>, StoreError> {
        let mut all = self.list_credentials().await?;
        all.retain(|c| &c.account == account && &c.principal == principal);
        Ok(all)
    }
    /// Replace the revocation / expiry of an existing credential.
    async fn update_credential(&self, credential: &CredentialRecord) -> Result<(), StoreError>;

    /// Store an already-sealed secret for an agent under `name` (replacing any previous value).
    async fn put_secret(
        &self,
        account: &AccountId,
        agent: &AgentId,
        name: &str,
        sealed: &[u8],
    ) -> Result<(), StoreError>;
    async fn get_secret(&self, account: &AccountId, agent: &AgentId, name: &str)
    -> Result<Option<Vec<u8>>, StoreError>;
    /// Names of an agent's stored secrets (never values).
    async fn list_secrets(&self, account: &AccountId, agent: &AgentId) -> Result<Vec<String>, StoreError>;
    /// Remove one secret; `false` if it did not exist.
    async fn delete_secret(&self, account: &AccountId, agent: &AgentId, name: &str) -> Result<bool, StoreError>;

    /// The account's policy (§8.0 `inter_agent` opt-in, sender allowlists); `None` = defaults.
    async fn get_account_policy(&self, account: &AccountId) -> Result<Option<AccountPolicy>, StoreError>;
    /// Write `policy` iff the stored version is `policy.version - 1` (0 = none stored): a
    /// compare-and-set, so two concurrent admin edits never lose one. `false` if refused.
    async fn put_account_policy(&self, account: &AccountId, policy: &AccountPolicy) -> Result<bool, StoreError>;

    /// Record an operator's activity in the inbox or a channel (issue 40 presence); the stored
    /// time never moves backwards.
    async fn touch_operator(&self, account: &AccountId, human: &HumanId, at: Timestamp) -> Result<(), StoreError>;
    /// When each operator of the account was last active, by operator id.
    async fn operators_seen(&self, account: &AccountId) -> Result<Vec<(HumanId, Timestamp)>, StoreError>;

    /// An operator's Web Push devices (issue 41): add or replace by id, list, remove.
    async fn put_device(&self, device: &crate::channels::devices::Device) -> Result<(), StoreError>;
    async fn devices_of(
        &self,
        account: &AccountId,
        human: &HumanId,
    ) -> Result<Vec<crate::channels::devices::Device>, StoreError>;
    async fn delete_device(&self, account: &AccountId, human: &HumanId, id: &str) -> Result<bool, StoreError>;

    /// An operator's passkeys (issue 41). `new`: insert only when no passkey has this credential
    /// id (→ `false` if one has, whoever's it is); otherwise replace it (its state, its last use).
    async fn put_passkey(&self, passkey: &crate::passkeys::record::Passkey, new: bool) -> Result<bool, StoreError>;
    async fn passkeys_of(
        &self,
        account: &AccountId,
        human: &HumanId,
    ) -> Result<Vec<crate::passkeys::record::Passkey>, StoreError>;
    /// The passkey with this credential id (a login names no operator).
    async fn passkey_by_id(&self, id: &str) -> Result<Option<crate::passkeys::record::Passkey>, StoreError>;
    async fn delete_passkey(&self, account: &AccountId, human: &HumanId, id: &str) -> Result<bool, StoreError>;

    /// §9.4 callback bindings: hosts (lowercase, no port) an agent may receive pushes on.
    async fn put_binding(&self, account: &AccountId, agent: &AgentId, host: &str) -> Result<(), StoreError>;
    async fn delete_binding(&self, account: &AccountId, agent: &AgentId, host: &str) -> Result<bool, StoreError>;
    async fn list_bindings(&self, account: &AccountId, agent: &AgentId) -> Result<Vec<String>, StoreError>;

    /// An agent's callback bindings and sealed secrets together — what the §9.4 checks of a
    /// submit and of a push read. A store that keeps them side by side reads them at once (one
    /// DynamoDB `Query`); the default asks for each.
    async fn agent_material(&self, account: &AccountId, agent: &AgentId) -> Result<AgentMaterial, StoreError> {
        let bindings = self.list_bindings(account, agent).await?;
        let mut secrets = std::collections::HashMap::new();
        for name in self.list_secrets(account, agent).await? {
            if let Some(sealed) = self.get_secret(account, agent, &name).await? {
                secrets.insert(name, sealed);
            }
        }
        Ok(AgentMaterial { bindings, secrets })
    }
}

/// An agent's callback bindings (hosts) and its secrets (sealed), by name.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentMaterial {
    pub bindings: Vec<String>,
    pub secrets: std::collections::HashMap<String, Vec<u8>>,
}

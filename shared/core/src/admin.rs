//! Credential administration (the `admin` subcommands): create agent and operator credentials,
//! list, revoke, rotate with an overlap window. Keys are shown once; only their hash is stored.

use chrono::Duration;
use ma2h_protocol::ids::{AccountId, AgentId, HumanId};
use ma2h_protocol::time::{self, Timestamp};
use serde::Serialize;

use crate::audit::{self, Event};
use crate::kernel::auth::{hash_key, key_prefix, new_token};
use crate::kernel::credentials::{CredentialRecord, PrincipalId};
use crate::kernel::secrets::SIGNING_SECRET_NAME;
use crate::{Hub, HubError};

/// What a create/rotate prints once.
#[derive(Debug, Clone, Serialize)]
pub struct IssuedCredential {
    pub credential_id: String,
    pub account: String,
    pub principal: String,
    pub api_key: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signing_secret: Option<String>,
}

/// A listing row: never the key, never the secret.
#[derive(Debug, Clone, Serialize)]
pub struct CredentialSummary {
    pub credential_id: String,
    pub account: String,
    pub principal: String,
    pub label: Option<String>,
    pub created_at: String,
    pub expires_at: Option<String>,
    pub revoked_at: Option<String>,
    pub active: bool,
}

fn principal_string(p: &PrincipalId) -> String {
    match p {
        PrincipalId::Agent(a) => format!("agent:{a}"),
        PrincipalId::Operator(h) => format!("human:{h}"),
    }
}

fn summary(c: &CredentialRecord, now: Timestamp) -> CredentialSummary {
    CredentialSummary {
        credential_id: c.id.clone(),
        account: c.account.to_string(),
        principal: principal_string(&c.principal),
        label: c.label.clone(),
        created_at: time::format(c.created_at),
        expires_at: c.expires_at.map(time::format),
        revoked_at: c.revoked_at.map(time::format),
        active: c.is_active(now),
    }
}

async fn issue(
    hub: &Hub,
    account: AccountId,
    principal: PrincipalId,
    label: Option<String>,
) -> Result<(CredentialRecord, String), HubError> {
    let key = new_token(hub, key_prefix(&principal));
    let record = CredentialRecord {
        id: format!("cred_{}", ulid_like(hub)),
        account,
        principal,
        key_hash: hash_key(&key),
        label,
        created_at: hub.clock.now(),
        expires_at: None,
        revoked_at: None,
    };
    // a new key needs no cache clearing: unknown keys are never cached
    let event = Event::new("credential.created", ADMIN_ACTOR)
        .target(&record.id)
        .detail("principal", principal_string(&record.principal));
    audit::within(hub, &record.account, vec![event], hub.credentials.put_credential(&record)).await?;
    Ok((record, key))
}

fn ulid_like(hub: &Hub) -> String {
    hub.new_message_id().as_str().trim_start_matches("msg_").to_owned()
}

/// Create an agent credential. The agent's signing secret is generated with its first credential
/// and printed that once; later credentials for the same agent do not show it again (rotating it
/// is its own command, [`rotate_signing_secret`]).
pub async fn create_agent(
    hub: &Hub,
    account: &str,
    agent: &str,
    label: Option<String>,
) -> Result<IssuedCredential, HubError> {
    let (account, agent) = parse_agent(account, agent)?;
    let secret = match hub.credentials.get_secret(&account, &agent, SIGNING_SECRET_NAME).await? {
        Some(_) => None,
        None => Some(new_signing_secret(hub, &account, &agent).await?),
    };
    let (record, key) = issue(hub, account.clone(), PrincipalId::Agent(agent.clone()), label).await?;
    Ok(IssuedCredential {
        credential_id: record.id,
        account: account.to_string(),
        principal: format!("agent:{agent}"),
        api_key: key,
        signing_secret: secret,
    })
}

/// Replace an agent's signing secret (sealed under the master key) and return the new one — the
/// only time it is shown. Pushes signed after this verify only with the new secret.
pub async fn rotate_signing_secret(hub: &Hub, account: &str, agent: &str) -> Result<String, HubError> {
    let (account, agent) = parse_agent(account, agent)?;
    new_signing_secret(hub, &account, &agent).await
}

async fn new_signing_secret(hub: &Hub, account: &AccountId, agent: &AgentId) -> Result<String, HubError> {
    let secret = new_token(hub, "whsec_");
    seal_and_store(hub, account, agent, SIGNING_SECRET_NAME, &secret).await?;
    Ok(secret)
}

/// Create an operator (human) credential; the Hub attests `human:<id>` for its actions.
pub async fn create_operator(
    hub: &Hub,
    account: &str,
    human: &str,
    label: Option<String>,
) -> Result<IssuedCredential, HubError> {
    let account = AccountId::parse(account).ok_or_else(|| HubError::validation("invalid account id"))?;
    let human = HumanId::parse(human).ok_or_else(|| HubError::validation("invalid operator id"))?;
    let (record, key) = issue(hub, account.clone(), PrincipalId::Operator(human.clone()), label).await?;
    Ok(IssuedCredential {
        credential_id: record.id,
        account: account.to_string(),
        principal: format!("human:{human}"),
        api_key: key,
        signing_secret: None,
    })
}

pub async fn list(hub: &Hub) -> Result<Vec<CredentialSummary>, HubError> {
    let now = hub.clock.now();
    let mut all = hub.credentials.list_credentials().await?;
    all.sort_by_key(|c| c.created_at);
    Ok(all.iter().map(|c| summary(c, now)).collect())
}

/// Whether `agent` is known in `account` — the Hub's one definition (as for addressing): it has
/// a signing secret, which every agent credential creates. Per-agent settings (bindings,
/// secrets, allowlists, stops) may be written ahead of it — pre-provisioning — so the CLI only
/// notes a miss, which is more often a typo. One read, on either store.
pub async fn agent_is_known(hub: &Hub, account: &str, agent: &str) -> Result<bool, HubError> {
    let (Some(account), Some(agent)) = (AccountId::parse(account), AgentId::parse(agent)) else { return Ok(false) };
    Ok(hub.credentials.get_secret(&account, &agent, SIGNING_SECRET_NAME).await?.is_some())
}

/// Whether `account` ever issued a credential (an operator or an agent) — an account-wide
/// setting written anywhere else reaches nobody, most often a mistyped or defaulted `--account`
/// (issue 39). Reads every credential: an admin command's check, never a request path.
pub async fn account_is_known(hub: &Hub, account: &str) -> Result<bool, HubError> {
    let Some(account) = AccountId::parse(account) else { return Ok(false) };
    Ok(hub.credentials.list_credentials().await?.iter().any(|c| c.account == account))
}

async fn find(hub: &Hub, id: &str) -> Result<CredentialRecord, HubError> {
    hub.credentials.credential_by_id(id).await?.ok_or_else(|| HubError::validation(format!("no credential `{id}`")))
}

/// Revoke at once. Idempotent.
pub async fn revoke(hub: &Hub, id: &str) -> Result<CredentialSummary, HubError> {
    let mut c = find(hub, id).await?;
    let now = hub.clock.now();
    if c.revoked_at.is_none() {
        c.revoked_at = Some(now);
        let event = Event::new("credential.revoked", ADMIN_ACTOR)
            .target(&c.id)
            .detail("principal", principal_string(&c.principal));
        audit::within(hub, &c.account, vec![event], hub.credentials.update_credential(&c)).await?;
        hub.credential_cache.clear();
    }
    Ok(summary(&c, now))
}

/// Issue a new key for the same principal; the old key keeps working for `overlap`, then
/// expires. The signing secret is unchanged and not shown again.
pub async fn rotate(hub: &Hub, id: &str, overlap: Duration) -> Result<IssuedCredential, HubError> {
    let mut old = find(hub, id).await?;
    let now = hub.clock.now();
    if !old.is_active(now) {
        return Err(HubError::validation(format!("credential `{id}` is not active")));
    }
    let (record, key) = issue(hub, old.account.clone(), old.principal.clone(), old.label.clone()).await?;
    let end = now + overlap;
    old.expires_at = Some(old.expires_at.map_or(end, |e| e.min(end)));
    let event = Event::new("credential.rotated", ADMIN_ACTOR)
        .target(&old.id)
        .detail("principal", principal_string(&old.principal))
        .detail("successor", record.id.as_str())
        .detail("old_expires_at", old.expires_at.map(time::format).unwrap_or_default());
    audit::within(hub, &old.account, vec![event], hub.credentials.update_credential(&old)).await?;
    hub.credential_cache.clear();
    Ok(IssuedCredential {
        credential_id: record.id,
        account: old.account.to_string(),
        principal: principal_string(&old.principal),
        api_key: key,
        signing_secret: None,
    })
}

fn parse_agent(account: &str, agent: &str) -> Result<(AccountId, AgentId), HubError> {
    Ok((
        AccountId::parse(account).ok_or_else(|| HubError::validation("invalid account id"))?,
        AgentId::parse(agent).ok_or_else(|| {
            HubError::validation(
                "invalid agent id: 1–200 bytes, no control characters, no `#` (it separates an agent from its session, §4)",
            )
        })?,
    ))
}

/// A caller-chosen secret name: 1–200 characters, never one of the Hub's own (`hub:` prefix).
fn check_secret_name(name: &str) -> Result<(), HubError> {
    if name.is_empty() || name.len() > 200 || name.starts_with(crate::push::deliver::RESERVED_PREFIX) {
        return Err(HubError::validation(format!(
            "secret names are 1–200 characters and may not start with `{}` (the Hub's own secrets)",
            crate::push::deliver::RESERVED_PREFIX
        )));
    }
    Ok(())
}

/// Register (or replace) a secret an agent's callbacks may reference by name as `secret_ref`
/// (hmac) or `token_ref` (bearer/apikey). Sealed under the master key; never printed again.
pub async fn put_secret(hub: &Hub, account: &str, agent: &str, name: &str, value: &str) -> Result<(), HubError> {
    let (account, agent) = parse_agent(account, agent)?;
    check_secret_name(name)?;
    if value.is_empty() {
        return Err(HubError::validation("the secret value is empty"));
    }
    seal_and_store(hub, &account, &agent, name, value).await
}

async fn seal_and_store(
    hub: &Hub,
    account: &AccountId,
    agent: &AgentId,
    name: &str,
    value: &str,
) -> Result<(), HubError> {
    let sealed = hub.master_key.seal(hub.random.as_ref(), &format!("{account}/{agent}/{name}"), value.as_bytes());
    // Issue 42: never the value, nor its digest (a secret may be guessable).
    let event = Event::new("secret.set", ADMIN_ACTOR).target(format!("agent:{agent}")).detail("name", name);
    audit::within(hub, account, vec![event], hub.credentials.put_secret(account, agent, name, &sealed)).await?;
    Ok(())
}

/// Remove a secret the operator registered; the Hub's own (`hub:` names) cannot be deleted here.
pub async fn delete_secret(hub: &Hub, account: &str, agent: &str, name: &str) -> Result<bool, HubError> {
    let (account, agent) = parse_agent(account, agent)?;
    check_secret_name(name)?;
    remove_secret(hub, &account, &agent, name).await
}

async fn remove_secret(hub: &Hub, account: &AccountId, agent: &AgentId, name: &str) -> Result<bool, HubError> {
    let event = Event::new("secret.deleted", ADMIN_ACTOR).target(format!("agent:{agent}")).detail("name", name);
    Ok(audit::within(hub, account, vec![event], hub.credentials.delete_secret(account, agent, name)).await?)
}

/// Secret names of an agent (the Hub's own `hub:` entries excluded).
pub async fn list_secrets(hub: &Hub, account: &str, agent: &str) -> Result<Vec<String>, HubError> {
    let (account, agent) = parse_agent(account, agent)?;
    let mut names = hub.credentials.list_secrets(&account, &agent).await?;
    names.retain(|n| !n.starts_with(crate::push::deliver::RESERVED_PREFIX));
    Ok(names)
}

/// §9.4 operator approval: the agent may receive push callbacks on `host`. A literal address the
/// egress guard would refuse anyway (loopback, private, link-local/metadata, …) is refused here
/// outside dev mode, so an operator learns at once instead of from a failed push.
/// Who the admin CLI acts as in a stop record (§16.4.1): a human at the Hub's console, not an agent.
pub const ADMIN_ACTOR: &str = "system:admin";

/// Stop an agent as `ma2h-hub admin stop-agent` (the operator API's stop, from the console).
pub async fn stop_agent(hub: &Hub, account: &str, agent: &str) -> Result<crate::sessions::model::StopRecord, HubError> {
    let (account, agent) = parse_agent(account, agent)?;
    crate::sessions::lease::stop_mailbox(hub, &crate::mailbox::model::Mailbox { account, agent }, ADMIN_ACTOR.into())
        .await
}

/// Lift an agent's stop (`ma2h-hub admin lift-stop`); `true` if there was one.
pub async fn lift_stop(hub: &Hub, account: &str, agent: &str) -> Result<bool, HubError> {
    let (account, agent) = parse_agent(account, agent)?;
    crate::sessions::lease::lift_mailbox(hub, &crate::mailbox::model::Mailbox { account, agent }, ADMIN_ACTOR).await
}

/// The agent's stop record, if stopped.
pub async fn stop_status(
    hub: &Hub,
    account: &str,
    agent: &str,
) -> Result<Option<crate::sessions::model::StopRecord>, HubError> {
    let (account, agent) = parse_agent(account, agent)?;
    Ok(hub.sessions.get_stop(&crate::mailbox::model::Mailbox { account, agent }).await?)
}

pub async fn bind_callback(hub: &Hub, account: &str, agent: &str, host: &str) -> Result<String, HubError> {
    let (account, agent) = parse_agent(account, agent)?;
    let host = normalize_host(host)?;
    if hub.settings.mode != crate::kernel::settings::Mode::Dev
        && let Ok(ip) = host.parse::<std::net::IpAddr>()
        && ma2h_protocol::egress::is_forbidden(ip)
    {
        return Err(HubError::validation(format!(
            "`{host}` is a loopback, private, link-local/metadata or reserved address: pushes to it are always refused (§9.4)"
        )));
    }
    let event = Event::new("binding.added", ADMIN_ACTOR).target(format!("agent:{agent}")).detail("host", host.as_str());
    audit::within(hub, &account, vec![event], hub.credentials.put_binding(&account, &agent, &host)).await?;
    Ok(host)
}

pub async fn unbind_callback(hub: &Hub, account: &str, agent: &str, host: &str) -> Result<bool, HubError> {
    let (account, agent) = parse_agent(account, agent)?;
    let host = normalize_host(host)?;
    let event =
        Event::new("binding.removed", ADMIN_ACTOR).target(format!("agent:{agent}")).detail("host", host.as_str());
    Ok(audit::within(hub, &account, vec![event], hub.credentials.delete_binding(&account, &agent, &host)).await?)
}

pub async fn list_bindings(hub: &Hub, account: &str, agent: &str) -> Result<Vec<String>, HubError> {
    let (account, agent) = parse_agent(account, agent)?;
    Ok(hub.credentials.list_bindings(&account, &agent).await?)
}

/// A bare host name or IP literal, lowercased, as URLs present it (IDNA, IPv4 normalisation).
/// Bindings are per host (any port), so a port is refused rather than silently dropped.
fn normalize_host(host: &str) -> Result<String, HubError> {
    let host = host.trim();
    let parsed = crate::push::deliver::callback_host(&format!("https://{host}/"));
    let has_port =
        url::Url::parse(&format!("https://{host}/")).ok().and_then(|u| u.port()).is_some() || host.ends_with(':');
    match parsed {
        _ if has_port => Err(HubError::validation(format!(
            "`{host}`: a binding approves a host on every port — give the host without `:port`"
        ))),
        // A name no DNS can hold (253 characters, 63 per label) could never be pushed to.
        Some(h) if h.len() > 253 || h.split('.').any(|label| label.len() > 63) => Err(HubError::validation(format!(
            "`{host}` is longer than a DNS name can be (253 characters, 63 per label)"
        ))),
        Some(h) if !host.contains(['/', '@', '?', '#']) && !host.is_empty() => Ok(h),
        _ => Err(HubError::validation(format!(
            "`{host}` is not a host name (give the host only, no scheme, port or path)"
        ))),
    }
}

/// How an agent's bearer/apikey pushes are signed: `hmac-sha256` (its Hub-issued signing secret,
/// the default) or `ed25519` (the Hub key published in the capability document).
pub async fn set_signing_alg(hub: &Hub, account: &str, agent: &str, alg: &str) -> Result<(), HubError> {
    let (account, agent) = parse_agent(account, agent)?;
    if alg != ma2h_protocol::signature::ALG_HMAC_SHA256 && alg != ma2h_protocol::signature::ALG_ED25519 {
        return Err(HubError::validation("alg must be hmac-sha256 or ed25519"));
    }
    seal_and_store(hub, &account, &agent, crate::push::deliver::SIGNING_ALG_NAME, alg).await
}

/// Issue 43: turn the Standard Webhooks headers on an agent's pushes on (a fresh `whsec_`
/// secret, returned to be shown once; enabling again replaces it) or off (`None`).
pub async fn set_standard_webhooks(
    hub: &Hub,
    account: &str,
    agent: &str,
    enable: bool,
) -> Result<Option<String>, HubError> {
    let (account, agent) = parse_agent(account, agent)?;
    let name = crate::push::deliver::STANDARD_WEBHOOKS_NAME;
    if !enable {
        remove_secret(hub, &account, &agent, name).await?;
        return Ok(None);
    }
    let mut key = [0u8; 32];
    hub.random.fill(&mut key);
    let secret = ma2h_protocol::standard_webhooks::WebhookSecret::from_random(key).expose();
    seal_and_store(hub, &account, &agent, name, &secret).await?;
    Ok(Some(secret))
}

/// The account's inter-agent policy (`ma2h-hub admin inter-agent`), changed by `patch` first when
/// it is non-empty (`{"enabled": …}` / `{"allowlists": {…}}`, as the operator API takes it).
pub async fn inter_agent(
    hub: &Hub,
    account: &str,
    patch: serde_json::Value,
) -> Result<crate::inter_agent::policy::AccountPolicy, HubError> {
    let account = AccountId::parse(account).ok_or_else(|| HubError::validation("not a valid account id"))?;
    if patch.as_object().is_some_and(|m| m.is_empty()) {
        return Ok(hub.credentials.get_account_policy(&account).await?.unwrap_or_default());
    }
    crate::inter_agent::rules::apply(hub, &account, &patch, ADMIN_ACTOR).await
}

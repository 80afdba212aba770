//! Administering approval policies (issue 40): the operator API, the inbox and the admin CLI all
//! come here. The policies live in the account's policy document, edited by compare-and-set on
//! its version (like routes), so two concurrent edits never silently lose one.

use ma2h_protocol::envelope::Priority;
use ma2h_protocol::ids::{AccountId, HumanId};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::decisions::policy::{ApprovalPolicy, MAX_APPROVALS, MAX_EXCLUDED, MAX_POLICIES};
use crate::inter_agent::policy::{AccountPolicy, MAX_POLICY_BYTES};
use crate::{Hub, HubError};

/// An approval policy as typed by an operator (strings, checked here).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PolicySpec {
    pub id: String,
    #[serde(default)]
    pub agent: Option<String>,
    #[serde(default)]
    pub project: Option<String>,
    #[serde(default)]
    pub tag: Option<String>,
    #[serde(default)]
    pub min_priority: Option<String>,
    pub approvals: u8,
    #[serde(default)]
    pub exclude: Vec<String>,
    #[serde(default)]
    pub exclude_label: Option<String>,
    /// Only sensitive asks (issue 41).
    #[serde(default)]
    pub sensitive: bool,
    /// A fresh passkey assertion before an answer is applied (issue 41).
    #[serde(default)]
    pub passkey: bool,
}

fn account_id(account: &str) -> Result<AccountId, HubError> {
    AccountId::parse(account).ok_or_else(|| HubError::validation("`account`: not an account id"))
}

/// Read-modify-write of the account's policy document by compare-and-set on its version.
pub async fn edit_policy(
    hub: &Hub,
    account: &AccountId,
    event: crate::audit::Event,
    mut edit: impl FnMut(&mut AccountPolicy) -> Result<(), HubError>,
) -> Result<AccountPolicy, HubError> {
    for _ in 0..8 {
        let mut policy = hub.credentials.get_account_policy(account).await?.unwrap_or_default();
        edit(&mut policy)?;
        if policy.to_json().len() > MAX_POLICY_BYTES {
            return Err(HubError::validation(format!(
                "the account's configuration would exceed {MAX_POLICY_BYTES} bytes"
            )));
        }
        policy.version += 1;
        // Issue 42: the change is recorded in the compare-and-set's own write.
        let put = hub.credentials.put_account_policy(account, &policy);
        if crate::audit::within(hub, account, vec![event.clone().detail("version", policy.version)], put).await? {
            hub.policy_cache.forget(account);
            hub.changes.publish_account(account);
            return Ok(policy);
        }
    }
    Err(HubError::RateLimited { message: "the account policy kept changing; try again".into(), retry_after_secs: 1 })
}

fn check(spec: PolicySpec) -> Result<ApprovalPolicy, HubError> {
    if !crate::channels::config::valid_id(&spec.id) {
        return Err(HubError::validation(format!("policy `{}`: use 1–64 of a-z, 0-9 and -", spec.id)));
    }
    if !(1..=MAX_APPROVALS).contains(&spec.approvals) {
        return Err(HubError::validation(format!("`approvals`: 1–{MAX_APPROVALS} distinct approvers")));
    }
    if spec.exclude.len() > MAX_EXCLUDED {
        return Err(HubError::validation(format!("`exclude`: at most {MAX_EXCLUDED} humans")));
    }
    let mut exclude = Vec::new();
    for h in &spec.exclude {
        let h = h.trim();
        let id = h.strip_prefix("human:").unwrap_or(h);
        let id = HumanId::parse(id)
            .ok_or_else(|| HubError::validation(format!("`exclude`: `{h}` is not an operator id")))?;
        exclude.push(id.to_string());
    }
    if spec.approvals == 1 && exclude.is_empty() && spec.exclude_label.is_none() && !spec.passkey {
        return Err(HubError::validation(
            "a policy of 1 approval must exclude someone (`exclude` or `exclude_label`) or ask for a passkey (`passkey`)",
        ));
    }
    let min_priority = match spec.min_priority.as_deref() {
        None | Some("") => None,
        Some(p) => Some(
            Priority::parse(p).ok_or_else(|| HubError::validation("`min_priority`: low, normal, high or urgent"))?,
        ),
    };
    let nonblank = |v: Option<String>| v.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty());
    Ok(ApprovalPolicy {
        id: spec.id,
        filter: crate::channels::config::MessageFilter {
            agent: nonblank(spec.agent),
            project: nonblank(spec.project),
            tag: nonblank(spec.tag),
            min_priority,
            sensitive: spec.sensitive,
        },
        approvals: spec.approvals,
        exclude,
        exclude_label: nonblank(spec.exclude_label),
        passkey: spec.passkey,
    })
}

/// The account's policies as the API shows them.
pub fn policies_json(policy: &AccountPolicy) -> Value {
    json!({ "approval_policies": policy.approvals })
}

pub async fn show(hub: &Hub, account: &str) -> Result<Value, HubError> {
    let account = account_id(account)?;
    Ok(policies_json(&hub.credentials.get_account_policy(&account).await?.unwrap_or_default()))
}

/// Add a policy, or replace the one with its id in place (order is kept: the first match wins).
pub async fn put(hub: &Hub, by: &str, account: &str, spec: PolicySpec) -> Result<Value, HubError> {
    let account = account_id(account)?;
    let policy = check(spec)?;
    let event = crate::audit::Event::new("policy.changed", by)
        .target(format!("policy:{}", policy.id))
        .detail("action", "put")
        .detail("approvals", policy.approvals);
    let saved = edit_policy(hub, &account, event, |p| {
        let full = p.approvals.len() >= MAX_POLICIES;
        match p.approvals.iter_mut().find(|x| x.id == policy.id) {
            Some(existing) => *existing = policy.clone(),
            None if full => return Err(HubError::validation(format!("at most {MAX_POLICIES} approval policies"))),
            None => p.approvals.push(policy.clone()),
        }
        Ok(())
    })
    .await?;
    tracing::info!(account = %account, policy = %policy.id, approvals = policy.approvals, "approval policy saved");
    Ok(policies_json(&saved))
}

pub async fn remove(hub: &Hub, by: &str, account: &str, id: &str) -> Result<Value, HubError> {
    let account = account_id(account)?;
    let event =
        crate::audit::Event::new("policy.changed", by).target(format!("policy:{id}")).detail("action", "removed");
    let saved = edit_policy(hub, &account, event, |p| {
        let before = p.approvals.len();
        p.approvals.retain(|x| x.id != id);
        if p.approvals.len() == before {
            return Err(HubError::validation(format!("no approval policy `{id}`")));
        }
        Ok(())
    })
    .await?;
    tracing::info!(account = %account, policy = %id, "approval policy removed");
    Ok(policies_json(&saved))
}

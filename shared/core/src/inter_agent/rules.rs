//! The inter-agent leg's policy (§8.0 opt-in, §13.5 allowlists) as the operator manages it, and
//! delivery honesty after an entry closes undeliverable (§14.2, §7): the auto-resolution and the
//! sender's bounce `receipt`.

use ma2h_protocol::ids::{AccountId, AgentId};
use serde_json::Value;

use crate::inter_agent::policy::{AccountPolicy, MAX_ALLOWLISTS, MAX_POLICY_BYTES, MAX_SENDERS};
use crate::kernel::auth::Principal;
use crate::kernel::credentials::PrincipalId;
use crate::{Hub, HubError};

/// `GET /v1/operator/inter-agent`: the account's policy (defaults when never set).
pub async fn read(hub: &Hub, principal: &Principal) -> Result<AccountPolicy, HubError> {
    operator_only(principal)?;
    Ok(hub.credentials.get_account_policy(&principal.account).await?.unwrap_or_default())
}

/// `PATCH /v1/operator/inter-agent`: `{"enabled": bool}` and/or `{"allowlists": {"<dest>":
/// ["<sender>", …] | null}}` (null or `[]` removes a destination's list).
pub async fn update(hub: &Hub, principal: &Principal, patch: &Value) -> Result<AccountPolicy, HubError> {
    operator_only(principal)?;
    let by = principal.actor().to_string();
    apply(hub, &principal.account, patch, &by).await
}

/// The edit itself (also the admin CLI's, attributed to `system:admin`): validated, then written
/// with a compare-and-set on the version, retried on a concurrent edit.
pub async fn apply(hub: &Hub, account: &AccountId, patch: &Value, by: &str) -> Result<AccountPolicy, HubError> {
    let Some(patch) = patch.as_object() else {
        return Err(HubError::validation("`/`: the request body must be a JSON object"));
    };
    if let Some(k) = patch.keys().find(|k| !matches!(k.as_str(), "enabled" | "allowlists")) {
        return Err(HubError::validation(format!("`/{k}`: unknown member (expected `enabled`, `allowlists`)")));
    }
    let enabled = match patch.get("enabled") {
        None => None,
        Some(Value::Bool(b)) => Some(*b),
        Some(_) => return Err(HubError::validation("`/enabled`: must be a boolean")),
    };
    let mut lists: Vec<(String, Option<Vec<String>>)> = Vec::new();
    match patch.get("allowlists") {
        None => {}
        Some(Value::Object(m)) => {
            for (dest, senders) in m {
                let dest = AgentId::parse(dest)
                    .filter(|a| !a.as_str().contains('#'))
                    .ok_or_else(|| HubError::validation(format!("`/allowlists/{dest}`: not an agent id")))?;
                let senders = match senders {
                    Value::Null => None,
                    Value::Array(items) if items.is_empty() => None,
                    Value::Array(items) if items.len() <= MAX_SENDERS => Some(
                        items
                            .iter()
                            .map(|s| s.as_str().and_then(AgentId::parse).map(|a| a.to_string()))
                            .collect::<Option<Vec<_>>>()
                            .ok_or_else(|| {
                                HubError::validation(format!("`/allowlists/{dest}`: every sender must be an agent id"))
                            })?,
                    ),
                    _ => {
                        return Err(HubError::validation(format!(
                            "`/allowlists/{dest}`: must be an array of at most {MAX_SENDERS} agent ids, or null"
                        )));
                    }
                };
                lists.push((dest.to_string(), senders));
            }
        }
        Some(_) => return Err(HubError::validation("`/allowlists`: must be an object")),
    }
    for _ in 0..8 {
        let mut policy = hub.credentials.get_account_policy(account).await?.unwrap_or_default();
        if let Some(e) = enabled {
            policy.inter_agent = e;
        }
        for (dest, senders) in &lists {
            match senders {
                Some(s) => {
                    policy.allowlists.insert(dest.clone(), s.iter().cloned().collect());
                }
                None => {
                    policy.allowlists.remove(dest);
                }
            }
        }
        if policy.allowlists.len() > MAX_ALLOWLISTS {
            return Err(HubError::validation(format!("`/allowlists`: at most {MAX_ALLOWLISTS} destinations")));
        }
        // One stored document (a DynamoDB item is at most 400 KB), read on every addressed submit.
        if policy.to_json().len() > MAX_POLICY_BYTES {
            return Err(HubError::invalid_field(format!(
                "`/allowlists`: the policy would exceed {MAX_POLICY_BYTES} bytes; use fewer or shorter entries"
            )));
        }
        policy.version += 1;
        // Issue 42: the change is recorded in the compare-and-set's own write.
        let event = crate::audit::Event::new("policy.changed", by)
            .target("inter_agent")
            .detail("version", policy.version)
            .digest_of(&serde_json::json!({ "inter_agent": policy.inter_agent, "allowlists": policy.allowlists }));
        let put = hub.credentials.put_account_policy(account, &policy);
        if crate::audit::within(hub, account, vec![event], put).await? {
            tracing::info!(account = %account, by, inter_agent = policy.inter_agent, allowlists = policy.allowlists.len(), "inter-agent policy changed");
            return Ok(policy);
        }
    }
    Err(HubError::Internal("inter-agent policy: too many concurrent edits".into()))
}

fn operator_only(principal: &Principal) -> Result<(), HubError> {
    match principal.id {
        PrincipalId::Operator(_) => Ok(()),
        PrincipalId::Agent(_) => Err(HubError::NotAuthorized("only the account's human manages this policy".into())),
    }
}

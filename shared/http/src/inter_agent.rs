//! `GET|PATCH /v1/operator/inter-agent`: the account's inter-agent policy (§8.0 opt-in, §13.5
//! sender allowlists), managed by its human.

use axum::Json;
use axum::extract::State;
use ma2h_core::inter_agent::policy::AccountPolicy;
use ma2h_core::inter_agent::rules;
use ma2h_core::{Hub, HubError};
use ma2h_protocol::wire::InterAgentPolicy;
use serde_json::Value;

use crate::error::ApiError;
use crate::extract::{Body, Caller};

pub async fn read(State(hub): State<Hub>, Caller(who): Caller) -> Result<Json<InterAgentPolicy>, ApiError> {
    Ok(Json(policy_json(&hub, &rules::read(&hub, &who).await?)))
}

pub async fn update(
    State(hub): State<Hub>,
    Caller(who): Caller,
    Body(body): Body,
) -> Result<Json<InterAgentPolicy>, ApiError> {
    let patch: Value = serde_json::from_slice(&body)
        .map_err(|e| HubError::validation(format!("`/`: the body is not valid JSON ({e})")))?;
    Ok(Json(policy_json(&hub, &rules::update(&hub, &who, &patch).await?)))
}

/// `enabled` is what takes effect: the account's opt-in under the deployment ceiling.
pub fn policy_json(hub: &Hub, p: &AccountPolicy) -> InterAgentPolicy {
    InterAgentPolicy {
        enabled: p.inter_agent && hub.settings.inter_agent.enabled,
        account_opt_in: p.inter_agent,
        deployment_enabled: hub.settings.inter_agent.enabled,
        allowlists: p.allowlists.clone(),
        version: p.version,
    }
}

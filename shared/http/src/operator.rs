//! `GET /v1/operator/messages`: the operator's view of the account (open, or recently
//! resolved). `/v1/inbox` stays free for the v0.4 agent mailbox (§8.7).

use axum::Json;
use axum::extract::State;
use ma2h_core::list::{self, ListParams};
use ma2h_core::{Hub, HubError};
use ma2h_protocol::envelope::MessageType;
use ma2h_protocol::ids::AgentId;
use serde_json::Value;

use crate::error::ApiError;
use crate::extract::{Caller, Params};

pub async fn list(State(hub): State<Hub>, Caller(who): Caller, params: Params) -> Result<Json<Value>, ApiError> {
    let resolved = match params.get("status").unwrap_or("open") {
        "open" => false,
        "resolved" => true,
        other => {
            return Err(
                HubError::validation(format!("query `status` must be `open` or `resolved`, got `{other}`")).into()
            );
        }
    };
    let kind = params
        .get("type")
        .map(|t| MessageType::parse(t).ok_or_else(|| HubError::validation("query `type` must be notify, ask or task")))
        .transpose()?;
    let agent_id = params
        .get("agent")
        .map(|a| AgentId::parse(a).ok_or_else(|| HubError::validation("query `agent` is not a valid agent id")))
        .transpose()?;
    let limit = params.u32("limit")?.map(|l| l as usize);
    let query = ListParams { resolved, kind, agent_id, limit };
    Ok(Json(list::list(&hub, &who, query).await?))
}

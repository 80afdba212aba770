//! The operator listing: the account's open messages (urgent/high first, then oldest) or its
//! recent resolutions (newest first). The web inbox builds on it. `client_ref` and `state` are
//! never included (§9.1, §9.3).

use ma2h_protocol::envelope::MessageType;
use ma2h_protocol::ids::AgentId;
use ma2h_protocol::time;
use serde_json::{Value, json};

use crate::auth::Principal;
use crate::records::{ListQuery, MessageRecord, PrincipalId};
use crate::{Hub, HubError};

pub const MAX_LIST: usize = 500;

/// Query parameters of the listing.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListParams {
    /// `open` (default) or `resolved`.
    pub resolved: bool,
    pub kind: Option<MessageType>,
    pub agent_id: Option<AgentId>,
    pub limit: Option<usize>,
}

pub async fn list(hub: &Hub, principal: &Principal, params: ListParams) -> Result<Value, HubError> {
    if !matches!(principal.id, PrincipalId::Operator(_)) {
        return Err(HubError::NotAuthorized("the inbox listing needs an operator credential".into()));
    }
    let query = ListQuery {
        open: !params.resolved,
        kind: params.kind,
        agent_id: params.agent_id,
        limit: params.limit.unwrap_or(100).clamp(1, MAX_LIST),
    };
    // The store returns the inbox order (port contract): urgent first then oldest, or newest
    // resolution first.
    let records = hub.messages.list_messages(&principal.account, &query).await?;
    let items: Vec<Value> = records.iter().map(summary).collect();
    Ok(json!({ "messages": items, "count": items.len() }))
}

fn summary(r: &MessageRecord) -> Value {
    let env = &r.envelope;
    let mut out = json!({
        "id": r.id.as_str(),
        "type": r.kind.as_str(),
        "status": r.status.as_str(),
        "title": r.title,
        "priority": r.priority.as_str(),
        "agent": { "id": r.agent_id.as_str(), "project": env["agent"].get("project") },
        "tags": env.get("tags").cloned().unwrap_or(Value::Array(vec![])),
        "created_at": time::format(r.created_at),
        "expires_at": r.expires_at.map(time::format),
    });
    if let Some(p) = &r.push {
        out["push"] = json!({
            "status": p.status.as_str(),
            "attempts": p.attempts,
            "last_error": p.last_error,
            "next_attempt_at": p.next_attempt_at.map(time::format),
            "delivered_at": p.delivered_at.map(time::format),
        });
    }
    if let Some(resp) = &r.response {
        out["resolution"] = resp["resolution"].clone();
        out["resolution_id"] = resp["resolution_id"].clone();
        out["actor"] = resp["response"]["actor"].clone();
        out["comment"] = resp["response"]["comment"].clone();
        out["resolved_at"] = Value::String(time::format(r.updated_at));
    }
    out
}

//! `GET /v1/operator/messages`: the operator's view of the account (open, or recently
//! resolved), filtered and paged by the store. `/v1/inbox` stays free for the agent mailbox (§8.7).

use axum::Json;
use axum::extract::State;
use ma2h_core::list::{self, ListParams, Listing};
use ma2h_core::listing::{ListFilter, MessageSummary};
use ma2h_core::{Hub, HubError};
use ma2h_protocol::envelope::{MessageType, Priority};
use ma2h_protocol::ids::AgentId;
use ma2h_protocol::time;
use serde_json::{Value, json};

use crate::error::ApiError;
use crate::extract::{Caller, Params};

/// The filters shared by the API and the web inbox: `type`, `priority`, `agent`, `project`,
/// `tag`. An empty value means "any" (what an HTML form sends for an unset field).
pub(crate) fn filter_from(params: &Params) -> Result<ListFilter, HubError> {
    let get = |k: &str| params.get(k).map(str::trim).filter(|v| !v.is_empty());
    let kind = get("type")
        .map(|t| MessageType::parse(t).ok_or_else(|| HubError::validation("query `type` must be notify, ask or task")))
        .transpose()?;
    let priority = get("priority")
        .map(|p| {
            Priority::parse(p)
                .ok_or_else(|| HubError::validation("query `priority` must be urgent, high, normal or low"))
        })
        .transpose()?;
    let agent_id = get("agent")
        .map(|a| AgentId::parse(a).ok_or_else(|| HubError::validation("query `agent` is not a valid agent id")))
        .transpose()?;
    Ok(ListFilter {
        kind,
        priority,
        agent_id,
        project: get("project").map(Into::into),
        tag: get("tag").map(Into::into),
    })
}

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
    let counts = match params.get("counts") {
        None | Some("false" | "0") => false,
        Some("true" | "1") => true,
        Some(_) => return Err(HubError::validation("query `counts` must be true or false").into()),
    };
    let query = ListParams {
        resolved,
        filter: filter_from(&params)?,
        cursor: params.get("cursor").map(Into::into),
        limit: params.u32("limit")?.map(|l| l as usize),
        counts,
    };
    Ok(Json(listing_json(&list::list(&hub, &who, query).await?)))
}

/// The body of `GET /v1/operator/messages`: `{count, messages, next_cursor?, counts?}`.
pub(crate) fn listing_json(listing: &Listing) -> Value {
    let items: Vec<Value> = listing.page.items.iter().map(summary_json).collect();
    let mut out = json!({ "count": items.len(), "messages": items });
    if let Some(next) = &listing.page.next {
        out["next_cursor"] = Value::String(next.encode());
    }
    if let Some(c) = &listing.counts {
        let priorities = [Priority::Urgent, Priority::High, Priority::Normal, Priority::Low];
        let kinds = [MessageType::Notify, MessageType::Ask, MessageType::Task];
        out["counts"] = json!({
            "open": c.total,
            "matching": c.matching,
            "priority": Value::Object(priorities.iter().map(|p| (p.as_str().to_owned(), json!(c.priority(*p)))).collect()),
            "type": Value::Object(kinds.iter().map(|k| (k.as_str().to_owned(), json!(c.kind(*k)))).collect()),
        });
    }
    out
}

/// One listing row. Summaries hold no `state`, `client_ref` or envelope (§9.1, §9.3).
fn summary_json(s: &MessageSummary) -> Value {
    let mut out = json!({
        "id": s.id.as_str(),
        "type": s.kind.as_str(),
        "status": s.status.as_str(),
        "title": s.title,
        "priority": s.priority.as_str(),
        "agent": { "id": s.agent_id.as_str(), "project": s.project },
        "tags": s.tags,
        "created_at": time::format(s.created_at),
        "expires_at": s.expires_at.map(time::format),
    });
    if let Some(p) = &s.push {
        out["push"] = p.to_json();
    }
    if let Some(rid) = &s.resolution_id {
        // §6: the resolution is the terminal status the Response records.
        out["resolution"] = Value::String(s.status.as_str().to_owned());
        out["resolution_id"] = Value::String(rid.as_str().to_owned());
        out["actor"] = json!(s.actor);
        out["comment"] = json!(s.comment);
        out["resolved_at"] = Value::String(time::format(s.updated_at));
    }
    out
}

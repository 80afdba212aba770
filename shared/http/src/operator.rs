//! `GET /v1/operator/messages`: the operator's view of the account (open, or recently
//! resolved), filtered and paged by the store. `/v1/inbox` stays free for the agent mailbox (§8.7).

use axum::Json;
use axum::extract::State;
use ma2h_core::messages::list;
use ma2h_core::messages::list::{ListParams, Listing};
use ma2h_core::messages::listing::{ListFilter, MessageSummary};
use ma2h_core::{Hub, HubError};
use ma2h_protocol::envelope::{MessageType, Priority};
use ma2h_protocol::ids::AgentId;
use ma2h_protocol::wire::{self, OpenCountsView, PriorityCounts, RowAgent, RowResolution, SummaryRow, TypeCounts};

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

pub async fn list(
    State(hub): State<Hub>,
    Caller(who): Caller,
    params: Params,
) -> Result<Json<wire::Listing>, ApiError> {
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
pub(crate) fn listing_json(listing: &Listing) -> wire::Listing {
    let messages: Vec<SummaryRow> = listing.page.items.iter().map(summary_row).collect();
    let counts = listing.counts.as_ref().map(|c| OpenCountsView {
        open: c.total,
        matching: c.matching,
        matching_partial: c.matching_partial,
        priority: PriorityCounts {
            urgent: c.priority(Priority::Urgent),
            high: c.priority(Priority::High),
            normal: c.priority(Priority::Normal),
            low: c.priority(Priority::Low),
        },
        kind: TypeCounts {
            notify: c.kind(MessageType::Notify),
            ask: c.kind(MessageType::Ask),
            task: c.kind(MessageType::Task),
        },
    });
    wire::Listing {
        count: messages.len(),
        messages,
        next_cursor: listing.page.next.as_ref().map(|n| n.encode()),
        counts,
    }
}

/// One listing row. Summaries hold no `state`, `client_ref` or envelope (§9.1, §9.3).
fn summary_row(s: &MessageSummary) -> SummaryRow {
    SummaryRow {
        id: s.id.to_string(),
        kind: s.kind,
        status: s.status,
        title: s.title.clone(),
        priority: s.priority,
        agent: RowAgent { id: s.agent_id.to_string(), project: s.project.clone() },
        tags: s.tags.clone(),
        created_at: s.created_at,
        expires_at: s.expires_at,
        push: s.push.as_ref().map(|p| p.view()),
        // §6: the resolution is the terminal status the Response records.
        resolution: s.resolution_id.as_ref().map(|rid| RowResolution {
            resolution: s.status,
            resolution_id: rid.to_string(),
            actor: s.actor.clone(),
            comment: s.comment.clone(),
            resolved_at: s.updated_at,
        }),
    }
}

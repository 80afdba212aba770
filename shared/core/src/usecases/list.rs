//! The operator listing: the account's open messages (urgent/high first, then oldest) or its
//! recent resolutions (newest first), filtered and paged by the store, with the open counts on
//! request. The web inbox builds on it. `client_ref` and `state` are never included (§9.1,
//! §9.3): the store hands back summaries, not envelopes.

use ma2h_protocol::envelope::{MessageType, Priority};
use ma2h_protocol::time;
use serde_json::{Value, json};

use crate::auth::Principal;
use crate::listing::{ListCursor, ListFilter, ListPage, ListQuery, MAX_FILTER_CHARS, MessageSummary, OpenCounts};
use crate::records::PrincipalId;
use crate::{Hub, HubError};

/// The largest page.
pub const MAX_LIST: usize = 500;
/// The page size when none is asked for.
pub const DEFAULT_LIMIT: usize = 100;

/// Query parameters of the listing, parsed at the edge.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListParams {
    /// `open` (default) or `resolved`.
    pub resolved: bool,
    pub filter: ListFilter,
    /// The previous page's `next_cursor`, as the client got it.
    pub cursor: Option<String>,
    pub limit: Option<usize>,
    /// Add the open counts (open listing only; they read every open message's index entry).
    pub counts: bool,
}

/// A page of summaries, its continuation and (if asked) the counts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Listing {
    pub page: ListPage,
    pub counts: Option<OpenCounts>,
}

impl Listing {
    /// The JSON body of `GET /v1/operator/messages`.
    pub fn to_json(&self) -> Value {
        let items: Vec<Value> = self.page.items.iter().map(summary_json).collect();
        let mut out = json!({ "count": items.len(), "messages": items });
        if let Some(next) = &self.page.next {
            out["next_cursor"] = Value::String(next.encode());
        }
        if let Some(c) = &self.counts {
            let by = |ps: &[Priority]| ps.iter().map(|p| (p.as_str().to_owned(), json!(c.priority(*p)))).collect();
            let kinds = [MessageType::Notify, MessageType::Ask, MessageType::Task];
            out["counts"] = json!({
                "open": c.total,
                "matching": c.matching,
                "priority": Value::Object(by(&[Priority::Urgent, Priority::High, Priority::Normal, Priority::Low])),
                "type": Value::Object(kinds.iter().map(|k| (k.as_str().to_owned(), json!(c.kind(*k)))).collect()),
            });
        }
        out
    }
}

/// Check what the edge could not: value lengths and the cursor.
fn query(params: &ListParams) -> Result<ListQuery, HubError> {
    for (name, v) in [("project", &params.filter.project), ("tag", &params.filter.tag)] {
        if v.as_ref().is_some_and(|v| v.is_empty() || v.chars().count() > MAX_FILTER_CHARS) {
            return Err(HubError::validation(format!("query `{name}` must be 1 to {MAX_FILTER_CHARS} characters")));
        }
    }
    let after = params
        .cursor
        .as_deref()
        .map(|c| {
            ListCursor::decode(c)
                .filter(|c| c.is_open() != params.resolved)
                .ok_or_else(|| HubError::validation("query `cursor` is not a cursor this listing returned"))
        })
        .transpose()?;
    Ok(ListQuery {
        open: !params.resolved,
        filter: params.filter.clone(),
        after,
        limit: params.limit.unwrap_or(DEFAULT_LIMIT).clamp(1, MAX_LIST),
    })
}

pub async fn list(hub: &Hub, principal: &Principal, params: ListParams) -> Result<Listing, HubError> {
    if !matches!(principal.id, PrincipalId::Operator(_)) {
        return Err(HubError::NotAuthorized("the inbox listing needs an operator credential".into()));
    }
    let q = query(&params)?;
    let page = hub.messages.list_messages(&principal.account, &q).await?;
    let counts = match params.counts && q.open {
        true => Some(hub.messages.open_counts(&principal.account, &q.filter).await?),
        false => None,
    };
    Ok(Listing { page, counts })
}

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
        out["push"] = json!({
            "status": p.status.as_str(),
            "attempts": p.attempts,
            "last_error": p.last_error,
            "next_attempt_at": p.next_attempt_at.map(time::format),
            "delivered_at": p.delivered_at.map(time::format),
        });
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

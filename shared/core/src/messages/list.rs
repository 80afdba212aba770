//! The operator listing: the account's open messages (urgent/high first, then oldest) or its
//! recent resolutions (newest first), filtered and paged by the store, with the open counts on
//! request. The web inbox builds on it. `client_ref` and `state` are never included (§9.1,
//! §9.3): the store hands back summaries, not envelopes.

use crate::kernel::auth::Principal;
use crate::kernel::credentials::PrincipalId;
use crate::messages::listing::{ListCursor, ListFilter, ListPage, ListQuery, MAX_FILTER_CHARS, OpenCounts};
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
    // A page of nothing is no page: `limit=0` is refused, not read as 1; above the maximum the
    // page is the maximum (documented).
    if params.limit == Some(0) {
        return Err(HubError::validation(format!("query `limit` must be 1 to {MAX_LIST}")));
    }
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

//! The agent-facing message endpoints (§8.1, §8.2, §8.4, §8.8). Handlers only translate HTTP to
//! use-case calls; every rule lives in `ma2h-core`.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use ma2h_core::messages::{cancel, get, resolve, submit};
use ma2h_core::{Hub, HubError};
use ma2h_protocol::time;

use crate::error::ApiError;
use crate::extract::{Body, Caller, Params, Path};

pub async fn submit(State(hub): State<Hub>, Caller(who): Caller, Body(body): Body) -> Result<Response, ApiError> {
    // Boxed: the use case's future is ~9 KB, and every layer that moved it copied it all (4 % of
    // a submit's CPU was memmove); a box is moved as a pointer.
    let ack = Box::pin(submit::submit(&hub, &who, &body)).await?;
    let mut resp = (StatusCode::ACCEPTED, Json(&ack)).into_response();
    if let Ok(v) = HeaderValue::from_str(&ack.poll_url) {
        resp.headers_mut().insert(header::LOCATION, v);
    }
    Ok(resp)
}

pub async fn read(
    State(hub): State<Hub>,
    method: Method,
    Caller(who): Caller,
    Path(id): Path<String>,
    params: Params,
) -> Result<Response, ApiError> {
    let since = params
        .get("since")
        .map(|s| time::parse(s).ok_or_else(|| HubError::validation("query `since` must be an RFC 3339 date-time")))
        .transpose()?;
    // axum answers HEAD with the GET handler (the body dropped).
    let opts = get::ReadOptions { wait_seconds: params.u32("wait")?, since, head: method == Method::HEAD };
    Ok(match get::get(&hub, &who, &id, opts).await? {
        get::Read::Body(body) => ([(header::CONTENT_TYPE, "application/json")], body).into_response(),
        get::Read::NotModified => StatusCode::NOT_MODIFIED.into_response(),
    })
}

pub async fn cancel(State(hub): State<Hub>, Caller(who): Caller, Path(id): Path<String>) -> Result<Response, ApiError> {
    Ok(Json(cancel::cancel(&hub, &who, &id).await?).into_response())
}

/// `POST /v1/messages/{id}/resolve[?session=sess_…]` (§8.8).
pub async fn resolve(
    State(hub): State<Hub>,
    Caller(who): Caller,
    Path(id): Path<String>,
    params: Params,
    Body(body): Body,
) -> Result<Response, ApiError> {
    Ok(match resolve::resolve_outcome(&hub, &who, params.get("session"), &id, &body).await? {
        resolve::Outcome::Resolved(r) => Json(r).into_response(),
        // Issue 40: one approval short of its quorum — recorded, no terminal yet.
        resolve::Outcome::Pending(p) => (StatusCode::ACCEPTED, Json(pending_json(&id, &p))).into_response(),
    })
}

/// The 202 body of an approval short of its quorum (a Hub extension).
pub fn pending_json(id: &str, p: &ma2h_core::decisions::quorum::Pending) -> serde_json::Value {
    serde_json::json!({
        "id": id,
        "status": "open",
        "approval": { "policy": p.policy, "required": p.required, "approvals": p.approvals },
    })
}

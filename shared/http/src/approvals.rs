//! `GET /v1/operator/approval-policies`, `PUT|DELETE /v1/operator/approval-policies/{id}`
//! (issue 40, a Hub extension): the account's approval policies — a quorum of distinct
//! approvers and the humans who may never approve — managed by its operators; and
//! `GET|PUT|DELETE /v1/operator/away`: an operator away with a delegate; and
//! `GET|POST /v1/operator/grants`, `DELETE /v1/operator/grants/{id}`: standing grants; and
//! `GET /v1/operator/presence`: when each operator was last active (on-call ladders).

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use ma2h_core::decisions::manage::{self, PolicySpec};
use ma2h_core::decisions::{delegation, grants};
use ma2h_core::kernel::auth::Principal;
use ma2h_core::kernel::credentials::PrincipalId;
use ma2h_core::{Hub, HubError};
use serde_json::Value;

use crate::error::ApiError;
use crate::extract::{Body, Caller, Path};

fn operator(who: &Principal) -> Result<&str, HubError> {
    match who.id {
        PrincipalId::Operator(_) => Ok(who.account.as_str()),
        PrincipalId::Agent(_) => Err(HubError::NotAuthorized("approval policies need an operator credential".into())),
    }
}

pub async fn list(State(hub): State<Hub>, Caller(who): Caller) -> Result<Json<Value>, ApiError> {
    Ok(Json(manage::show(&hub, operator(&who)?).await?))
}

/// The body is the policy (`id` optional; when given it must be the path's).
pub async fn put(
    State(hub): State<Hub>,
    Caller(who): Caller,
    Path(id): Path<String>,
    Body(body): Body,
) -> Result<Json<Value>, ApiError> {
    let account = operator(&who)?;
    let mut v: Value = serde_json::from_slice(&body)
        .map_err(|e| HubError::validation(format!("`/`: the body is not valid JSON ({e})")))?;
    let obj = v.as_object_mut().ok_or_else(|| HubError::validation("`/`: the body must be a JSON object"))?;
    match obj.get("id") {
        Some(given) if given.as_str() != Some(id.as_str()) => {
            return Err(HubError::invalid_field("`/id`: must be the id in the path").into());
        }
        _ => {
            obj.insert("id".into(), Value::String(id));
        }
    }
    let spec: PolicySpec = serde_json::from_value(v).map_err(|e| HubError::validation(format!("`/`: {e}")))?;
    Ok(Json(manage::put(&hub, &who.actor().to_string(), account, spec).await?))
}

pub async fn delete(
    State(hub): State<Hub>,
    Caller(who): Caller,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    Ok(Json(manage::remove(&hub, &who.actor().to_string(), operator(&who)?, &id).await?))
}

/// `GET /v1/operator/away`: the account's operators away now, with their delegates (issue 40).
pub async fn away_list(State(hub): State<Hub>, Caller(who): Caller) -> Result<Json<Value>, ApiError> {
    operator(&who)?;
    Ok(Json(delegation::show(&hub, &who.account).await?))
}

/// `GET /v1/operator/presence`: the account's operators — seen, away, or on a route's ladder —
/// with their state (`online` within 15 minutes, `offline`, `away`, `unknown`) and last activity.
pub async fn presence(State(hub): State<Hub>, Caller(who): Caller) -> Result<Json<Value>, ApiError> {
    operator(&who)?;
    let team = ma2h_core::decisions::presence::team(&hub, &who.account).await?;
    Ok(Json(ma2h_core::decisions::presence::team_json(&team, hub.clock.now())))
}

/// `PUT /v1/operator/away` `{"delegate": "bob", "until": "2026-12-10T09:00:00Z"}`: the caller is
/// away until then; `bob` answers the asks that list them meanwhile.
pub async fn away_put(State(hub): State<Hub>, Caller(who): Caller, Body(body): Body) -> Result<Json<Value>, ApiError> {
    operator(&who)?;
    let v: Value = serde_json::from_slice(&body)
        .map_err(|e| HubError::validation(format!("`/`: the body is not valid JSON ({e})")))?;
    let delegate = v["delegate"].as_str().ok_or_else(|| HubError::invalid_field("`/delegate`: an operator id"))?;
    let until = v["until"]
        .as_str()
        .and_then(ma2h_protocol::time::parse)
        .ok_or_else(|| HubError::invalid_field("`/until`: an RFC 3339 time"))?;
    Ok(Json(delegation::set_mine(&hub, &who, delegate, until).await?))
}

/// `DELETE /v1/operator/away`: the caller is back.
pub async fn away_delete(State(hub): State<Hub>, Caller(who): Caller) -> Result<Json<Value>, ApiError> {
    Ok(Json(delegation::lift_mine(&hub, &who).await?))
}

/// `GET /v1/operator/grants`: the account's standing grants, newest first (issue 40).
pub async fn grants_list(State(hub): State<Hub>, Caller(who): Caller) -> Result<Json<Value>, ApiError> {
    let now = hub.clock.now();
    let list = grants::list(&hub, &who).await?;
    Ok(Json(serde_json::json!({ "grants": list.iter().map(|g| grants::grant_json(g, now)).collect::<Vec<_>>() })))
}

/// `POST /v1/operator/grants` `{"message": "msg_…", "scope": "60m" | "session" | "project" |
/// "agent"}`: make the caller's own answer of a keyed ask stand.
pub async fn grants_create(
    State(hub): State<Hub>,
    Caller(who): Caller,
    Body(body): Body,
) -> Result<Response, ApiError> {
    let v: Value = serde_json::from_slice(&body)
        .map_err(|e| HubError::validation(format!("`/`: the body is not valid JSON ({e})")))?;
    let message = v["message"].as_str().ok_or_else(|| HubError::invalid_field("`/message`: a message id"))?;
    let choice = grants::Choice::parse(v["scope"].as_str().unwrap_or(""))?
        .ok_or_else(|| HubError::invalid_field("`/scope`: <minutes>m, session, project or agent"))?;
    let g = grants::grant(&hub, &who, message, choice).await?;
    Ok((StatusCode::CREATED, Json(grants::grant_json(&g, hub.clock.now()))).into_response())
}

/// `DELETE /v1/operator/grants/{id}`: revoke at once (idempotent).
pub async fn grants_revoke(
    State(hub): State<Hub>,
    Caller(who): Caller,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    let g = grants::revoke(&hub, &who, &id).await?;
    Ok(Json(grants::grant_json(&g, hub.clock.now())))
}

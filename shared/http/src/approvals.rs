//! `GET /v1/operator/approval-policies`, `PUT|DELETE /v1/operator/approval-policies/{id}`
//! (issue 40, a Hub extension): the account's approval policies — a quorum of distinct
//! approvers and the humans who may never approve — managed by its operators; and
//! `GET|PUT|DELETE /v1/operator/away`: an operator away with a delegate.

use axum::Json;
use axum::extract::State;
use ma2h_core::decisions::delegation;
use ma2h_core::decisions::manage::{self, PolicySpec};
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
    Ok(Json(manage::put(&hub, account, spec).await?))
}

pub async fn delete(
    State(hub): State<Hub>,
    Caller(who): Caller,
    Path(id): Path<String>,
) -> Result<Json<Value>, ApiError> {
    Ok(Json(manage::remove(&hub, operator(&who)?, &id).await?))
}

/// `GET /v1/operator/away`: the account's operators away now, with their delegates (issue 40).
pub async fn away_list(State(hub): State<Hub>, Caller(who): Caller) -> Result<Json<Value>, ApiError> {
    operator(&who)?;
    Ok(Json(delegation::show(&hub, &who.account).await?))
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

//! §16 sessions over HTTP, and the operator's §16.4.1 stop of an agent. Handlers only translate;
//! the rules live in `ma2h-core`.

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use ma2h_core::sessions::lease;
use ma2h_core::sessions::model::StopRecord;
use ma2h_core::{Hub, HubError};
use ma2h_protocol::wire::{SessionEnvelope, SessionList, StopStatus};
use serde_json::Value;

use crate::error::ApiError;
use crate::extract::{Body, Caller, Path};

/// `POST /v1/sessions` (agent credential) → 201 `{session}` with `Location`.
pub async fn register(State(hub): State<Hub>, Caller(who): Caller, Body(body): Body) -> Result<Response, ApiError> {
    let input = if body.iter().all(u8::is_ascii_whitespace) {
        Value::Object(serde_json::Map::new())
    } else {
        serde_json::from_slice(&body)
            .map_err(|e| HubError::validation(format!("`/`: the body is not valid JSON ({e})")))?
    };
    let session = lease::register(&hub, &who, &input).await?;
    let location = format!("/v1/sessions/{}", session.id);
    let mut resp =
        (StatusCode::CREATED, Json(SessionEnvelope { session: session.view(hub.clock.now()) })).into_response();
    if let Ok(v) = HeaderValue::from_str(&location) {
        resp.headers_mut().insert(header::LOCATION, v);
    }
    Ok(resp)
}

/// `GET /v1/sessions` → `{sessions, scope}` (§16.4: the scope actually applied).
pub async fn list(State(hub): State<Hub>, Caller(who): Caller) -> Result<Json<SessionList>, ApiError> {
    let (list, scope) = lease::list(&hub, &who).await?;
    let now = hub.clock.now();
    Ok(Json(SessionList { sessions: list.iter().map(|s| s.view(now)).collect(), scope: Some(scope) }))
}

/// `GET /v1/sessions/{id}` → `{session}`.
pub async fn read(
    State(hub): State<Hub>,
    Caller(who): Caller,
    Path(id): Path<String>,
) -> Result<Json<SessionEnvelope>, ApiError> {
    let s = lease::read(&hub, &who, &id).await?;
    Ok(Json(SessionEnvelope { session: s.view(hub.clock.now()) }))
}

/// `DELETE /v1/sessions/{id}` → 200 `{session}` (idempotent; an operator's close is the
/// kill-switch and stops the principal).
pub async fn close(
    State(hub): State<Hub>,
    Caller(who): Caller,
    Path(id): Path<String>,
) -> Result<Json<SessionEnvelope>, ApiError> {
    let s = lease::close(&hub, &who, &id).await?;
    Ok(Json(SessionEnvelope { session: s.view(hub.clock.now()) }))
}

/// `/v1/agents/{agent_id}/…`: the agent id may itself contain `/` (raw or `%2F`), so the
/// resource is the last segment.
fn split_agent(rest: &str, resource: &str) -> Option<String> {
    rest.strip_suffix(resource).and_then(|a| a.strip_suffix('/')).filter(|a| !a.is_empty()).map(str::to_owned)
}

fn stop_body(agent: &str, stop: Option<&StopRecord>) -> StopStatus {
    StopRecord::status(agent, stop)
}

/// `GET /v1/agents/{agent_id}/presence` (§15.3) or `/stop` (§16.4.1, operator).
pub async fn agent_get(State(hub): State<Hub>, caller: Caller, Path(rest): Path<String>) -> Result<Response, ApiError> {
    if let Some(agent) = split_agent(&rest, "stop") {
        let stop = lease::stop_status(&hub, &caller.0, &agent).await?;
        return Ok(Json(stop_body(&agent, stop.as_ref())).into_response());
    }
    crate::mailbox::presence(State(hub), caller, Path(rest)).await.map(IntoResponse::into_response)
}

/// `POST /v1/agents/{agent_id}/stop`: the account's human stops the agent (§16.4.1).
pub async fn agent_post(
    State(hub): State<Hub>,
    Caller(who): Caller,
    Path(rest): Path<String>,
) -> Result<Json<StopStatus>, ApiError> {
    let agent = split_agent(&rest, "stop").ok_or(HubError::NoSuchEndpoint)?;
    let stop = lease::stop_agent(&hub, &who, &agent).await?;
    Ok(Json(stop_body(&agent, Some(&stop))))
}

/// `DELETE /v1/agents/{agent_id}/stop`: the account's human lifts the stop (idempotent).
pub async fn agent_delete(
    State(hub): State<Hub>,
    Caller(who): Caller,
    Path(rest): Path<String>,
) -> Result<Json<StopStatus>, ApiError> {
    let agent = split_agent(&rest, "stop").ok_or(HubError::NoSuchEndpoint)?;
    lease::lift_stop(&hub, &who, &agent).await?;
    Ok(Json(stop_body(&agent, None)))
}

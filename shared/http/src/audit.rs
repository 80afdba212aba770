//! `GET /v1/operator/audit` (issue 42): the account's audit ledger as JSON Lines — entries in
//! their shard chains, the signed checkpoints, and an export seal signed now — what
//! `ma2h audit verify` checks (docs/design/audit.md). Operators only.

use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use ma2h_core::Hub;

use crate::error::ApiError;
use crate::extract::{Caller, Params};

pub async fn export(State(hub): State<Hub>, Caller(who): Caller, params: Params) -> Result<Response, ApiError> {
    let lines = ma2h_core::audit::export::export_for(&hub, &who, params.get("since"), params.get("until")).await?;
    let mut body = lines.join("\n");
    body.push('\n');
    Ok(([(header::CONTENT_TYPE, "application/jsonl"), (header::CACHE_CONTROL, "no-store")], body).into_response())
}

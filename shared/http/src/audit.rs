//! `GET /v1/operator/audit` (issue 42): the account's audit ledger as JSON Lines — entries in
//! their shard chains, the signed checkpoints, and an export seal signed now — what
//! `ma2h audit verify` checks (docs/design/audit.md). Operators only. Paged: a page holds at most
//! `?limit=` entries (10,000) and ends at a checkpoint; `Link: <…?after=N>; rel="next"` names the
//! next page, which starts from that checkpoint — so each page verifies on its own.

use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use ma2h_core::Hub;

use crate::error::ApiError;
use crate::extract::{Caller, Params};

pub async fn export(State(hub): State<Hub>, Caller(who): Caller, params: Params) -> Result<Response, ApiError> {
    let page = ma2h_core::audit::export::export_for(&hub, &who, &params.0).await?;
    let mut body = page.lines.join("\n");
    body.push('\n');
    let mut response =
        ([(header::CONTENT_TYPE, "application/jsonl"), (header::CACHE_CONTROL, "no-store")], body).into_response();
    if let Some(next) = page.next {
        let mut query = format!("after={next}");
        for name in ["until", "limit"] {
            if let Some(v) = params.get(name) {
                query.push_str(&format!("&{name}={}", urlencoding(v)));
            }
        }
        let link = format!("</v1/operator/audit?{query}>; rel=\"next\"");
        if let Ok(v) = HeaderValue::from_str(&link) {
            response.headers_mut().insert(header::LINK, v);
        }
    }
    Ok(response)
}

/// Percent-encode a query value (RFC 3339 times carry `:` and `+`).
fn urlencoding(v: &str) -> String {
    v.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => (b as char).to_string(),
            _ => format!("%{b:02X}"),
        })
        .collect()
}

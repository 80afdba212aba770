//! # ma2h-http
//!
//! The Hub's ONE axum [`Router`]: the local server serves it directly and every Lambda hands
//! its API Gateway events to it, so there is exactly one HTTP behaviour to test.

mod approvals;
mod audit;
mod discovery;
pub mod error;
pub mod extract;
mod integrations;
mod inter_agent;
mod mailbox;
mod messages;
pub mod openapi;
mod operator;
mod sessions;
mod stream;
pub mod trace;
pub mod ui;

use std::time::Instant;

use axum::Router;
use axum::extract::{Request, State};
use axum::http::StatusCode;
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post, put};
use ma2h_core::Hub;

pub use discovery::capability_document;

/// Build the Router over a fully wired [`Hub`].
pub fn router(hub: Hub) -> Router {
    Router::new()
        .route("/.well-known/ma2h", get(discovery::capability))
        .route("/healthz", get(|| async { "ok" }))
        .route("/openapi.json", get(openapi::serve))
        .route("/v1/messages", post(messages::submit))
        .route("/v1/messages/{id}", get(messages::read))
        .route("/v1/messages/{id}/cancel", post(messages::cancel))
        .route("/v1/messages/{id}/resolve", post(messages::resolve))
        .route("/v1/messages/{id}/ack", post(mailbox::ack_response))
        .route("/v1/operator/messages", get(operator::list))
        .route("/v1/operator/directives", post(mailbox::send))
        .route("/v1/operator/directives/{id}", get(mailbox::track))
        // A drain consumes (§8.7): a HEAD, which axum would answer with the GET handler and no
        // body, would consume entries nobody reads.
        .route("/v1/inbox", get(mailbox::drain).head(method_not_allowed))
        .route("/v1/inbox/ack", post(mailbox::ack))
        .route("/v1/inbox/stream", get(stream::open).head(method_not_allowed))
        .route("/v1/operator/inter-agent", get(inter_agent::read).patch(inter_agent::update))
        .route("/v1/operator/approval-policies", get(approvals::list))
        .route("/v1/operator/approval-policies/{id}", put(approvals::put).delete(approvals::delete))
        .route("/v1/operator/away", get(approvals::away_list).put(approvals::away_put).delete(approvals::away_delete))
        .route("/v1/operator/grants", get(approvals::grants_list).post(approvals::grants_create))
        .route("/v1/operator/grants/{id}", axum::routing::delete(approvals::grants_revoke))
        .route("/v1/operator/presence", get(approvals::presence))
        .route("/v1/operator/audit", get(audit::export))
        .route("/v1/agents/{*rest}", get(sessions::agent_get).post(sessions::agent_post).delete(sessions::agent_delete))
        .route("/v1/sessions", post(sessions::register).get(sessions::list))
        .route("/v1/sessions/{id}", get(sessions::read).delete(sessions::close))
        .route("/v1/integrations/slack/interactions", post(integrations::slack_interactions))
        .merge(ui::routes())
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(middleware::from_fn_with_state(Tracing(hub.settings.telemetry.otlp_endpoint.is_some()), access_log))
        .with_state(hub)
}

async fn not_found() -> Response {
    error::envelope(StatusCode::NOT_FOUND, "not_found", "no such endpoint")
}

async fn method_not_allowed() -> Response {
    error::envelope(StatusCode::METHOD_NOT_ALLOWED, "method_not_allowed", "method not allowed on this endpoint")
}

/// The request id: the caller's `x-request-id` when it is a sane token (so a client or proxy
/// can correlate), else the transport's (API Gateway's `requestId`), else a fresh one. Answered
/// in `x-request-id` and carried by every log line of the request.
fn request_id(req: &Request) -> String {
    let sane = |v: &str| {
        !v.is_empty() && v.len() <= 128 && v.bytes().all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b))
    };
    req.headers()
        .get(REQUEST_ID)
        .and_then(|v| v.to_str().ok())
        .filter(|v| sane(v))
        .map(str::to_owned)
        .or_else(|| req.extensions().get::<extract::TransportRequestId>().map(|r| r.0.clone()).filter(|v| sane(v)))
        .unwrap_or_else(|| format!("req_{}", ulid::Ulid::generate()))
}

const REQUEST_ID: &str = "x-request-id";

fn route_name(route: Option<&axum::extract::MatchedPath>) -> &str {
    route.map_or("unmatched", axum::extract::MatchedPath::as_str)
}

/// Whether spans are exported (issue 43): only then is the request's trace context worked out.
#[derive(Clone, Copy)]
struct Tracing(bool);

/// One line per request: method, path, status, latency, request id. Never headers or bodies (§9.6).
async fn access_log(State(Tracing(traced)): State<Tracing>, req: Request, next: Next) -> impl IntoResponse {
    let method = req.method().clone();
    // (clones of shared buffers, not copies: this runs on every request)
    let uri = req.uri().clone();
    // the route template (never the path: ids stay out of metric labels, §9.6)
    let route = req.extensions().get::<axum::extract::MatchedPath>().cloned();
    let id = request_id(&req);
    let start = Instant::now();
    let span = if traced {
        // the OpenTelemetry parent is read from the current context as the span is created
        let traceparent = req.headers().get("traceparent").and_then(|v| v.to_str().ok());
        let _parent = trace::parent(traceparent, &id).attach();
        tracing::info_span!("request", request_id = %id, http.method = %method, http.route = route_name(route.as_ref()))
    } else {
        tracing::info_span!("request", request_id = %id)
    };
    let mut resp = tracing::Instrument::instrument(next.run(req), span.clone()).await;
    let route = route_name(route.as_ref());
    ma2h_core::kernel::metrics::http(route, method.as_str(), resp.status().as_u16(), start.elapsed().as_secs_f64());
    span.in_scope(|| {
        tracing::info!(
            %method,
            path = uri.path(),
            status = resp.status().as_u16(),
            latency_ms = start.elapsed().as_secs_f64() * 1000.0,
            "request"
        )
    });
    // the id is a sane token (see `request_id`): its bytes become the header without a copy
    if let Ok(v) = axum::http::HeaderValue::from_maybe_shared(axum::body::Bytes::from(id)) {
        resp.headers_mut().insert(REQUEST_ID, v);
    }
    resp
}

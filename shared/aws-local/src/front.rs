//! The HTTP front: what API Gateway's HTTP API does for the template's routes — pick the route,
//! build the payload-2.0 event, invoke the route's function within the integration timeout
//! (30 s, or the function's own if shorter), and answer with the function's response. No route
//! is 404, a function error 500, a timeout 503, each with API Gateway's `{"message": …}` body.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::body::Body;
use axum::extract::{ConnectInfo, Request, State};
use axum::http::{HeaderValue, Response, StatusCode};

use crate::apigw::{self, Caller};
use crate::routes::Routes;
use crate::runtime::{InvokeError, Invoked, Invoker};
use crate::template::Template;

/// API Gateway's payload limit.
const MAX_BODY: usize = 10 * 1024 * 1024;
/// API Gateway's longest integration timeout.
const INTEGRATION_TIMEOUT: Duration = Duration::from_secs(30);

/// The front's state: the route table, each function's timeout, the Invoke API.
#[derive(Clone)]
pub struct Front {
    routes: Arc<Routes>,
    timeouts: Arc<BTreeMap<String, Duration>>,
    invoker: Invoker,
}

impl Front {
    pub fn new(template: &Template, invoker: Invoker) -> Self {
        let timeouts =
            template.functions.iter().map(|f| (f.binary.clone(), f.timeout.min(INTEGRATION_TIMEOUT))).collect();
        Self { routes: Arc::new(Routes::new(template.routes.clone())), timeouts: Arc::new(timeouts), invoker }
    }

    /// Serve on `listener` until the process ends.
    pub async fn serve(self, listener: tokio::net::TcpListener) -> std::io::Result<()> {
        let app = axum::Router::new().fallback(handle).with_state(self);
        axum::serve(listener, app.into_make_service_with_connect_info::<SocketAddr>()).await
    }
}

async fn handle(
    State(front): State<Front>,
    ConnectInfo(peer): ConnectInfo<SocketAddr>,
    req: Request,
) -> Response<Body> {
    let request_id = ulid::Ulid::generate().to_string();
    let mut resp = answer(&front, peer, req, &request_id).await;
    // API Gateway names its request id in every answer
    if let Ok(v) = HeaderValue::try_from(&request_id) {
        resp.headers_mut().insert("apigw-requestid", v);
    }
    resp
}

async fn answer(front: &Front, peer: SocketAddr, req: Request, request_id: &str) -> Response<Body> {
    let (parts, body) = req.into_parts();
    let Some(matched) = front.routes.select(parts.method.as_str(), parts.uri.path()) else {
        return apigw::gateway_error(StatusCode::NOT_FOUND, "Not Found");
    };
    let Ok(body) = axum::body::to_bytes(body, MAX_BODY).await else {
        return apigw::gateway_error(StatusCode::PAYLOAD_TOO_LARGE, "Request Entity Too Large");
    };
    let caller = Caller { source_ip: peer.ip(), request_id: request_id.to_owned(), now: chrono::Utc::now() };
    let event = apigw::request_event(&parts, &body, &matched, &caller);
    let function = &matched.route.function;
    let timeout = front.timeouts.get(function).copied().unwrap_or(INTEGRATION_TIMEOUT);
    match front.invoker.invoke(function, &event, timeout).await {
        Ok(Invoked::Ok(bytes)) => apigw::http_response(&bytes).unwrap_or_else(|e| {
            tracing::error!(%function, error = %e, "bad function response");
            apigw::gateway_error(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error")
        }),
        Ok(Invoked::FunctionError(e)) => {
            tracing::error!(%function, error = %e, "the function failed");
            apigw::gateway_error(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error")
        }
        Err(e @ InvokeError::Timeout { .. }) => {
            tracing::error!(%function, error = %e, "integration timeout");
            apigw::gateway_error(StatusCode::SERVICE_UNAVAILABLE, "Service Unavailable")
        }
        Err(e) => {
            tracing::error!(%function, error = %e, "invoke failed");
            apigw::gateway_error(StatusCode::INTERNAL_SERVER_ERROR, "Internal Server Error")
        }
    }
}

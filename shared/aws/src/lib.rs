//! # ma2h-aws
//!
//! What every Lambda function shares: the AWS settings, the adapters built once per cold start
//! (DynamoDB store, SQS push queue, polling change feed), and the non-HTTP handlers (`deliver`
//! for SQS, `sweep` for the schedule). The HTTP functions hand API Gateway events straight to
//! the one shared Router.

pub mod emf;
pub mod handlers;
pub mod hub_secret;
mod wiring;

/// Export the finished trace spans now (issue 43; a no-op unless `MA2H_OTLP_ENDPOINT` is set).
pub use ma2h_telemetry::flush as flush_traces;
pub use wiring::{AwsSettings, ConfigError, Deployment, assemble, build, build_admin, init_tracing, sdk_loader};

/// The boxed error type Lambda runtimes accept.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// The one shared Router over this deployment's Hub, told each caller's address (API Gateway's
/// `sourceIp`) so failed sign-ins are throttled per client as on the local server.
pub fn http_app(dep: &Deployment) -> axum::Router {
    // Request-time replies (a Slack interaction's ephemeral answer) go out through the same
    // §9.4-guarded sender as pushes; without one the reply is only logged.
    let hub = match ma2h_delivery_http::EgressPolicy::from_settings(&dep.hub.settings)
        .ok()
        .and_then(|p| ma2h_delivery_http::HttpPushSender::new(p).ok())
    {
        Some(sender) => dep.hub.clone().with_outbound(std::sync::Arc::new(sender)),
        None => dep.hub.clone(),
    };
    ma2h_http::router(hub).layer(axum::middleware::map_request(client_ip))
}

async fn client_ip(mut req: axum::extract::Request) -> axum::extract::Request {
    use lambda_http::request::RequestContext;
    let (ip, request_id) = match req.extensions().get::<RequestContext>() {
        Some(RequestContext::ApiGatewayV2(ctx)) => {
            (ctx.http.source_ip.as_deref().and_then(|ip| ip.parse().ok()), ctx.request_id.clone())
        }
        _ => (None, None),
    };
    if let Some(id) = request_id {
        req.extensions_mut().insert(ma2h_http::extract::TransportRequestId(id));
    }
    if let Some(ip) = ip {
        req.extensions_mut().insert(ma2h_http::extract::ClientIp(ip));
    }
    req
}

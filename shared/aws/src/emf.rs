//! Metrics on Lambda: the Hub's metrics (ma2h_core::kernel::metrics) as CloudWatch Embedded Metric
//! Format lines on stdout, flushed after every invocation — CloudWatch turns them into metrics
//! in the `ma2h` namespace, with the function's name as a dimension, at no API cost.

use metrics_cloudwatch_embedded::Collector;

/// The CloudWatch namespace of the Hub's metrics.
pub const NAMESPACE: &str = "ma2h";

/// Install the process-wide EMF collector once (later calls return the same one).
pub fn collector() -> Result<&'static Collector, crate::Error> {
    static COLLECTOR: std::sync::OnceLock<&'static Collector> = std::sync::OnceLock::new();
    if let Some(c) = COLLECTOR.get() {
        return Ok(c);
    }
    let function = std::env::var("AWS_LAMBDA_FUNCTION_NAME").unwrap_or_else(|_| "local".into());
    let c = metrics_cloudwatch_embedded::Builder::new()
        .cloudwatch_namespace(NAMESPACE)
        .with_dimension("function", function)
        .init()
        .map_err(|e| format!("metrics: {e}"))?;
    ma2h_core::kernel::metrics::describe();
    Ok(*COLLECTOR.get_or_init(|| c))
}

/// `lambda_http::run` for the shared Router, with the metrics flushed after each invocation —
/// and the trace spans (issue 43), when they are exported.
pub async fn run_http(app: axum::Router) -> Result<(), crate::Error> {
    metrics_cloudwatch_embedded::lambda::service::run_http(collector()?, flushing_traces(app)).await
}

/// `app`, exporting each invocation's spans before it answers (issue 43): after the response is
/// built (its `request` span closed), before Lambda freezes the sandbox.
pub fn flushing_traces(app: axum::Router) -> axum::Router {
    app.layer(axum::middleware::from_fn(flush_traces))
}

async fn flush_traces(req: axum::extract::Request, next: axum::middleware::Next) -> axum::response::Response {
    let response = next.run(req).await;
    ma2h_telemetry::flush().await;
    response
}

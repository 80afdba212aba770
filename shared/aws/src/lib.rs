//! # ma2h-aws
//!
//! What every Lambda function shares: the AWS settings, the adapters built once per cold start
//! (DynamoDB store, SQS push queue, polling change feed), and the non-HTTP handlers (`deliver`
//! for SQS, `sweep` for the schedule). The HTTP functions hand API Gateway events straight to
//! the one shared Router.

pub mod handlers;
mod wiring;

pub use wiring::{AwsSettings, Deployment, assemble, build, build_admin, init_tracing};

/// The boxed error type Lambda runtimes accept.
pub type Error = Box<dyn std::error::Error + Send + Sync>;

/// The one shared Router over this deployment's Hub.
pub fn http_app(dep: &Deployment) -> axum::Router {
    ma2h_http::router(dep.hub.clone())
}

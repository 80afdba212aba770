//! Shared by the Lambda test binaries: the moto connection and the test settings, API Gateway v2
//! and SQS events built from the recorded fixtures, and one call through the shared Router as the
//! HTTP functions run it.

use aws_lambda_events::sqs::SqsEvent;
use axum::http::StatusCode;
use http_body_util::BodyExt;
use ma2h_aws::Deployment;
use ma2h_core::settings::{Mode, Secret, Settings};
use serde_json::{Value, json};
use tower::ServiceExt;

pub use ma2h_test_support::{moto_config, unique};

/// Dev mode with fixed test keys and loopback egress; everything else the production defaults
/// (600 requests/min, inbox depth 1000, …).
pub fn test_settings() -> Settings {
    Settings {
        mode: Mode::Dev,
        public_url: "https://api.test".into(),
        master_key: Some(Secret(ma2h_test_support::MASTER_KEY_B64.into())),
        ed25519_seed: Some(Secret(ma2h_test_support::ED25519_SEED_B64.into())),
        dev_egress_allow: vec!["127.0.0.0/8".into()],
        ..Settings::default()
    }
}

const APIGW: &str = include_str!("../fixtures/apigw-v2-request.json");

/// An API Gateway v2 event from the fixture, for `method path` with `key` and `body`.
pub fn event(method: &str, path_and_query: &str, key: &str, body: Option<&Value>) -> lambda_http::Request {
    event_from(None, method, path_and_query, key, body)
}

/// [`event`] from the client address `source_ip` (the fixture's own when `None`).
pub fn event_from(
    source_ip: Option<&str>,
    method: &str,
    path_and_query: &str,
    key: &str,
    body: Option<&Value>,
) -> lambda_http::Request {
    let mut ev: Value = serde_json::from_str(APIGW).unwrap();
    if let Some(ip) = source_ip {
        ev["requestContext"]["http"]["sourceIp"] = json!(ip);
    }
    let (path, query) = path_and_query.split_once('?').unwrap_or((path_and_query, ""));
    ev["rawPath"] = json!(path);
    ev["rawQueryString"] = json!(query);
    ev["requestContext"]["http"]["method"] = json!(method);
    ev["requestContext"]["http"]["path"] = json!(path);
    ev["headers"]["authorization"] = json!(format!("Bearer {key}"));
    ev["body"] = body.map_or(Value::Null, |b| json!(b.to_string()));
    lambda_http::request::from_str(&ev.to_string()).expect("a valid API Gateway v2 event")
}

/// An API Gateway v2 event with a raw body and the given headers (no credential): what Slack's
/// interactivity requests look like.
pub fn raw_event(method: &str, path_and_query: &str, headers: &[(&str, &str)], body: &str) -> lambda_http::Request {
    let mut ev: Value = serde_json::from_str(APIGW).unwrap();
    let (path, query) = path_and_query.split_once('?').unwrap_or((path_and_query, ""));
    ev["rawPath"] = json!(path);
    ev["rawQueryString"] = json!(query);
    ev["requestContext"]["http"]["method"] = json!(method);
    ev["requestContext"]["http"]["path"] = json!(path);
    ev["headers"].as_object_mut().unwrap().remove("authorization");
    for (k, v) in headers {
        ev["headers"][*k] = json!(v);
    }
    ev["body"] = json!(body);
    lambda_http::request::from_str(&ev.to_string()).expect("a valid API Gateway v2 event")
}

/// Serve `req` with the deployment's Router; the body parsed as JSON (`null` if it is not).
pub async fn call_app(dep: &Deployment, req: lambda_http::Request) -> (StatusCode, Value) {
    let resp = ma2h_aws::http_app(dep).oneshot(req).await.unwrap();
    let status = resp.status();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

const SQS: &str = include_str!("../fixtures/sqs-event.json");

/// The `SqsEvent` Lambda's event source mapping would hand `deliver` for these received messages:
/// the fixture's record shape with the real ids, receipt handles and bodies.
pub fn sqs_event(messages: &[aws_sdk_sqs::types::Message]) -> SqsEvent {
    let mut ev: Value = serde_json::from_str(SQS).unwrap();
    let template = ev["Records"][0].clone();
    ev["Records"] = Value::Array(
        messages
            .iter()
            .map(|m| {
                let mut r = template.clone();
                r["messageId"] = json!(m.message_id());
                r["receiptHandle"] = json!(m.receipt_handle());
                r["body"] = json!(m.body());
                r
            })
            .collect(),
    );
    serde_json::from_value(ev).unwrap()
}

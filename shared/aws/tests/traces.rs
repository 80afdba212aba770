//! Issue 43 on Lambda: a function's spans are exported at the end of each invocation, before
//! the sandbox could be frozen — not whenever the batch timer next fires. The batch delay is
//! set to ten minutes here, so a span the stand-in OTLP collector holds as soon as the call
//! returns was sent by the per-invocation flush (`emf::flushing_traces`, what `run_http` wraps
//! every HTTP function's Router in).

use std::sync::{Arc, Mutex};

use axum::body::Bytes;
use axum::extract::State;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use prost::Message as _;
use tower::ServiceExt as _;

#[derive(Clone, Default)]
struct Collector(Arc<Mutex<Vec<String>>>);

async fn traces(State(c): State<Collector>, body: Bytes) -> axum::http::StatusCode {
    let request = ExportTraceServiceRequest::decode(body.as_ref()).expect("OTLP protobuf");
    for span in request.resource_spans.iter().flat_map(|r| &r.scope_spans).flat_map(|s| &s.spans) {
        c.0.lock().unwrap().push(span.name.clone());
    }
    axum::http::StatusCode::OK
}

async fn handler() -> &'static str {
    // (the exporter takes the Hub's own targets: `ma2h…`)
    let span = tracing::info_span!(target: "ma2h_aws::test", "ma2h_test_invocation");
    let _entered = span.enter();
    tracing::info!(target: "ma2h_aws::test", "inside the invocation");
    "ok"
}

/// The check runs in a child process of this test binary, started with the ten-minute batch
/// delay in its environment (the exporter reads `OTEL_BSP_*` when it is built).
#[test]
fn each_invocation_exports_its_spans_before_it_answers() {
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--exact", "invocation_in_a_child_process", "--nocapture", "--include-ignored"])
        .env("OTEL_BSP_SCHEDULE_DELAY", "600000")
        .output()
        .unwrap();
    let log = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success() && log.contains("1 passed"), "{log}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[ignore = "run by each_invocation_exports_its_spans_before_it_answers, with its environment"]
async fn invocation_in_a_child_process() {
    assert_eq!(std::env::var("OTEL_BSP_SCHEDULE_DELAY").as_deref(), Ok("600000"));
    let collector = Collector::default();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let endpoint = format!("http://{}", listener.local_addr().unwrap());
    let app = axum::Router::new().route("/v1/traces", axum::routing::post(traces)).with_state(collector.clone());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });

    let settings = ma2h_core::kernel::settings::TelemetrySettings {
        otlp_endpoint: Some(endpoint),
        service_name: "ma2h-test".into(),
    };
    ma2h_telemetry::init(ma2h_telemetry::LogFormat::Lambda, &settings).unwrap();
    assert!(ma2h_telemetry::exporting());

    let function = ma2h_aws::emf::flushing_traces(axum::Router::new().route("/x", axum::routing::get(handler)));
    for round in 1..=2 {
        let request = axum::http::Request::get("/x").body(axum::body::Body::empty()).unwrap();
        let response = function.clone().oneshot(request).await.unwrap();
        assert_eq!(response.status(), 200);
        let seen = collector.0.lock().unwrap().iter().filter(|n| *n == "ma2h_test_invocation").count();
        assert_eq!(seen, round, "invocation {round}'s span was exported before it answered");
    }
}

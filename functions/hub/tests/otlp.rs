//! Issue 43: OpenTelemetry trace export end to end. The real binary, with `MA2H_OTLP_ENDPOINT`
//! pointing at a stand-in OTLP/HTTP collector written here (it decodes each protobuf
//! `ExportTraceServiceRequest` with the OpenTelemetry project's own message types), exports a
//! `request` span per request — a child of the caller's `traceparent`, or under the trace id its
//! request id derives — with `store` spans inside, `push.attempt` and `channel.send` spans, and
//! never the message's `state`.

mod support;

use std::io::{Read as _, Write as _};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use opentelemetry_proto::tonic::trace::v1::Span;
use prost::Message as _;
use serde_json::json;
use support::*;

#[derive(Clone, Default)]
struct Collector {
    spans: Arc<Mutex<Vec<(String, Span)>>>,
    raw: Arc<Mutex<Vec<u8>>>,
}

async fn traces(State(c): State<Collector>, body: Bytes) -> axum::http::StatusCode {
    let Ok(request) = ExportTraceServiceRequest::decode(body.as_ref()) else {
        return axum::http::StatusCode::BAD_REQUEST;
    };
    c.raw.lock().unwrap().extend_from_slice(&body);
    for rs in request.resource_spans {
        let service = rs
            .resource
            .iter()
            .flat_map(|r| &r.attributes)
            .find(|kv| kv.key == "service.name")
            .and_then(|kv| kv.value.as_ref()?.value.as_ref())
            .map(|v| match v {
                AnyValue::StringValue(s) => s.clone(),
                other => format!("{other:?}"),
            })
            .unwrap_or_default();
        for ss in rs.scope_spans {
            for span in ss.spans {
                c.spans.lock().unwrap().push((service.clone(), span));
            }
        }
    }
    axum::http::StatusCode::OK
}

async fn ok() -> axum::http::StatusCode {
    axum::http::StatusCode::OK
}

/// The collector on `/v1/traces`, and a receiver (200 to anything) for pushes and webhook events.
fn start_collector() -> (Collector, String) {
    let collector = Collector::default();
    let (tx, rx) = std::sync::mpsc::channel();
    let state = collector.clone();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            let app = axum::Router::new()
                .route("/v1/traces", axum::routing::post(traces))
                .route("/hook/{*rest}", axum::routing::post(ok))
                .with_state(state);
            axum::serve(listener, app).await.unwrap();
        });
    });
    (collector, format!("http://{}", rx.recv().unwrap()))
}

impl Collector {
    /// Wait (up to 20 s) for a span matching `pred`.
    fn wait_for(&self, what: &str, pred: impl Fn(&Span) -> bool) -> Span {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if let Some((_, s)) = self.spans.lock().unwrap().iter().find(|(_, s)| pred(s)) {
                return s.clone();
            }
            let names: Vec<String> = self.spans.lock().unwrap().iter().map(|(_, s)| s.name.clone()).collect();
            assert!(Instant::now() < deadline, "no {what} span after 20 s; got {names:?}");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

fn attr<'a>(span: &'a Span, key: &str) -> Option<&'a AnyValue> {
    span.attributes.iter().find(|kv| kv.key == key).and_then(|kv| kv.value.as_ref()?.value.as_ref())
}

fn string_attr(span: &Span, key: &str) -> Option<String> {
    match attr(span, key)? {
        AnyValue::StringValue(s) => Some(s.clone()),
        _ => None,
    }
}

/// A request with extra headers; the status and the body.
fn send(addr: &str, method: &str, path: &str, headers: &[(&str, &str)], body: &str) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    let extra: String = headers.iter().map(|(k, v)| format!("{k}: {v}\r\n")).collect();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{extra}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let status = raw.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, raw.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default())
}

#[test]
fn request_store_push_and_channel_spans_reach_an_otlp_collector_without_state() {
    let (collector, base) = start_collector();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();
    let agent = admin_json(path, &["create-agent", "--account", "acme", "--agent", "bot"]);
    let op = admin_json(path, &["create-operator", "--account", "acme", "--human", "alice"]);
    admin_json(path, &["bind-callback", "--account", "acme", "--agent", "bot", "--host", "127.0.0.1"]);
    admin_json(path, &["put-secret", "--account", "acme", "--agent", "bot", "--name", "cb", "--value", "cb-secret-1"]);
    let out = base_command(path)
        .args(["admin", "channels", "add-webhook", "--account", "acme", "--id", "pager", "--url"])
        .arg(format!("{base}/hook/events"))
        .args(["--generate-secret", "--json"])
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    admin_json(path, &["channels", "add-route", "--account", "acme", "--id", "all", "--to", "pager"]);
    let hub = Hub::start_with(
        path,
        &[
            ("MA2H_OTLP_ENDPOINT", base.as_str()),
            ("MA2H_OTLP_SERVICE_NAME", "hub-under-test"),
            ("OTEL_BSP_SCHEDULE_DELAY", "100"),
            ("MA2H_DEV_EGRESS_ALLOW", "127.0.0.0/8"),
        ],
    );
    let agent_key = agent["api_key"].as_str().unwrap();
    let op_key = op["api_key"].as_str().unwrap();

    // 1. the caller's W3C traceparent: the request span is its child, store spans inside it
    let trace = "4bf92f3577b34da6a3ce929d0e0e4736";
    let mut ask = ask_envelope("otel-1");
    ask["state"] = json!({"sealed": "STATE-NEVER-EXPORTED"});
    ask["request"]["callback"] = json!({"mode": "push", "url": format!("{base}/hook/push"),
        "auth": {"scheme": "hmac", "secret_ref": "cb"}});
    let parent = format!("00-{trace}-00f067aa0ba902b7-01");
    let headers = [("Authorization", format!("Bearer {agent_key}")), ("traceparent", parent)];
    let headers: Vec<(&str, &str)> = headers.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let (status, ack) = send(&hub.addr, "POST", "/v1/messages", &headers, &ask.to_string());
    assert_eq!(status, 202, "{ack}");
    let ack: serde_json::Value = serde_json::from_str(ack.trim()).unwrap_or_default();
    let id = ack["id"].as_str().map(str::to_owned).unwrap_or_else(|| panic!("an id in {ack}"));
    let trace_bytes = hex::decode(trace).unwrap();
    let request = collector.wait_for("request (traceparent)", |s| s.name == "request" && s.trace_id == trace_bytes);
    assert_eq!(request.parent_span_id, hex::decode("00f067aa0ba902b7").unwrap(), "a child of the caller's span");
    assert_eq!(string_attr(&request, "http.route").as_deref(), Some("/v1/messages"));
    let store = collector.wait_for("store", |s| s.name == "store" && s.trace_id == trace_bytes);
    assert_eq!(store.parent_span_id, request.span_id, "the store call is inside the request");
    assert_eq!(string_attr(&store, "db.system").as_deref(), Some("sqlite"));

    // 2. no traceparent: the trace id derives from the request id
    let rid = [("x-request-id", "otel-probe-1")];
    assert_eq!(send(&hub.addr, "GET", "/.well-known/ma2h", &rid, "").0, 200);
    let derived = hex::decode(ma2h_http::trace::trace_id_of("otel-probe-1")).unwrap();
    let probe = collector.wait_for("request (derived)", |s| s.name == "request" && s.trace_id == derived);
    assert_eq!(string_attr(&probe, "request_id").as_deref(), Some("otel-probe-1"));

    // 3. the route's webhook announces the ask (channel.send), then the answer is pushed
    let channel = collector.wait_for("channel.send", |s| s.name == "channel.send");
    assert_eq!(string_attr(&channel, "kind").as_deref(), Some("webhook"));
    assert_eq!(string_attr(&channel, "message_id").as_deref(), Some(id.as_str()));
    let (status, body) =
        post(&hub, &format!("/v1/messages/{id}/resolve"), op_key, &json!({"resolution": "answered", "value": "ship"}));
    assert_eq!(status, 200, "{body}");
    let push = collector.wait_for("push.attempt", |s| s.name == "push.attempt");
    assert_eq!(string_attr(&push, "message_id").as_deref(), Some(id.as_str()));

    let services: Vec<String> = collector.spans.lock().unwrap().iter().map(|(s, _)| s.clone()).collect();
    assert!(services.iter().all(|s| s == "hub-under-test"), "{services:?}");
    let raw = collector.raw.lock().unwrap();
    assert!(!raw.windows(20).any(|w| w == b"STATE-NEVER-EXPORTED"), "state never leaves in a span");
}

//! `GET /metrics` on the real binary: requests by route template, outcomes, time to answer and
//! open counts (read from the store, so right after a restart), in Prometheus text — and never
//! an id.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;

use serde_json::json;
use support::*;

fn metrics_text(addr: &str, key: Option<&str>) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    let auth = key.map(|k| format!("Authorization: Bearer {k}\r\n")).unwrap_or_default();
    write!(s, "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{auth}\r\n").unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let (head, body) = raw.split_once("\r\n\r\n").unwrap();
    (head.split_whitespace().nth(1).unwrap().parse().unwrap(), body.to_owned())
}

/// The value of the sample line `name{labels}` (labels exactly as rendered).
fn sample(text: &str, series: &str) -> Option<f64> {
    text.lines().find_map(|l| l.strip_prefix(series)?.strip_prefix(' ')?.trim().parse().ok())
}

#[test]
fn metrics_count_routes_outcomes_answers_and_open_messages_without_ids() {
    let dir = tempfile::tempdir().unwrap();
    let agent = admin_json(dir.path(), &["create-agent", "--account", "acme", "--agent", "bot"]);
    let operator = admin_json(dir.path(), &["create-operator", "--account", "acme", "--human", "alice"]);
    let (agent, operator) = (agent["api_key"].as_str().unwrap(), operator["api_key"].as_str().unwrap());
    let hub = Hub::start(dir.path());
    let mut urgent = ask_envelope("m-1");
    urgent["priority"] = json!("urgent");
    let (status, ack) = submit(&hub, agent, &urgent);
    assert_eq!(status, 202, "{ack}");
    let open_id = ack["id"].as_str().unwrap().to_owned();
    let (_, ack) = submit(&hub, agent, &ask_envelope("m-2"));
    let answered = ack["id"].as_str().unwrap().to_owned();
    let (status, _) = post(
        &hub,
        &format!("/v1/messages/{answered}/resolve"),
        operator,
        &json!({"resolution": "answered", "value": "ship"}),
    );
    assert_eq!(status, 200);
    let _ = get(&hub, &format!("/v1/messages/{answered}"), agent);

    let (status, text) = metrics_text(&hub.addr, None);
    assert_eq!(status, 200, "loopback scrapes: {text}");
    let series = |s: &str| sample(&text, s).unwrap_or_else(|| panic!("no `{s}` in\n{text}"));
    assert_eq!(series(r#"ma2h_http_requests_total{route="/v1/messages",method="POST",status="202"}"#), 2.0);
    assert_eq!(
        series(r#"ma2h_http_requests_total{route="/v1/messages/{id}/resolve",method="POST",status="200"}"#),
        1.0
    );
    assert_eq!(series(r#"ma2h_messages_submitted_total{type="ask"}"#), 2.0);
    assert_eq!(series(r#"ma2h_messages_resolved_total{type="ask",resolution="answered"}"#), 1.0);
    assert_eq!(series(r#"ma2h_time_to_answer_seconds_count{type="ask"}"#), 1.0);
    assert_eq!(series(r#"ma2h_open_messages{priority="urgent"}"#), 1.0);
    assert_eq!(series(r#"ma2h_open_messages{priority="normal"}"#), 0.0);
    assert_eq!(series(r#"ma2h_open_messages_by_type{type="ask"}"#), 1.0);
    assert!(text.contains("ma2h_http_request_duration_seconds_bucket"), "latency histogram");
    for secret in [&open_id, &answered, "bot", "alice", "acme"] {
        assert!(!text.contains(secret), "`{secret}` in the metrics:\n{text}");
    }

    // open counts come from the store: right after a restart too
    drop(hub);
    let hub = Hub::start(dir.path());
    let (_, text) = metrics_text(&hub.addr, Some(operator));
    assert_eq!(sample(&text, r#"ma2h_open_messages{priority="urgent"}"#), Some(1.0), "{text}");
}

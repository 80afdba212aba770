//! The live inbox (issue 39): the pulse (`/inbox/live`, `/inbox/events`) counts the open
//! messages, changes its version when a listed page would change, and alerts only on urgent/high
//! asks this operator may answer; the held stream (local binary) sends a new pulse when a change
//! commits, the unheld one (Lambda) is one pulse and a poll interval.

mod common;

use std::time::Duration;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use common::*;
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

async fn pulse(t: &TestHub, cookie: &str) -> Value {
    let r = t.page(Method::GET, "/inbox/live", Some(cookie), None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.html);
    serde_json::from_str(&r.html).unwrap()
}

#[tokio::test]
async fn the_pulse_counts_and_alerts_only_on_urgent_asks_this_operator_may_answer() {
    let t = hub().await;
    let cookie = t.ui_login(&t.operator).await;
    let empty = pulse(&t, &cookie).await;
    assert_eq!((empty["open"].as_u64(), empty["alerts"].as_array().map(Vec::len)), (Some(0), Some(0)), "{empty}");

    let mine = t.submit_ok(ask("mine")).await; // high, alice may answer
    let not_mine =
        with(with(ask("bob"), "/request/allowed_resolvers", json!(["human:bob"])), "/priority", json!("urgent"));
    t.submit_ok(not_mine).await;
    t.submit_ok(with(ask("low"), "/priority", json!("low"))).await;
    t.submit_ok(with(notify(), "/priority", json!("urgent"))).await;
    let p = pulse(&t, &cookie).await;
    assert_eq!((p["open"].as_u64(), p["urgent"].as_u64(), p["high"].as_u64()), (Some(3), Some(1), Some(1)), "{p}");
    let alerts = p["alerts"].as_array().unwrap();
    assert_eq!(alerts.len(), 1, "only the ask alice may answer: {p}");
    assert_eq!(alerts[0]["id"], mine.as_str());
    assert_eq!(
        (alerts[0]["url"].as_str(), alerts[0]["title"].as_str()),
        (Some(&*format!("/inbox/{mine}")), Some("Ship to prod?"))
    );
    assert!(alerts[0].get("body").is_none(), "a notification carries no body (§9.6)");
    assert_ne!(p["version"], empty["version"]);
    assert_eq!(pulse(&t, &cookie).await["version"], p["version"], "nothing changed, same version");

    t.resolve(&t.operator, &mine, json!({"resolution": "answered", "value": "ship"})).await;
    let after = pulse(&t, &cookie).await;
    assert_ne!(after["version"], p["version"], "a resolution changes the pages");
    assert_eq!((after["open"].as_u64(), after["alerts"].as_array().map(Vec::len)), (Some(2), Some(0)), "{after}");
}

#[tokio::test]
async fn the_pulse_needs_an_inbox_session() {
    let t = hub().await;
    for path in ["/inbox/live", "/inbox/events"] {
        let r = t.page(Method::GET, path, None, None).await;
        // an EventSource that lands on the HTML login page fails for good (no reconnect loop)
        assert_eq!(r.status, StatusCode::SEE_OTHER, "{path}");
        assert!(r.location().starts_with("/login"), "{path}: {}", r.location());
    }
}

#[tokio::test]
async fn where_the_stream_cannot_be_held_it_is_one_pulse_and_a_poll_interval() {
    let t = hub().await; // stream_served is false: the Lambda deployment's setting
    t.submit_ok(ask("one")).await;
    let cookie = t.ui_login(&t.operator).await;
    let r = t.page(Method::GET, "/inbox/events", Some(&cookie), None).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.headers["content-type"], "text/event-stream");
    assert!(r.html.starts_with("retry: 20000\n\n"), "{}", r.html);
    assert_eq!(r.html.matches("event: pulse\n").count(), 1, "{}", r.html);
    let data = r.html.lines().find_map(|l| l.strip_prefix("data: ")).unwrap();
    assert_eq!(serde_json::from_str::<Value>(data).unwrap()["open"], 1);
}

#[tokio::test]
async fn a_held_stream_sends_a_new_pulse_when_a_message_arrives() {
    let mut s = settings();
    s.inter_agent.stream_served = true; // the local binary's setting
    let t = hub_with(s).await;
    let cookie = t.ui_login(&t.operator).await;
    let req = Request::builder().uri("/inbox/events").header("cookie", &cookie).body(Body::empty()).unwrap();
    let resp = t.app.clone().oneshot(req).await.unwrap();
    let mut body = resp.into_body();
    let mut seen = String::new();
    let mut next_pulse = async |seen: &mut String| -> Value {
        loop {
            let frame = tokio::time::timeout(Duration::from_secs(10), body.frame()).await.expect("a frame in time");
            let bytes = frame.expect("the stream is held").unwrap().into_data().unwrap();
            seen.push_str(&String::from_utf8_lossy(&bytes));
            if let Some(at) = seen.find("event: pulse\ndata: ") {
                let rest = &seen[at + 19..];
                if let Some(end) = rest.find("\n\n") {
                    let v = serde_json::from_str(&rest[..end]).unwrap();
                    *seen = rest[end..].to_owned();
                    return v;
                }
            }
        }
    };
    let first = next_pulse(&mut seen).await;
    assert_eq!(first["open"], 0);
    t.submit_ok(ask("live")).await;
    let second = next_pulse(&mut seen).await;
    assert_eq!(second["open"], 1, "the submit woke the stream: {second}");
    assert_ne!(second["version"], first["version"]);
}

#[tokio::test]
async fn an_alert_shows_bidi_controls_instead_of_obeying_them() {
    let t = hub().await;
    let cookie = t.ui_login(&t.operator).await;
    t.submit_ok(with(ask("bidi"), "/title", json!("Open report\u{202E}fdp.exe"))).await;
    let p = pulse(&t, &cookie).await;
    assert_eq!(p["alerts"][0]["title"], "Open report[U+202E]fdp.exe", "{p}");
}

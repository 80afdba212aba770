//! §8.1 lost-ack recipe and §8.6 `Retry-After`, against a scripted fake Hub.

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use ma2h_client::builder::AgentRef;
use ma2h_client::{Client, ClientError, MessageBuilder};
use ma2h_protocol::envelope::Mode;
use serde_json::{Value, json};

/// One scripted answer: status and optional `Retry-After`.
type Step = (u16, Option<&'static str>);

#[derive(Clone, Default)]
struct Fake {
    script: Arc<Mutex<Vec<Step>>>,
    seen: Arc<Mutex<Vec<Value>>>,
}

async fn submit(State(f): State<Fake>, body: Bytes) -> Response {
    f.seen.lock().unwrap().push(serde_json::from_slice(&body).unwrap());
    let (status, retry_after) = {
        let mut s = f.script.lock().unwrap();
        if s.is_empty() { (202, None) } else { s.remove(0) }
    };
    let status = StatusCode::from_u16(status).unwrap();
    let body = if status == StatusCode::ACCEPTED {
        json!({"id": "msg_1", "status": "open", "poll_url": "http://x/v1/messages/msg_1"})
    } else {
        json!({"error": {"code": if status == StatusCode::TOO_MANY_REQUESTS { "rate_limited" } else { "boom" }, "message": "scripted"}})
    };
    let mut resp = (status, axum::Json(body)).into_response();
    if let Some(r) = retry_after {
        resp.headers_mut().insert("retry-after", r.parse().unwrap());
    }
    resp
}

async fn start(script: Vec<Step>) -> (Fake, Client) {
    let fake = Fake { script: Arc::new(Mutex::new(script)), ..Default::default() };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = axum::Router::new().route("/v1/messages", axum::routing::post(submit)).with_state(fake.clone());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let mut client = Client::new(&format!("http://{addr}"), "key").unwrap();
    client.retry.base_delay = Duration::from_millis(20);
    (fake, client)
}

fn ask() -> Value {
    MessageBuilder::ask("ship?", Mode::Confirm).build(&AgentRef::new("bot", Some("r".into()), "cli")).unwrap()
}

#[tokio::test]
async fn a_lost_ack_is_retried_with_the_same_generated_idempotency_key_until_202() {
    let (fake, client) = start(vec![(503, None), (502, None)]).await;
    let ack = client.submit(ask()).await.unwrap();
    assert_eq!((ack.id.as_str(), ack.attempts), ("msg_1", 3));
    let seen = fake.seen.lock().unwrap();
    assert_eq!(seen.len(), 3);
    let key = seen[0]["idempotency_key"].as_str().unwrap();
    assert!(key.starts_with("ma2h-"));
    assert!(seen.iter().all(|s| s == &seen[0]), "the very same payload every time");
    assert_eq!(ack.idempotency_key.as_deref(), Some(key));
}

#[tokio::test]
async fn a_409_stops_the_recipe_at_once() {
    let (fake, client) = start(vec![(503, None), (409, None)]).await;
    let err = client.submit(ask()).await.unwrap_err();
    assert!(matches!(err, ClientError::Hub(ref h) if h.status == 409), "{err}");
    assert_eq!(fake.seen.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn a_429_waits_out_retry_after_before_resending() {
    let (fake, client) = start(vec![(429, Some("1"))]).await;
    let started = Instant::now();
    client.submit(ask()).await.unwrap();
    assert!(started.elapsed() >= Duration::from_millis(950), "{:?}", started.elapsed());
    assert_eq!(fake.seen.lock().unwrap().len(), 2);
}

#[tokio::test]
async fn a_4xx_other_than_429_is_not_retried() {
    let (fake, client) = start(vec![(422, None)]).await;
    assert!(client.submit(ask()).await.is_err());
    assert_eq!(fake.seen.lock().unwrap().len(), 1);
}

#[tokio::test]
async fn an_unreachable_hub_is_reported_after_the_retry_budget() {
    let mut client = Client::new("http://127.0.0.1:9", "key").unwrap();
    client.retry.base_delay = Duration::from_millis(10);
    client.retry.max_attempts = 2;
    let err = client.submit(ask()).await.unwrap_err();
    assert!(matches!(err, ClientError::Unreachable { .. }), "{err}");
}

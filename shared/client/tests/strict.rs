//! The client trusts only the Hub's own answers (found by a black-box pass of `ma2h mcp`): no
//! redirect is followed, an id argument stays one path segment, a body that is not the message
//! read (or the cancellation) is an error rather than an outcome.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::http::{StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use ma2h_client::builder::AgentRef;
use ma2h_client::{Client, ClientError, MessageBuilder};
use ma2h_protocol::envelope::Mode;
use serde_json::{Value, json};

const ID: &str = "msg_01JAAAAAAAAAAAAAAAAAAAAAAA";

/// Every request is recorded; the answer is the scripted status and body.
#[derive(Clone)]
struct Fake {
    answer: Arc<Mutex<(u16, Value)>>,
    seen: Arc<Mutex<Vec<String>>>,
}

async fn any(State(f): State<Fake>, uri: Uri) -> Response {
    f.seen.lock().unwrap().push(uri.to_string());
    let (status, body) = f.answer.lock().unwrap().clone();
    let mut resp = (StatusCode::from_u16(status).unwrap(), axum::Json(body)).into_response();
    if (300..400).contains(&status) {
        resp.headers_mut().insert("location", "http://elsewhere.test/v1/messages".parse().unwrap());
    }
    resp
}

async fn start(status: u16, body: Value) -> (Fake, Client) {
    let fake = Fake { answer: Arc::new(Mutex::new((status, body))), seen: Arc::default() };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let app = axum::Router::new().fallback(any).with_state(fake.clone());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    let mut client = Client::new(&format!("http://{addr}"), "key").unwrap();
    client.retry.base_delay = Duration::from_millis(10);
    (fake, client)
}

#[tokio::test]
async fn a_redirect_is_refused_not_followed() {
    let (fake, client) = start(307, json!({})).await;
    let ask = MessageBuilder::ask("ship?", Mode::Confirm).build(&AgentRef::new("bot", None, "cli")).unwrap();
    let err = client.submit(ask).await.unwrap_err();
    assert!(matches!(&err, ClientError::Protocol(m) if m.contains("307") && m.contains("elsewhere.test")), "{err}");
    assert_eq!(fake.seen.lock().unwrap().len(), 1, "sent once, to the Hub only");
    let err = client.cancel(ID).await.unwrap_err();
    assert!(matches!(err, ClientError::Protocol(_)), "a redirected cancel is no cancellation: {err}");
}

#[tokio::test]
async fn an_id_stays_one_path_segment_and_what_can_never_be_one_is_refused() {
    let (fake, client) = start(404, json!({"error": {"code": "not_found", "message": "unknown message id"}})).await;
    for id in ["", ".", "..", "msg_1\n", &"m".repeat(513)] {
        assert!(matches!(client.get(id, Some(1)).await, Err(ClientError::Config(_))), "{id:?}");
        assert!(matches!(client.cancel(id).await, Err(ClientError::Config(_))), "{id:?}");
    }
    assert!(fake.seen.lock().unwrap().is_empty(), "{:?}", fake.seen.lock().unwrap());
    // Any other id is one encoded segment: it cannot reach another path or add a query.
    for id in ["../inbox?limit=2&x=", "../../v1/operator/messages", "msg_1/cancel"] {
        assert!(matches!(client.get(id, None).await, Err(ClientError::Hub(h)) if h.status == 404), "{id}");
    }
    let seen = fake.seen.lock().unwrap().clone();
    assert_eq!(
        seen,
        [
            "/v1/messages/..%2Finbox%3Flimit%3D2%26x%3D",
            "/v1/messages/..%2F..%2Fv1%2Foperator%2Fmessages",
            "/v1/messages/msg_1%2Fcancel"
        ]
    );
}

#[tokio::test]
async fn any_hubs_message_id_is_read_not_only_ours() {
    // The reference Hub mints `msg_` + a UUID; ours `msg_` + a ULID.
    let uuid = "msg_1b4e28ba-2fa1-11d2-883f-b9a761bde3fb";
    let (fake, client) = start(200, json!({"id": uuid, "status": "open"})).await;
    assert_eq!(client.get(uuid, None).await.unwrap()["status"], "open");
    assert_eq!(*fake.seen.lock().unwrap(), [format!("/v1/messages/{uuid}")]);
}

#[tokio::test]
async fn a_body_that_is_not_the_message_read_is_an_error() {
    for body in [
        json!({}),
        json!({"id": "msg_01JBBBBBBBBBBBBBBBBBBBBBBB", "status": "open"}),
        json!({"id": ID}),
        json!({"id": ID, "status": "answered"}),
        json!({"id": ID, "type": "task", "status": "completed"}),
    ] {
        let (_, client) = start(200, body.clone()).await;
        assert!(matches!(client.get(ID, None).await, Err(ClientError::Protocol(_))), "{body}");
    }
    let (_, client) = start(200, json!({"ok": true})).await;
    assert!(matches!(client.cancel(ID).await, Err(ClientError::Protocol(_))), "not a cancellation");
    let answered = json!({"id": ID, "type": "ask", "status": "answered", "response": {"resolution": "answered"}});
    let (_, client) = start(200, answered.clone()).await;
    assert_eq!(client.get(ID, None).await.unwrap(), answered);
    let notify = json!({"id": ID, "type": "notify", "to": "agent:w", "status": "acknowledged"});
    let (_, client) = start(200, notify.clone()).await;
    assert_eq!(client.get(ID, None).await.unwrap(), notify, "a notify has no response");
}

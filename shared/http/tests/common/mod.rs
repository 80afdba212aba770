//! Router test harness: a Hub over a fresh store with a hand-moved clock, driven with `oneshot`
//! (no socket). The store is chosen by `MA2H_TEST_STORE`, so the same suite runs on every backend
//! (`make test` runs it on all three): `sqlite` (in memory, the default), `sqlite-file` (a file in
//! a temporary directory) or `dynamodb` (a fresh table on the moto server at `AWS_ENDPOINT_URL`).
//! A behaviour that differs between them is a bug.
#![allow(dead_code)]

pub mod recording;
pub mod sso;

use std::sync::Arc;

use axum::Router;
use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use chrono::{DateTime, Duration, Utc};
use http_body_util::BodyExt;
use ma2h_core::kernel::changes::InProcessChanges;
use ma2h_core::kernel::keys::HubKeys;
use ma2h_core::kernel::secrets::MasterKey;
use ma2h_core::kernel::settings::{Mode, Settings};
use ma2h_core::ports::{ManualClock, OsRandom, WakeWorker};
use ma2h_core::{Hub, admin};
use ma2h_store_sqlite::SqliteStore;
use serde_json::{Value, json};
use tower::ServiceExt;

pub struct TestHub {
    /// Keeps an on-disk store's directory alive.
    _dir: Option<tempfile::TempDir>,
    pub hub: Hub,
    pub app: Router,
    pub clock: Arc<ManualClock>,
    /// API key of `agent:bot` in account `acme`.
    pub agent: String,
    /// API key of `agent:other` in account `acme`.
    pub other_agent: String,
    /// API key of `human:alice` in account `acme`.
    pub operator: String,
    /// API key of `agent:bot` in account `globex` (same agent id, other account).
    pub foreign_agent: String,
}

pub fn start() -> DateTime<Utc> {
    DateTime::parse_from_rfc3339("2026-06-04T12:00:00Z").unwrap().with_timezone(&Utc)
}

pub fn settings() -> Settings {
    Settings { mode: Mode::Dev, public_url: "https://hub.test".into(), ..Settings::default() }
}

pub async fn hub() -> TestHub {
    hub_with(settings()).await
}

pub async fn hub_with(settings: Settings) -> TestHub {
    let clock = Arc::new(ManualClock::new(start()));
    let (hub, dir) = over_test_store(settings, clock.clone()).await;
    let hub = hub.with_clock(clock.clone());
    let agent = admin::create_agent(&hub, "acme", "bot", None).await.unwrap().api_key;
    let other_agent = admin::create_agent(&hub, "acme", "other", None).await.unwrap().api_key;
    let operator = admin::create_operator(&hub, "acme", "alice", None).await.unwrap().api_key;
    let foreign_agent = admin::create_agent(&hub, "globex", "bot", None).await.unwrap().api_key;
    let app = ma2h_http::router(hub.clone());
    TestHub { _dir: dir, hub, app, clock, agent, other_agent, operator, foreign_agent }
}

fn assemble<
    S: ma2h_core::ports::MessageStore
        + ma2h_core::ports::CredentialStore
        + ma2h_core::ports::MailboxStore
        + ma2h_core::ports::SessionStore
        + ma2h_core::channels::outbox::NotificationStore
        + ma2h_core::messages::triage::TriageStore
        + ma2h_core::decisions::grant_store::GrantStore
        + ma2h_core::audit::store::AuditStore
        + 'static,
>(
    store: S,
    settings: Settings,
) -> Hub {
    let keys = HubKeys::from_seed(&[7u8; 32], vec![]);
    let changes = Arc::new(InProcessChanges::new());
    Hub::new(Arc::new(store), settings, MasterKey::generate(&OsRandom), keys, changes, Arc::new(WakeWorker::default()))
}

/// A Hub over a fresh store of the backend `MA2H_TEST_STORE` names.
async fn over_test_store(settings: Settings, clock: Arc<ManualClock>) -> (Hub, Option<tempfile::TempDir>) {
    match std::env::var("MA2H_TEST_STORE").as_deref() {
        Err(_) | Ok("sqlite") => (assemble(SqliteStore::open_in_memory().expect("in-memory store"), settings), None),
        Ok("sqlite-file") => {
            let dir = tempfile::tempdir().unwrap();
            let store = SqliteStore::open(dir.path().join("hub.db")).expect("store file");
            (assemble(store, settings), Some(dir))
        }
        Ok("dynamodb") => {
            assert!(
                std::env::var("AWS_ENDPOINT_URL").is_ok(),
                "MA2H_TEST_STORE=dynamodb needs moto at AWS_ENDPOINT_URL"
            );
            let client = ma2h_test_support::dynamodb().await.expect("moto");
            let table = ma2h_test_support::unique("router");
            ma2h_store_dynamodb::provision::create_table(&client, &table).await.unwrap();
            (
                assemble(
                    ma2h_store_dynamodb::DynamoStore::new(client, table)
                        .with_shards(ma2h_store_dynamodb::Shards::new(4))
                        // retention ends by the test's clock, as the Hub's
                        .with_clock(clock),
                    settings,
                ),
                None,
            )
        }
        Ok(other) => panic!("MA2H_TEST_STORE must be sqlite, sqlite-file or dynamodb, not {other:?}"),
    }
}

pub struct Reply {
    pub status: StatusCode,
    pub headers: axum::http::HeaderMap,
    pub body: Value,
}

impl Reply {
    pub fn code(&self) -> &str {
        self.body["error"]["code"].as_str().unwrap_or("")
    }
    pub fn message(&self) -> &str {
        self.body["error"]["message"].as_str().unwrap_or("")
    }
}

impl TestHub {
    pub async fn call(&self, method: Method, uri: &str, key: Option<&str>, body: Option<Value>) -> Reply {
        let raw = body.map(|b| serde_json::to_vec(&b).unwrap());
        self.call_raw(method, uri, key, raw).await
    }

    pub async fn call_raw(&self, method: Method, uri: &str, key: Option<&str>, body: Option<Vec<u8>>) -> Reply {
        let mut req = Request::builder().method(method).uri(uri);
        if let Some(k) = key {
            req = req.header("authorization", format!("Bearer {k}"));
        }
        let req = req
            .header("content-type", "application/json")
            .body(body.map(Body::from).unwrap_or_else(Body::empty))
            .unwrap();
        let resp = self.app.clone().oneshot(req).await.unwrap();
        let status = resp.status();
        let headers = resp.headers().clone();
        let bytes = resp.into_body().collect().await.unwrap().to_bytes();
        let body = if bytes.is_empty() {
            Value::Null
        } else {
            serde_json::from_slice(&bytes).unwrap_or(Value::String(String::from_utf8_lossy(&bytes).into()))
        };
        Reply { status, headers, body }
    }

    pub async fn submit(&self, key: &str, envelope: Value) -> Reply {
        self.call(Method::POST, "/v1/messages", Some(key), Some(envelope)).await
    }

    /// Submit and return the new id, asserting 202.
    pub async fn submit_ok(&self, envelope: Value) -> String {
        let r = self.submit(&self.agent, envelope).await;
        assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
        r.body["id"].as_str().unwrap().to_owned()
    }

    pub async fn get(&self, key: &str, id: &str) -> Reply {
        self.call(Method::GET, &format!("/v1/messages/{id}"), Some(key), None).await
    }

    pub async fn resolve(&self, key: &str, id: &str, body: Value) -> Reply {
        self.call(Method::POST, &format!("/v1/messages/{id}/resolve"), Some(key), Some(body)).await
    }

    pub async fn cancel(&self, key: &str, id: &str) -> Reply {
        self.call(Method::POST, &format!("/v1/messages/{id}/cancel"), Some(key), None).await
    }

    pub fn clock_now(&self) -> DateTime<Utc> {
        use ma2h_core::ports::Clock;
        self.clock.now()
    }

    pub fn advance(&self, by: Duration) {
        self.clock.advance(by);
    }
}

pub fn ts(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

pub fn notify() -> Value {
    json!({
        "ma2h_version": "0.5", "type": "notify", "created_at": "2026-06-04T12:00:00Z",
        "agent": { "id": "bot", "run_id": "run_1", "runtime": "cli" },
        "title": "Nightly build finished", "body": "All green.", "priority": "low"
    })
}

pub fn ask(key: &str) -> Value {
    json!({
        "ma2h_version": "0.5", "type": "ask", "created_at": "2026-06-04T12:00:00Z",
        "agent": { "id": "bot", "run_id": "run_1", "runtime": "github-actions" },
        "title": "Ship to prod?", "priority": "high", "idempotency_key": key,
        "state": { "sealed": "v1.opaque", "n": 1e21 },
        "request": {
            "mode": "select",
            "options": [ { "value": "ship", "label": "Ship" }, { "value": "hold", "label": "Hold" } ],
            "default_on_expire": "hold",
            "allowed_resolvers": ["human:alice", "agent:bot"]
        }
    })
}

pub fn task(key: &str) -> Value {
    json!({
        "ma2h_version": "0.5", "type": "task", "created_at": "2026-06-04T12:00:00Z",
        "agent": { "id": "bot", "run_id": "run_1", "runtime": "cli" },
        "title": "Rotate the key", "idempotency_key": key,
        "action": {
            "instructions": "Rotate API_SIGNING_KEY.",
            "checklist": [ { "text": "Generate", "done": false }, { "text": "Deploy", "done": false } ],
            "allowed_resolvers": ["human:alice"]
        }
    })
}

/// Set a JSON-pointer path (creating nothing: the parent must exist).
pub fn with(mut v: Value, pointer: &str, new: Value) -> Value {
    let (parent, key) = pointer.rsplit_once('/').unwrap();
    let target = if parent.is_empty() { &mut v } else { v.pointer_mut(parent).unwrap() };
    target.as_object_mut().unwrap().insert(key.to_owned(), new);
    v
}

pub fn without(mut v: Value, pointer: &str) -> Value {
    let (parent, key) = pointer.rsplit_once('/').unwrap();
    let target = if parent.is_empty() { &mut v } else { v.pointer_mut(parent).unwrap() };
    target.as_object_mut().unwrap().remove(key);
    v
}

/// A web-inbox reply: status, headers and the body as text.
pub struct Page {
    pub status: StatusCode,
    pub headers: axum::http::HeaderMap,
    pub html: String,
}

impl Page {
    /// The `name=value` pairs of every `Set-Cookie`.
    pub fn set_cookies(&self) -> Vec<String> {
        self.headers.get_all("set-cookie").iter().map(|v| v.to_str().unwrap().to_owned()).collect()
    }

    /// The value of the first hidden `csrf` field.
    pub fn csrf(&self) -> String {
        let marker = r#"name="csrf" value=""#;
        let start = self.html.find(marker).expect("a csrf field") + marker.len();
        self.html[start..].split('"').next().unwrap().to_owned()
    }

    pub fn location(&self) -> &str {
        self.headers.get("location").map(|v| v.to_str().unwrap()).unwrap_or("")
    }
}

impl TestHub {
    /// The same Hub with outbound HTTP through `sender` (and a Router over it).
    pub fn with_outbound(mut self, sender: Arc<dyn ma2h_core::ports::PushSender>) -> Self {
        self.hub = self.hub.clone().with_outbound(sender);
        self.app = ma2h_http::router(self.hub.clone());
        self
    }

    /// A browser-like request: optional cookie header and url-encoded form body.
    pub async fn page(&self, method: Method, uri: &str, cookie: Option<&str>, form: Option<&[(&str, &str)]>) -> Page {
        let mut req = Request::builder().method(method).uri(uri);
        if let Some(c) = cookie {
            req = req.header("cookie", c);
        }
        let body = match form {
            Some(pairs) => {
                req = req.header("content-type", "application/x-www-form-urlencoded");
                let mut s = url::form_urlencoded::Serializer::new(String::new());
                for (k, v) in pairs {
                    s.append_pair(k, v);
                }
                Body::from(s.finish())
            }
            None => Body::empty(),
        };
        let resp = self.app.clone().oneshot(req.body(body).unwrap()).await.unwrap();
        let status = resp.status();
        let headers = resp.headers().clone();
        let bytes = resp.into_body().collect().await.unwrap().to_bytes();
        Page { status, headers, html: String::from_utf8_lossy(&bytes).into_owned() }
    }

    /// Log in to the web inbox with `key`; returns the `Cookie` header value of the session.
    pub async fn ui_login(&self, key: &str) -> String {
        let form = self.page(Method::GET, "/login", None, None).await;
        let login_cookie = cookie_pair(&form.set_cookies()[0]);
        let csrf = form.csrf();
        let r =
            self.page(Method::POST, "/login", Some(&login_cookie), Some(&[("csrf", &csrf), ("api_key", key)])).await;
        assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.html);
        let session = r.set_cookies().into_iter().find(|c| c.starts_with("ma2h_inbox=")).expect("a session cookie");
        cookie_pair(&session)
    }
}

/// `name=value` of a `Set-Cookie` header value.
pub fn cookie_pair(set_cookie: &str) -> String {
    set_cookie.split(';').next().unwrap().to_owned()
}

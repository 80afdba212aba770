//! §8.3 push delivery end to end: the real binary pushes signed Responses to a local receiver
//! that verifies every signature with the project's verifier and deduplicates on
//! `(in_reply_to, resolution_id)`.

mod support;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use base64::Engine;
use ma2h_protocol::signature::{self, SignedContext, VerifyingKey};
use serde_json::{Value, json};
use support::*;

/// One request the receiver saw.
#[derive(Clone, Debug)]
struct Hit {
    at: Instant,
    headers: HeaderMap,
    body: Value,
    raw: Vec<u8>,
}

/// A callback receiver: per path, a script of statuses to answer (then 200), and every hit.
#[derive(Clone, Default)]
struct Receiver {
    scripts: Arc<Mutex<HashMap<String, Vec<u16>>>>,
    hits: Arc<Mutex<HashMap<String, Vec<Hit>>>>,
}

impl Receiver {
    fn script(&self, path: &str, statuses: &[u16]) {
        self.scripts.lock().unwrap().insert(path.to_owned(), statuses.to_vec());
    }
    fn hits(&self, path: &str) -> Vec<Hit> {
        self.hits.lock().unwrap().get(path).cloned().unwrap_or_default()
    }
    /// Wait until `path` has at least `n` hits (or panic after 20 s).
    fn wait_for(&self, path: &str, n: usize) -> Vec<Hit> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let hits = self.hits(path);
            if hits.len() >= n {
                return hits;
            }
            assert!(Instant::now() < deadline, "{path}: {} of {n} hits after 20 s", hits.len());
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

/// A path starting with `stall` answers only after this long (a receiver that hangs).
const STALL: Duration = Duration::from_secs(3);

async fn receive(State(r): State<Receiver>, Path(path): Path<String>, headers: HeaderMap, body: Bytes) -> StatusCode {
    if path.starts_with("stall") {
        tokio::time::sleep(STALL).await;
    }
    let parsed = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let hit = Hit { at: Instant::now(), headers, body: parsed, raw: body.to_vec() };
    r.hits.lock().unwrap().entry(path.clone()).or_default().push(hit);
    let mut scripts = r.scripts.lock().unwrap();
    let next = scripts.get_mut(&path).and_then(|s| (!s.is_empty()).then(|| s.remove(0))).unwrap_or(200);
    StatusCode::from_u16(next).unwrap()
}

/// Start the receiver on its own runtime thread; returns it and its base URL.
fn start_receiver() -> (Receiver, String) {
    let receiver = Receiver::default();
    let (tx, rx) = std::sync::mpsc::channel();
    let state = receiver.clone();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            let app = axum::Router::new().route("/cb/{path}", axum::routing::post(receive)).with_state(state);
            axum::serve(listener, app).await.unwrap();
        });
    });
    let addr = rx.recv().unwrap();
    (receiver, format!("http://{addr}/cb"))
}

/// The agent-side §9.2 check: rebuild the context from OUR callback URL and the received body,
/// recompute the payload digest, check the window, verify with any of `keys`.
fn verify(hit: &Hit, callback_url: &str, keys: &[VerifyingKey]) -> Result<(), String> {
    let header = hit.headers.get(signature::SIGNATURE_HEADER).ok_or("no signature header")?.to_str().unwrap();
    let parsed = signature::parse_header(header).map_err(|e| e.to_string())?;
    let ctx = SignedContext::for_response(&hit.body, callback_url, &parsed.jti, &parsed.t)?;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
    signature::check_window(parsed.t_unix, now, 120).map_err(|e| e.to_string())?;
    signature::verify(&ctx, &parsed.v1, keys).map_err(|e| e.to_string())
}

struct Setup {
    _dir: tempfile::TempDir,
    dir: std::path::PathBuf,
    hub: Hub,
    agent_key: String,
    signing_secret: String,
    op_key: String,
}

const HUB_ENV: &[(&str, &str)] =
    &[("MA2H_DEV_EGRESS_ALLOW", "127.0.0.0/8"), ("MA2H_PUSH_BACKOFF_MS", "150"), ("MA2H_PUSH_MAX_ATTEMPTS", "5")];

fn setup() -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().to_owned();
    let agent = admin_json(&path, &["create-agent", "--account", "acme", "--agent", "bot"]);
    let op = admin_json(&path, &["create-operator", "--account", "acme", "--human", "alice"]);
    admin_json(&path, &["bind-callback", "--account", "acme", "--agent", "bot", "--host", "127.0.0.1"]);
    admin_json(
        &path,
        &["put-secret", "--account", "acme", "--agent", "bot", "--name", "cb", "--value", "whsec-test-123"],
    );
    admin_json(&path, &["put-secret", "--account", "acme", "--agent", "bot", "--name", "tok", "--value", "tok-abc"]);
    let hub = Hub::start_with(&path, HUB_ENV);
    Setup {
        _dir: dir,
        dir: path,
        hub,
        agent_key: agent["api_key"].as_str().unwrap().into(),
        signing_secret: agent["signing_secret"].as_str().unwrap().into(),
        op_key: op["api_key"].as_str().unwrap().into(),
    }
}

fn ask_with_callback(key: &str, url: &str, auth: Value) -> Value {
    let mut env = ask_envelope(key);
    env["request"]["callback"] = json!({ "mode": "push", "url": url, "auth": auth });
    env["state"] = json!({ "sealed": "v1.blob", "n": 0.1 });
    env
}

fn submit_and_answer(s: &Setup, env: &Value) -> String {
    let (status, ack) = submit(&s.hub, &s.agent_key, env);
    assert_eq!(status, 202, "{ack}");
    let id = ack["id"].as_str().unwrap().to_owned();
    let (status, body) = post(
        &s.hub,
        &format!("/v1/messages/{id}/resolve"),
        &s.op_key,
        &json!({"resolution": "answered", "value": "ship"}),
    );
    assert_eq!(status, 200, "{body}");
    id
}

fn hmac_key(secret: &str) -> Vec<VerifyingKey> {
    vec![VerifyingKey::Hmac(secret.as_bytes().to_vec())]
}

#[test]
fn a_signed_push_is_retried_on_503_with_growing_gaps_and_the_same_resolution_id() {
    let s = setup();
    let (receiver, base) = start_receiver();
    receiver.script("retry", &[503, 503]);
    let url = format!("{base}/retry");
    let id = submit_and_answer(&s, &ask_with_callback("r1", &url, json!({"scheme": "hmac", "secret_ref": "cb"})));
    let hits = receiver.wait_for("retry", 3);
    std::thread::sleep(Duration::from_millis(800));
    let hits_after = receiver.hits("retry");
    assert_eq!(hits_after.len(), 3, "exactly N+1 attempts");

    let mut dedup = HashSet::new();
    let mut jtis = HashSet::new();
    for hit in &hits {
        verify(hit, &url, &hmac_key("whsec-test-123")).expect("every attempt verifies");
        assert!(verify(hit, "https://elsewhere.example/cb", &hmac_key("whsec-test-123")).is_err(), "bound to the URL");
        dedup.insert((hit.body["in_reply_to"].clone(), hit.body["resolution_id"].clone()));
        let header = hit.headers[signature::SIGNATURE_HEADER].to_str().unwrap();
        jtis.insert(signature::parse_header(header).unwrap().jti);
        assert_eq!(hit.body["state"], json!({ "sealed": "v1.blob", "n": 0.1 }));
    }
    assert_eq!(dedup.len(), 1, "one (in_reply_to, resolution_id) across retries");
    assert_eq!(jtis.len(), 3, "a fresh jti per attempt");
    let (g1, g2) = (hits[1].at - hits[0].at, hits[2].at - hits[1].at);
    assert!(g2 > g1, "backoff grows: {g1:?} then {g2:?}");

    // a tampered body fails verification
    let mut tampered = hits[2].clone();
    tampered.body["response"]["value"] = json!("hold");
    assert!(verify(&tampered, &url, &hmac_key("whsec-test-123")).is_err());

    let (_, read) = get(&s.hub, &format!("/v1/messages/{id}"), &s.agent_key);
    assert_eq!(read["delivery"]["state"], "delivered-to-agent");
    assert_eq!(read["response"]["resolution_id"], hits[0].body["resolution_id"]);
}

#[test]
fn a_4xx_stops_at_once_and_exhaustion_is_recorded_while_the_response_stays_pullable() {
    let s = setup();
    let (receiver, base) = start_receiver();
    receiver.script("bad", &[400]);
    receiver.script("down", &[503; 20]);
    let auth = json!({"scheme": "hmac", "secret_ref": "cb"});
    let bad = submit_and_answer(&s, &ask_with_callback("b1", &format!("{base}/bad"), auth.clone()));
    let down = submit_and_answer(&s, &ask_with_callback("b2", &format!("{base}/down"), auth));
    receiver.wait_for("bad", 1);
    receiver.wait_for("down", 5);
    std::thread::sleep(Duration::from_millis(1500));
    assert_eq!(receiver.hits("bad").len(), 1, "a 4xx is never retried");
    assert_eq!(receiver.hits("down").len(), 5, "capped at MA2H_PUSH_MAX_ATTEMPTS");

    let (_, list) = get(&s.hub, "/v1/operator/messages?status=resolved", &s.op_key);
    let push_of =
        |id: &str| list["messages"].as_array().unwrap().iter().find(|m| m["id"] == id).unwrap()["push"].clone();
    assert_eq!(push_of(&bad)["status"], "failed");
    assert_eq!(push_of(&down)["status"], "failed");
    assert_eq!(push_of(&down)["attempts"], 5);
    for id in [&bad, &down] {
        let (status, read) = get(&s.hub, &format!("/v1/messages/{id}"), &s.agent_key);
        assert_eq!((status, read["status"].as_str()), (200, Some("answered")), "pull stays authoritative");
        assert_eq!(read["push"]["status"], "failed", "the owner sees the failed push: {read}");
        assert!(read["push"]["last_error"].as_str().is_some_and(|e| e.contains("receiver answered")), "{read}");
        // No push was delivered; this authenticated read is the delivery evidence (§14.2).
        assert_eq!(read["delivery"]["state"], "delivered-to-agent");
    }
}

#[test]
fn bearer_pushes_carry_the_token_and_are_signed_with_the_agents_key_or_the_hub_ed25519_key() {
    let s = setup();
    let (receiver, base) = start_receiver();
    let url = format!("{base}/bearer");
    submit_and_answer(&s, &ask_with_callback("t1", &url, json!({"scheme": "bearer", "token_ref": "tok"})));
    let hit = &receiver.wait_for("bearer", 1)[0];
    assert_eq!(hit.headers["authorization"], "Bearer tok-abc");
    verify(hit, &url, &hmac_key(&s.signing_secret)).expect("signed with the agent's Hub-issued secret");

    // switch the agent to Ed25519 and verify with the published key
    admin_json(&s.dir, &["set-signing", "--account", "acme", "--agent", "bot", "--alg", "ed25519"]);
    let url2 = format!("{base}/apikey");
    submit_and_answer(&s, &ask_with_callback("t2", &url2, json!({"scheme": "apikey", "token_ref": "tok"})));
    let hit = &receiver.wait_for("apikey", 1)[0];
    assert_eq!(hit.headers["x-api-key"], "tok-abc");
    let cap = try_request(&s.hub.addr, "GET", "/.well-known/ma2h", None, None).unwrap().1;
    let public = cap["signing_keys"][0]["public_key"].as_str().unwrap();
    let bytes: [u8; 32] = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(public).unwrap().try_into().unwrap();
    let key = VerifyingKey::ed25519_from_bytes(&bytes).unwrap();
    verify(hit, &url2, &[key]).expect("signed with the Hub's Ed25519 key");
    assert!(verify(hit, &url2, &hmac_key(&s.signing_secret)).is_err());
}

#[test]
fn standard_webhooks_headers_are_added_when_the_agent_opts_in_and_verify_on_every_retry() {
    use ma2h_protocol::standard_webhooks::{ID_HEADER, SIGNATURE_HEADER, TIMESTAMP_HEADER, WebhookSecret};
    let s = setup();
    let on = admin_json(&s.dir, &["standard-webhooks", "--account", "acme", "--agent", "bot", "--enable"]);
    let secret = WebhookSecret::parse(on["secret"].as_str().expect("the secret is shown once")).unwrap();
    let (receiver, base) = start_receiver();
    receiver.script("std", &[503]);
    let url = format!("{base}/std");
    submit_and_answer(&s, &ask_with_callback("sw1", &url, json!({"scheme": "hmac", "secret_ref": "cb"})));
    let hits = receiver.wait_for("std", 2);
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64;
    let header = |hit: &Hit, name: &str| hit.headers[name].to_str().unwrap().to_owned();
    for hit in &hits {
        let (id, ts, sig) = (header(hit, ID_HEADER), header(hit, TIMESTAMP_HEADER), header(hit, SIGNATURE_HEADER));
        secret.verify(&id, &ts, &sig, &hit.raw, now, 300).expect("the Standard Webhooks signature verifies");
        assert!(secret.verify(&id, &ts, &sig, b"{}", now, 300).is_err(), "bound to the body");
        verify(hit, &url, &hmac_key("whsec-test-123")).expect("the §9.2 signature is still there");
        assert_eq!(id, hit.body["resolution_id"].as_str().unwrap(), "webhook-id is the resolution id");
    }
    assert_eq!(header(&hits[0], ID_HEADER), header(&hits[1], ID_HEADER), "the same webhook-id on a retry");

    admin_json(&s.dir, &["standard-webhooks", "--account", "acme", "--agent", "bot", "--disable"]);
    let url2 = format!("{base}/plain");
    submit_and_answer(&s, &ask_with_callback("sw2", &url2, json!({"scheme": "hmac", "secret_ref": "cb"})));
    let hit = &receiver.wait_for("plain", 1)[0];
    assert!(hit.headers.get(SIGNATURE_HEADER).is_none() && hit.headers.get(ID_HEADER).is_none(), "off again");
    verify(hit, &url2, &hmac_key("whsec-test-123")).unwrap();
}

#[test]
fn every_terminal_is_pushed_including_cancel() {
    let s = setup();
    let (receiver, base) = start_receiver();
    let url = format!("{base}/cancel");
    let (_, ack) =
        submit(&s.hub, &s.agent_key, &ask_with_callback("c1", &url, json!({"scheme": "hmac", "secret_ref": "cb"})));
    let id = ack["id"].as_str().unwrap();
    let (status, _) = post(&s.hub, &format!("/v1/messages/{id}/cancel"), &s.agent_key, &json!({}));
    assert_eq!(status, 200);
    let hit = &receiver.wait_for("cancel", 1)[0];
    assert_eq!(hit.body["resolution"], "cancelled");
    verify(hit, &url, &hmac_key("whsec-test-123")).unwrap();
}

#[test]
fn a_pending_push_is_delivered_after_a_kill_9_and_restart() {
    let mut s = setup();
    let (receiver, base) = start_receiver();
    receiver.script("later", &[503; 1]);
    let url = format!("{base}/later");
    let id = submit_and_answer(&s, &ask_with_callback("k1", &url, json!({"scheme": "hmac", "secret_ref": "cb"})));
    receiver.wait_for("later", 1);
    s.hub.kill9();
    // the retry is due while the hub is down; a restarted hub must still owe and deliver it
    let hub = Hub::start_with(&s.dir, HUB_ENV);
    let hits = receiver.wait_for("later", 2);
    verify(&hits[1], &url, &hmac_key("whsec-test-123")).unwrap();
    assert_eq!(hits[0].body["resolution_id"], hits[1].body["resolution_id"]);
    let deadline = Instant::now() + Duration::from_secs(10);
    // The push track (not a read of ours, which is delivery evidence by itself, §14.2) records it.
    loop {
        let (_, list) = get(&hub, "/v1/operator/messages?status=resolved", &s.op_key);
        let push =
            list["messages"].as_array().unwrap().iter().find(|m| m["id"] == id.as_str()).unwrap()["push"].clone();
        if push["status"] == "delivered" {
            break;
        }
        assert!(Instant::now() < deadline, "delivery never recorded: {push}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn a_stalled_receiver_delays_only_its_own_pushes() {
    // issue 13 item 6: the worker used to claim a batch and wait for all of it
    let s = setup();
    admin_json(&s.dir, &["bind-callback", "--account", "acme", "--agent", "bot", "--host", "localhost"]);
    let (receiver, base) = start_receiver();
    let auth = json!({"scheme": "hmac", "secret_ref": "cb"});
    for i in 0..12 {
        submit_and_answer(&s, &ask_with_callback(&format!("st{i}"), &format!("{base}/stall"), auth.clone()));
    }
    std::thread::sleep(Duration::from_millis(300)); // the stalled attempts are in flight
    let fast = base.replace("127.0.0.1", "localhost") + "/fast";
    let resolved = Instant::now();
    submit_and_answer(&s, &ask_with_callback("fast", &fast, auth));
    let hit = receiver.wait_for("fast", 1).remove(0);
    assert!(hit.at - resolved < Duration::from_millis(1500), "the other host's push waited {:?}", hit.at - resolved);
    verify(&hit, &fast, &hmac_key("whsec-test-123")).unwrap();
    // the stalled host still gets every push, a few at a time
    receiver.wait_for("stall", 12);
}

#[test]
fn one_accounts_stalled_receiver_never_delays_another_accounts_push_to_the_same_host() {
    // issue 36: the per-host slots were shared by every account, so 12 stalled pushes of acme to
    // 127.0.0.1 held them all and globex's push to its own receiver there waited seconds
    let s = setup();
    let globex = admin_json(&s.dir, &["create-agent", "--account", "globex", "--agent", "bot"]);
    let globex_op = admin_json(&s.dir, &["create-operator", "--account", "globex", "--human", "alice"]);
    admin_json(&s.dir, &["bind-callback", "--account", "globex", "--agent", "bot", "--host", "127.0.0.1"]);
    admin_json(
        &s.dir,
        &["put-secret", "--account", "globex", "--agent", "bot", "--name", "cb", "--value", "whsec-globex"],
    );
    let (receiver, base) = start_receiver();
    let auth = json!({"scheme": "hmac", "secret_ref": "cb"});
    for i in 0..12 {
        submit_and_answer(&s, &ask_with_callback(&format!("st{i}"), &format!("{base}/stall"), auth.clone()));
    }
    std::thread::sleep(Duration::from_millis(300)); // acme's stalled attempts are in flight
    let url = format!("{base}/globex");
    let (status, ack) = submit(&s.hub, globex["api_key"].as_str().unwrap(), &ask_with_callback("g1", &url, auth));
    assert_eq!(status, 202, "{ack}");
    let id = ack["id"].as_str().unwrap();
    let resolved = Instant::now();
    let answer = json!({"resolution": "answered", "value": "ship"});
    let (status, _) =
        post(&s.hub, &format!("/v1/messages/{id}/resolve"), globex_op["api_key"].as_str().unwrap(), &answer);
    assert_eq!(status, 200);
    let hit = receiver.wait_for("globex", 1).remove(0);
    assert!(hit.at - resolved < Duration::from_millis(1500), "globex's push waited {:?}", hit.at - resolved);
    verify(&hit, &url, &hmac_key("whsec-globex")).unwrap();
    receiver.wait_for("stall", 12);
}

#[test]
fn a_pushed_state_is_byte_exact_and_still_verifies() {
    // issue 13 item 10: numbers beyond a double are pushed as submitted; the signature is over
    // the canonical form of what the receiver parses
    let s = setup();
    let (receiver, base) = start_receiver();
    let url = format!("{base}/big");
    let state = r#"{"n":123456789012345678901234567890,"sealed":"v1.blob"}"#;
    let mut env = ask_with_callback("big1", &url, json!({"scheme": "hmac", "secret_ref": "cb"}));
    env.as_object_mut().unwrap().remove("state");
    let mut text = env.to_string();
    text.insert_str(1, &format!(r#""state":{state},"#));
    let (status, ack) = try_request_raw(&s.hub.addr, "POST", "/v1/messages", &s.agent_key, text.as_bytes());
    assert_eq!(status, 202, "{ack}");
    let id = ack["id"].as_str().unwrap();
    let (status, _) = post(
        &s.hub,
        &format!("/v1/messages/{id}/resolve"),
        &s.op_key,
        &json!({"resolution": "answered", "value": "ship"}),
    );
    assert_eq!(status, 200);
    let hit = receiver.wait_for("big", 1).remove(0);
    let raw = String::from_utf8(hit.raw.clone()).unwrap();
    assert!(raw.contains(state), "{raw}");
    verify(&hit, &url, &hmac_key("whsec-test-123")).expect("verifies over the parsed body");
}

/// §9.4: a binding removed between submit and resolve refuses the push at delivery time (never
/// retried, nothing sent), and the typed reason is recorded for the operator.
#[test]
fn an_unbound_host_refuses_the_push_and_records_why() {
    let s = setup();
    let (receiver, base) = start_receiver();
    let env = ask_with_callback("unbound", &format!("{base}/unbound"), json!({"scheme": "hmac", "secret_ref": "cb"}));
    let (status, ack) = submit(&s.hub, &s.agent_key, &env);
    assert_eq!(status, 202, "{ack}");
    let id = ack["id"].as_str().unwrap().to_owned();
    admin_json(&s.dir, &["unbind-callback", "--account", "acme", "--agent", "bot", "--host", "127.0.0.1"]);
    let (status, _) =
        post(&s.hub, &format!("/v1/messages/{id}/resolve"), &s.op_key, &json!({"resolution": "declined"}));
    assert_eq!(status, 200);
    let deadline = Instant::now() + Duration::from_secs(10);
    let push = loop {
        let (_, list) = get(&s.hub, "/v1/operator/messages?status=resolved", &s.op_key);
        let push =
            list["messages"].as_array().unwrap().iter().find(|m| m["id"] == id.as_str()).unwrap()["push"].clone();
        if push["status"] != "pending" {
            break push;
        }
        assert!(Instant::now() < deadline, "the push was never settled: {push}");
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(push["status"], "failed");
    assert_eq!(push["last_error"], "refused: callback host 127.0.0.1 is not bound to agent bot");
    assert!(receiver.hits("unbound").is_empty(), "nothing was sent");
    // The agent that owns the ask sees the same track, and why, on its own GET.
    let (_, read) = get(&s.hub, &format!("/v1/messages/{id}"), &s.agent_key);
    assert_eq!(read["push"], push, "{read}");
}

/// Settings may be provisioned before an agent's first key, so they are stored — with a note on
/// stderr, since a name no credential ever had is more often a typo.
#[test]
fn a_binding_for_an_agent_never_issued_a_key_is_stored_with_a_note() {
    let dir = tempfile::tempdir().unwrap();
    let bind = |agent: &str| {
        admin_json_and_stderr(dir.path(), &["bind-callback", "--account", "acme", "--agent", agent, "--host", "h.test"])
    };
    let (out, said) = bind("bto");
    assert_eq!(out["bound"], true);
    assert!(said.contains("note: account `acme` has never issued agent `bto` a credential"), "{said}");
    admin_json(dir.path(), &["create-agent", "--account", "acme", "--agent", "bot"]);
    let (_, said) = bind("bot");
    assert!(!said.contains("note:"), "{said}");
    let (listed, said) = admin_json_and_stderr(dir.path(), &["list-bindings", "--account", "acme", "--agent", "bto"]);
    assert_eq!(listed["hosts"], json!(["h.test"]), "stored all the same");
    assert!(!said.contains("note:"), "reads never note: {said}");
}

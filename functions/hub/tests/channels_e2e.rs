//! Issue 20 end to end on the real binary: a routed ask is announced to a stand-in of Slack's Web
//! API (which records `chat.postMessage` / `chat.update` and answers like Slack) and to a generic
//! webhook whose signature the test checks with its own HMAC; Slack interaction requests in
//! Slack's real form (`payload=` form-encoded JSON, `v0=` signatures) — unsigned, wrongly signed,
//! stale, replayed, from an unlinked user, and good — resolve the ask exactly once, as the linked
//! operator; the post is then updated in place and the webhook told.

mod support;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use hmac::{Hmac, KeyInit, Mac};
use serde_json::{Value, json};
use sha2::Sha256;
use support::*;

const SIGNING_SECRET: &str = "8f742231b10e8888abcd99yyyzzz85a5";
const WEBHOOK_SECRET: &str = "whk-test-secret";

/// Every request the stand-ins received, by path.
#[derive(Clone, Default)]
struct Recorder(Arc<Mutex<Vec<(String, HeaderMap, Value)>>>);

impl Recorder {
    fn on(&self, path: &str) -> Vec<(HeaderMap, Value)> {
        self.0.lock().unwrap().iter().filter(|(p, ..)| p == path).map(|(_, h, b)| (h.clone(), b.clone())).collect()
    }
    fn wait_for(&self, path: &str, n: usize) -> Vec<(HeaderMap, Value)> {
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            let hits = self.on(path);
            if hits.len() >= n {
                return hits;
            }
            assert!(Instant::now() < deadline, "{path}: {} of {n} requests after 20 s", hits.len());
            std::thread::sleep(Duration::from_millis(25));
        }
    }
}

/// Slack's Web API as far as the Hub uses it: answers `{"ok": true, "channel", "ts"}` like Slack
/// (a refusal would be 200 with `ok: false`); also the `response_url` sink and the webhook.
async fn record(
    State(r): State<Recorder>,
    Path(path): Path<String>,
    headers: HeaderMap,
    body: Bytes,
) -> axum::Json<Value> {
    let parsed: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let n = {
        let mut hits = r.0.lock().unwrap();
        hits.push((path.clone(), headers.clone(), parsed.clone()));
        hits.len()
    };
    if path.starts_with("stall") {
        // a receiver that hangs (shorter than the Hub's 10 s send timeout)
        tokio::time::sleep(Duration::from_secs(3)).await;
    }
    if path == "webhook" {
        // the test's own HMAC over `{t}.{jti}.{body}` (not the Hub's signing code)
        let header = headers["ma2h-signature"].to_str().unwrap().to_owned();
        r.0.lock().unwrap().push(("webhook-verified".into(), headers, json!(verify_webhook(&header, &body))));
    }
    let channel = parsed.get("channel").cloned().unwrap_or(json!("C0HUB"));
    axum::Json(json!({"ok": true, "channel": channel, "ts": format!("1700000000.{n:06}"), "message": {"blocks": []}}))
}

fn verify_webhook(header: &str, body: &[u8]) -> bool {
    use base64::Engine as _;
    let part =
        |k: &str| header.split(',').find_map(|p| p.strip_prefix(&format!("{k}="))).unwrap_or_default().to_owned();
    let mut mac = Hmac::<Sha256>::new_from_slice(WEBHOOK_SECRET.as_bytes()).unwrap();
    mac.update(format!("{}.{}.", part("t"), part("jti")).as_bytes());
    mac.update(body);
    let expected = base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(mac.finalize().into_bytes());
    expected == part("v1")
}

fn start_standins() -> (Recorder, String) {
    let recorder = Recorder::default();
    let (tx, rx) = std::sync::mpsc::channel();
    let state = recorder.clone();
    std::thread::spawn(move || {
        let rt = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        rt.block_on(async move {
            let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
            tx.send(listener.local_addr().unwrap()).unwrap();
            let app = axum::Router::new().route("/x/{path}", axum::routing::post(record)).with_state(state);
            axum::serve(listener, app).await.unwrap();
        });
    });
    (recorder, format!("http://{}/x", rx.recv().unwrap()))
}

/// Slack's signature: `v0=` hex HMAC-SHA256 over `v0:{ts}:{body}` (computed here independently).
fn slack_signature(secret: &str, ts: i64, body: &str) -> String {
    let mut mac = Hmac::<Sha256>::new_from_slice(secret.as_bytes()).unwrap();
    mac.update(format!("v0:{ts}:{body}").as_bytes());
    format!("v0={}", hex::encode(mac.finalize().into_bytes()))
}

/// A `block_actions` interaction in Slack's form: `payload=<url-encoded JSON>`.
fn press(user: &str, value: &str, response_url: &str) -> String {
    let payload = json!({
        "type": "block_actions",
        "team": {"id": "T0TEAM", "domain": "acme"},
        "user": {"id": user, "username": "someone", "team_id": "T0TEAM"},
        "api_app_id": "A0APP",
        "response_url": response_url,
        "actions": [{"action_id": "ma2h_answer_0", "block_id": "ma2h_actions", "type": "button", "value": value,
            "action_ts": "1700000001.000100"}],
    });
    let encoded: String = ma2h_test_support::form_encode(&payload.to_string());
    format!("payload={encoded}")
}

/// POST an interaction with the given Slack headers; the status.
fn interact(hub: &Hub, body: &str, ts: Option<i64>, signature: Option<&str>) -> (u16, String) {
    let mut s = TcpStream::connect(&hub.addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let mut head = format!(
        "POST /v1/integrations/slack/interactions?account=acme HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\
         Content-Type: application/x-www-form-urlencoded\r\nContent-Length: {}\r\n",
        hub.addr,
        body.len()
    );
    if let Some(ts) = ts {
        head.push_str(&format!("X-Slack-Request-Timestamp: {ts}\r\n"));
    }
    if let Some(sig) = signature {
        head.push_str(&format!("X-Slack-Signature: {sig}\r\n"));
    }
    head.push_str("\r\n");
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(body.as_bytes()).unwrap();
    let mut raw = String::new();
    s.read_to_string(&mut raw).unwrap();
    let status = raw.split_whitespace().nth(1).unwrap().parse().unwrap();
    (status, raw.split_once("\r\n\r\n").map(|(_, b)| b.to_owned()).unwrap_or_default())
}

fn now() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() as i64
}

#[test]
fn a_routed_ask_is_announced_answered_from_slack_once_as_the_linked_operator_and_updated_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();
    let (standins, base) = start_standins();
    let agent = admin_json(path, &["create-agent", "--account", "acme", "--agent", "bot"]);
    let agent_key = agent["api_key"].as_str().unwrap().to_owned();
    let shown = admin_json(
        path,
        &[
            "channels",
            "add-slack",
            "--account",
            "acme",
            "--id",
            "ops",
            "--team",
            "T0TEAM",
            "--channel",
            "C0OPS",
            "--bot-token",
            "xoxb-test-token",
            "--signing-secret",
            SIGNING_SECRET,
        ],
    );
    assert!(!shown.to_string().contains("xoxb-test-token") && !shown.to_string().contains(SIGNING_SECRET), "{shown}");
    let webhook_url = format!("{base}/webhook");
    admin_json(
        path,
        &[
            "channels",
            "add-webhook",
            "--account",
            "acme",
            "--id",
            "pager",
            "--url",
            &webhook_url,
            "--secret",
            WEBHOOK_SECRET,
        ],
    );
    admin_json(path, &["channels", "add-route", "--account", "acme", "--id", "all", "--to", "ops", "--to", "pager"]);
    let hub = Hub::start_with(
        path,
        &[("MA2H_DEV_EGRESS_ALLOW", "127.0.0.0/8"), ("MA2H_SLACK_API_URL", &base), ("MA2H_CHANNELS_CACHE_MS", "0")],
    );

    let mut env = ask_envelope("slack-1");
    env["body"] = json!("Deploy <!channel> *now*?");
    // A right-to-left override would reorder what the human reads: it is shown, not obeyed.
    env["title"] = json!("Ship report\u{202E}fdp.exe?");
    env["state"] = json!({"secret": "never-shown"});
    env["request"]["allowed_resolvers"] = json!(["human:alice"]);
    let (status, ack) = submit(&hub, &agent_key, &env);
    assert_eq!(status, 202, "{ack}");
    let id = ack["id"].as_str().unwrap().to_owned();

    // announced in Slack: header, escaped body, one button per option carrying only id + value
    let (headers, post) = standins.wait_for("chat.postMessage", 1).remove(0);
    assert_eq!(headers["authorization"], "Bearer xoxb-test-token");
    assert_eq!(post["channel"], "C0OPS");
    let text = post.to_string();
    assert!(text.contains("&lt;!channel&gt;"), "mentions are defused: {text}");
    assert!(text.contains("Ship report[U+202E]fdp.exe?") && !text.contains('\u{202E}'), "{text}");
    assert!(!text.contains("never-shown") && !text.contains("slack-1"), "no state, no idempotency key: {text}");
    let actions = post["blocks"].as_array().unwrap().iter().find(|b| b["type"] == "actions").unwrap();
    let values: Vec<&str> =
        actions["elements"].as_array().unwrap().iter().filter_map(|e| e["value"].as_str()).collect();
    assert_eq!(values, vec![format!("{id} ship"), format!("{id} hold")]);
    // and to the webhook, signed (checked with the test's own HMAC)
    let created = standins.wait_for("webhook", 1).remove(0).1;
    assert_eq!(
        (created["type"].as_str(), created["message"]["id"].as_str()),
        (Some("message.created"), Some(id.as_str()))
    );
    assert!(!created.to_string().contains("never-shown"));
    assert_eq!(standins.on("webhook-verified")[0].1, json!(true));

    let sink = format!("{base}/response");
    let body = press("U0ALICE", &format!("{id} ship"), &sink);
    let ts = now();
    // refused: unsigned, wrongly signed, stale
    assert_eq!(interact(&hub, &body, None, None).0, 401);
    assert_eq!(interact(&hub, &body, Some(ts), Some(&slack_signature("wrong-secret", ts, &body))).0, 401);
    let old = ts - 600;
    assert_eq!(interact(&hub, &body, Some(old), Some(&slack_signature(SIGNING_SECRET, old, &body))).0, 401);
    let tampered = body.replace("ship", "hold");
    assert_eq!(interact(&hub, &tampered, Some(ts), Some(&slack_signature(SIGNING_SECRET, ts, &body))).0, 401);

    // signed, but the Slack user is not linked: nothing resolved, an ephemeral hint
    let (status, _) = interact(&hub, &body, Some(ts), Some(&slack_signature(SIGNING_SECRET, ts, &body)));
    assert_eq!(status, 200);
    let hint = standins.wait_for("response", 1).remove(0).1;
    assert_eq!(hint["response_type"], "ephemeral");
    assert!(hint["text"].as_str().unwrap().contains("not linked"), "{hint}");
    admin_json(path, &["create-operator", "--account", "acme", "--human", "alice"]);
    let (_, read) = get(&hub, &format!("/v1/messages/{id}"), &agent_key);
    assert_eq!(read["status"], "open", "an unlinked press resolves nothing");

    // linked: the press resolves as human:alice, once; the identical request replayed is refused
    admin_json(
        path,
        &["channels", "link-slack", "--account", "acme", "--team", "T0TEAM", "--user", "U0ALICE", "--human", "alice"],
    );
    let ts2 = now() + 1;
    let sig2 = slack_signature(SIGNING_SECRET, ts2, &body);
    assert_eq!(interact(&hub, &body, Some(ts2), Some(&sig2)).0, 200);
    assert_eq!(interact(&hub, &body, Some(ts2), Some(&sig2)).0, 401, "a replayed request is refused");
    let upper = format!("v0={}", sig2.trim_start_matches("v0=").to_uppercase());
    assert_eq!(interact(&hub, &body, Some(ts2), Some(&upper)).0, 401, "so is one with the MAC in upper case");
    let (_, read) = get(&hub, &format!("/v1/messages/{id}"), &agent_key);
    assert_eq!(read["status"], "answered", "{read}");
    assert_eq!(read["response"]["response"]["actor"], "human:alice");
    assert_eq!(read["response"]["response"]["value"], "ship");
    let resolution = read["response"]["resolution_id"].clone();

    // a second press (another user, linked too) loses: first terminal wins (§7)
    admin_json(
        path,
        &["channels", "link-slack", "--account", "acme", "--team", "T0TEAM", "--user", "U0BOB", "--human", "alice"],
    );
    let other = press("U0BOB", &format!("{id} hold"), &sink);
    let ts3 = now() + 2;
    assert_eq!(interact(&hub, &other, Some(ts3), Some(&slack_signature(SIGNING_SECRET, ts3, &other))).0, 200);
    let replies = standins.wait_for("response", 3);
    assert!(replies[2].1["text"].as_str().unwrap().contains("already answered"), "{:?}", replies[2].1);
    let (_, read) = get(&hub, &format!("/v1/messages/{id}"), &agent_key);
    assert_eq!(read["response"]["resolution_id"], resolution, "the first answer stands");

    // the post is updated in place: same channel and ts, buttons gone, who decided what
    let (_, update) = standins.wait_for("chat.update", 1).remove(0);
    assert_eq!(update["channel"], "C0OPS");
    assert_eq!(update["ts"], "1700000000.000001");
    let text = update.to_string();
    assert!(text.contains("answered") && text.contains("human:alice") && text.contains("Ship"), "{text}");
    assert!(update["blocks"].as_array().unwrap().iter().all(|b| b["type"] != "actions"), "no buttons left");
    // and the webhook hears the outcome
    let resolved = standins.wait_for("webhook", 2).remove(1).1;
    assert_eq!(resolved["type"], "message.resolved");
    assert_eq!(resolved["outcome"]["actor"], "human:alice");
    assert_eq!(standins.on("webhook-verified")[1].1, json!(true));
    std::thread::sleep(Duration::from_millis(600));
    assert_eq!(standins.on("chat.update").len(), 1, "one update per post");
    assert_eq!(standins.on("chat.postMessage").len(), 1);
}

#[test]
fn an_unrouted_ask_and_a_notify_announce_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();
    let (standins, base) = start_standins();
    let agent = admin_json(path, &["create-agent", "--account", "acme", "--agent", "bot"]);
    let key = agent["api_key"].as_str().unwrap().to_owned();
    let url = format!("{base}/webhook");
    admin_json(
        path,
        &["channels", "add-webhook", "--account", "acme", "--id", "pager", "--url", &url, "--secret", WEBHOOK_SECRET],
    );
    admin_json(
        path,
        &["channels", "add-route", "--account", "acme", "--id", "urgent", "--min-priority", "urgent", "--to", "pager"],
    );
    let hub = Hub::start_with(path, &[("MA2H_DEV_EGRESS_ALLOW", "127.0.0.0/8")]);
    assert_eq!(submit(&hub, &key, &ask_envelope("n-1")).0, 202);
    assert_eq!(submit(&hub, &key, &notify_envelope()).0, 202);
    let mut urgent = ask_envelope("u-1");
    urgent["priority"] = json!("urgent");
    assert_eq!(submit(&hub, &key, &urgent).0, 202);
    let hits = standins.wait_for("webhook", 1);
    std::thread::sleep(Duration::from_millis(700));
    assert_eq!(standins.on("webhook").len(), 1, "only the urgent ask matched the route");
    assert_eq!(hits[0].1["message"]["priority"], "urgent");
}

#[test]
fn one_accounts_stalled_webhook_never_delays_another_accounts_notification() {
    // issue 36: due items were worked 50 at a time and each batch waited for its slowest, so 60
    // items of acme to a hanging webhook held globex's notification back for seconds
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();
    let (standins, base) = start_standins();
    let mut keys = Vec::new();
    for (account, url) in [("acme", format!("{base}/stall")), ("globex", format!("{base}/webhook"))] {
        let agent = admin_json(path, &["create-agent", "--account", account, "--agent", "bot"]);
        keys.push(agent["api_key"].as_str().unwrap().to_owned());
        admin_json(
            path,
            &[
                "channels",
                "add-webhook",
                "--account",
                account,
                "--id",
                "pager",
                "--url",
                &url,
                "--secret",
                WEBHOOK_SECRET,
            ],
        );
        admin_json(path, &["channels", "add-route", "--account", account, "--id", "all", "--to", "pager"]);
    }
    let hub = Hub::start_with(path, &[("MA2H_DEV_EGRESS_ALLOW", "127.0.0.0/8")]);
    for i in 0..60 {
        assert_eq!(submit(&hub, &keys[0], &ask_envelope(&format!("a-{i}"))).0, 202);
    }
    std::thread::sleep(Duration::from_millis(700)); // acme's items are being worked
    let sent = Instant::now();
    assert_eq!(submit(&hub, &keys[1], &ask_envelope("g-1")).0, 202);
    standins.wait_for("webhook", 1);
    assert!(sent.elapsed() < Duration::from_millis(1500), "globex's notification waited {:?}", sent.elapsed());
    assert_eq!(standins.on("webhook-verified")[0].1, json!(true));
}

#[test]
fn a_channel_for_an_account_without_credentials_is_refused_and_names_the_accounts_that_exist() {
    // issue 39: `--account` defaults to `default`, while `make run`'s credentials live in `dev`:
    // the channel used to be stored where nobody is, exit 0, nothing ever announced.
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();
    admin_json(path, &["create-operator", "--account", "dev", "--human", "alice"]);
    let args = ["channels", "add-webhook", "--id", "pager", "--url", "https://events.example.com/x", "--secret", "s"];
    let out = base_command(path).arg("admin").args(args).output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "refused: {stderr}");
    assert!(stderr.contains("account `default` has no operator or agent") && stderr.contains("dev"), "{stderr}");
    let shown = admin_json(path, &["channels", "show"]);
    assert_eq!(shown["channels"], json!({}), "nothing was stored: {shown}");
    // on purpose, ahead of the account's first credential: stored
    let mut ahead: Vec<&str> = args.to_vec();
    ahead.extend(["--account", "later", "--allow-empty-account"]);
    let (shown, _) = admin_json_and_stderr(path, &ahead);
    assert!(shown["channels"]["pager"].is_object(), "{shown}");
    // and where the credentials are, no flag is needed
    let mut dev: Vec<&str> = args.to_vec();
    dev.extend(["--account", "dev"]);
    assert!(admin_json(path, &dev)["channels"]["pager"].is_object());
}

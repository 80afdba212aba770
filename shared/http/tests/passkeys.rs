//! Issue 41 on every backend (`MA2H_TEST_STORE`): passkeys. An operator adds a passkey from the
//! Devices page, logs in with it, and — where an approval policy says `passkey` — answers only
//! with a fresh assertion made for that message. Each ceremony's challenge serves once; another
//! origin, a removed passkey and a revoked operator are refused; a decline needs no passkey; the
//! API, email links and Slack are refused with the reason.
//!
//! The authenticator is a software one (`ma2h_test_support::authenticator`) answering as Chromium's
//! `PublicKeyCredential.toJSON()` does; the browser tests use Chromium's virtual authenticator.

mod common;

use axum::http::{Method, StatusCode};
use common::*;
use ma2h_core::decisions::manage::{self, PolicySpec};
use ma2h_test_support::authenticator::Authenticator;
use serde_json::{Value, json};

const ORIGIN: &str = "https://hub.test";

fn unescape(s: &str) -> String {
    s.replace("&quot;", "\"").replace("&lt;", "<").replace("&gt;", ">").replace("&#39;", "'").replace("&amp;", "&")
}

/// The value of attribute `name` (the first one in the page), unescaped.
fn attr(html: &str, name: &str) -> Option<String> {
    let marker = format!(r#"{name}=""#);
    let start = html.find(&marker)? + marker.len();
    Some(unescape(html[start..].split('"').next()?))
}

/// The value of the hidden input `name`.
fn hidden(html: &str, name: &str) -> String {
    let marker = format!(r#"name="{name}" value=""#);
    let start = html.find(&marker).unwrap_or_else(|| panic!("no {name} field in {html}")) + marker.len();
    unescape(html[start..].split('"').next().unwrap())
}

fn form<'a>(pairs: &'a [(&'a str, String)]) -> Vec<(&'a str, &'a str)> {
    pairs.iter().map(|(k, v)| (*k, v.as_str())).collect()
}

/// Add a passkey for the logged-in operator: (the page it started from, the POST's reply).
async fn add(t: &TestHub, cookie: &str, device: &mut Authenticator, origin: &str) -> (String, Page) {
    let page = t.page(Method::GET, "/inbox/devices", Some(cookie), None).await;
    assert_eq!(page.status, StatusCode::OK);
    let options: Value = serde_json::from_str(&attr(&page.html, "data-passkey").expect("creation options")).unwrap();
    let reply = device.create(&options, origin);
    let state = hidden(&page.html, "state");
    let pairs = [
        ("csrf", page.csrf()),
        ("action", "add".into()),
        ("state", state.clone()),
        ("response", reply.to_string()),
        ("name", "Work laptop".into()),
    ];
    let r = t.page(Method::POST, "/inbox/passkeys", Some(cookie), Some(&form(&pairs))).await;
    (state, r)
}

/// Log in with credential `which`; the reply.
async fn login(t: &TestHub, device: &Authenticator, which: usize, origin: &str) -> Page {
    let page = t.page(Method::GET, "/login", None, None).await;
    let login_cookie = cookie_pair(&page.set_cookies()[0]);
    let options: Value = serde_json::from_str(&attr(&page.html, "data-passkey").expect("request options")).unwrap();
    let pairs = [
        ("csrf", page.csrf()),
        ("next", "/inbox".into()),
        ("state", hidden(&page.html, "state")),
        ("response", device.get(which, &options, origin).to_string()),
    ];
    t.page(Method::POST, "/login/passkey", Some(&login_cookie), Some(&form(&pairs))).await
}

fn session_of(r: &Page) -> String {
    cookie_pair(&r.set_cookies().into_iter().find(|c| c.starts_with("ma2h_inbox=")).expect("a session cookie"))
}

#[tokio::test]
async fn a_passkey_added_from_the_devices_page_logs_in_once_per_challenge_and_only_from_the_hubs_origin() {
    let t = hub().await;
    let cookie = t.ui_login(&t.operator).await;
    let mut device = Authenticator::default();
    let (_, added) = add(&t, &cookie, &mut device, ORIGIN).await;
    assert_eq!(added.status, StatusCode::SEE_OTHER, "{}", added.html);
    let page = t.page(Method::GET, "/inbox/devices", Some(&cookie), None).await;
    assert!(page.html.contains("Work laptop") && page.html.contains("passkey-list"), "{}", page.html);
    // the next ceremony tells the authenticator it already holds one
    let options: Value = serde_json::from_str(&attr(&page.html, "data-passkey").unwrap()).unwrap();
    assert_eq!(options["excludeCredentials"].as_array().map(Vec::len), Some(1), "{options}");
    assert_eq!(options["rp"]["id"], "hub.test");
    assert_eq!(options["authenticatorSelection"]["residentKey"], "required", "a discoverable passkey");

    // a registration from another origin is refused (phishing relay)
    let mut other = Authenticator::default();
    let (_, foreign) = add(&t, &cookie, &mut other, "https://hub.test.evil.example").await;
    assert_eq!(foreign.status, StatusCode::FORBIDDEN, "{}", foreign.html);

    // log in with it: a session for alice
    let r = login(&t, &device, 0, ORIGIN).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.html);
    let session = session_of(&r);
    let inbox = t.page(Method::GET, "/inbox", Some(&session), None).await;
    assert_eq!(inbox.status, StatusCode::OK);
    assert!(inbox.html.contains("human:alice"), "logged in as alice");
    let used = t.page(Method::GET, "/inbox/devices", Some(&session), None).await;
    assert!(!used.html.contains(">never<"), "the passkey's last use is shown: {}", used.html);

    // the same assertion again (a replay with a fresh login form) is refused: its challenge is burnt
    let page = t.page(Method::GET, "/login", None, None).await;
    let login_cookie = cookie_pair(&page.set_cookies()[0]);
    let options: Value = serde_json::from_str(&attr(&page.html, "data-passkey").unwrap()).unwrap();
    let state = hidden(&page.html, "state");
    let assertion = device.get(0, &options, ORIGIN).to_string();
    let pairs =
        [("csrf", page.csrf()), ("next", "/inbox".into()), ("state", state.clone()), ("response", assertion.clone())];
    let first = t.page(Method::POST, "/login/passkey", Some(&login_cookie), Some(&form(&pairs))).await;
    assert_eq!(first.status, StatusCode::SEE_OTHER);
    let page2 = t.page(Method::GET, "/login", None, None).await;
    let cookie2 = cookie_pair(&page2.set_cookies()[0]);
    let pairs = [("csrf", page2.csrf()), ("next", "/inbox".into()), ("state", state), ("response", assertion)];
    let replay = t.page(Method::POST, "/login/passkey", Some(&cookie2), Some(&form(&pairs))).await;
    assert_eq!(replay.status, StatusCode::UNAUTHORIZED, "{}", replay.html);
    assert!(replay.html.contains("already used"), "{}", replay.html);

    // another origin's assertion is refused
    let evil = login(&t, &device, 0, "https://evil.example").await;
    assert_eq!(evil.status, StatusCode::UNAUTHORIZED, "{}", evil.html);
    assert!(evil.html.contains("not accepted"));
}

#[tokio::test]
async fn a_removed_passkey_and_a_revoked_operators_passkey_stop_at_once() {
    let t = hub().await;
    let cookie = t.ui_login(&t.operator).await;
    let mut device = Authenticator::default();
    assert_eq!(add(&t, &cookie, &mut device, ORIGIN).await.1.status, StatusCode::SEE_OTHER);
    assert_eq!(add(&t, &cookie, &mut device, ORIGIN).await.1.status, StatusCode::SEE_OTHER);
    let mine = ma2h_core::passkeys::of(
        &t.hub,
        &ma2h_protocol::ids::AccountId::parse("acme").unwrap(),
        &ma2h_protocol::ids::HumanId::parse("alice").unwrap(),
    )
    .await
    .unwrap();
    assert_eq!(mine.len(), 2);

    // remove the first: it logs in no more; the second still does
    let page = t.page(Method::GET, "/inbox/devices", Some(&cookie), None).await;
    let pairs = [("csrf", page.csrf()), ("action", "remove".into()), ("id", mine[0].id.clone())];
    let removed = t.page(Method::POST, "/inbox/passkeys", Some(&cookie), Some(&form(&pairs))).await;
    assert_eq!(removed.status, StatusCode::SEE_OTHER);
    let r = login(&t, &device, 0, ORIGIN).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert!(r.html.contains("not registered"), "{}", r.html);
    assert_eq!(login(&t, &device, 1, ORIGIN).await.status, StatusCode::SEE_OTHER);
    // removing it again (or someone else's id) is a 404
    let again = t.page(Method::POST, "/inbox/passkeys", Some(&cookie), Some(&form(&pairs))).await;
    assert_eq!(again.status, StatusCode::NOT_FOUND);

    // alice's keys are revoked: her passkey no longer logs in
    for c in ma2h_core::admin::list(&t.hub).await.unwrap() {
        if c.principal == "human:alice" {
            ma2h_core::admin::revoke(&t.hub, &c.credential_id).await.unwrap();
        }
    }
    let r = login(&t, &device, 1, ORIGIN).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    assert!(r.html.contains("no active operator key"), "{}", r.html);
}

/// A policy that asks a passkey for high asks (alice may answer them).
async fn passkey_policy(t: &TestHub) {
    let spec = PolicySpec {
        id: "keyed".into(),
        min_priority: Some("high".into()),
        approvals: 1,
        passkey: true,
        ..Default::default()
    };
    manage::put(&t.hub, "admin", "acme", spec).await.unwrap();
}

fn operator_ask(key: &str) -> Value {
    with(ask(key), "/request/allowed_resolvers", json!(["human:alice"]))
}

#[tokio::test]
async fn a_passkey_policy_applies_an_answer_only_with_a_fresh_assertion_for_that_message() {
    let mut s = settings();
    s.channels.config_cache = std::time::Duration::ZERO;
    let t = hub_with(s).await;
    passkey_policy(&t).await;
    let cookie = t.ui_login(&t.operator).await;
    let id = t.submit_ok(operator_ask("pk1")).await;
    let other = t.submit_ok(operator_ask("pk2")).await;

    // the API refuses an answer; a decline needs no passkey
    let api = t.resolve(&t.operator, &id, json!({"resolution": "answered", "value": "ship"})).await;
    assert_eq!(api.status, StatusCode::FORBIDDEN, "{}", api.body);
    assert_eq!(api.code(), "not_authorized");
    assert!(api.message().contains("passkey"), "{}", api.message());

    // the inbox form carries the step-up; without the assertion the answer is refused, and said
    let page = t.page(Method::GET, &format!("/inbox/{id}"), Some(&cookie), None).await;
    assert!(page.html.contains("data-step-up=") && page.html.contains("step-up-note"), "{}", page.html);
    let answer = |state: String, response: String, csrf: String| {
        [
            ("csrf", csrf),
            ("value", "ship".into()),
            ("act", "answered".into()),
            ("passkey_state", state),
            ("passkey_response", response),
        ]
    };
    let pairs = answer(hidden(&page.html, "passkey_state"), String::new(), page.csrf());
    let bare = t.page(Method::POST, &format!("/inbox/{id}/resolve"), Some(&cookie), Some(&form(&pairs))).await;
    assert_eq!(bare.status, StatusCode::FORBIDDEN, "{}", bare.html);
    assert!(bare.html.contains("needs a passkey"));

    // alice adds a passkey and answers with it
    let mut device = Authenticator::default();
    assert_eq!(add(&t, &cookie, &mut device, ORIGIN).await.1.status, StatusCode::SEE_OTHER);
    let page = t.page(Method::GET, &format!("/inbox/{id}"), Some(&cookie), None).await;
    let options: Value = serde_json::from_str(&attr(&page.html, "data-step-up").unwrap()).unwrap();
    let state = hidden(&page.html, "passkey_state");
    let assertion = device.get(0, &options, ORIGIN).to_string();

    // an assertion made for this message does not answer another one
    let other_page = t.page(Method::GET, &format!("/inbox/{other}"), Some(&cookie), None).await;
    let pairs = answer(state.clone(), assertion.clone(), other_page.csrf());
    let misused = t.page(Method::POST, &format!("/inbox/{other}/resolve"), Some(&cookie), Some(&form(&pairs))).await;
    assert_eq!(misused.status, StatusCode::FORBIDDEN, "{}", misused.html);
    assert!(misused.html.contains("another answer"), "{}", misused.html);
    assert_eq!(t.get(&t.agent, &other).await.body["status"], "open");

    let fresh = t.page(Method::GET, &format!("/inbox/{id}"), Some(&cookie), None).await;
    let options: Value = serde_json::from_str(&attr(&fresh.html, "data-step-up").unwrap()).unwrap();
    let pairs = answer(hidden(&fresh.html, "passkey_state"), device.get(0, &options, ORIGIN).to_string(), fresh.csrf());
    let ok = t.page(Method::POST, &format!("/inbox/{id}/resolve"), Some(&cookie), Some(&form(&pairs))).await;
    assert_eq!(ok.status, StatusCode::SEE_OTHER, "{}", ok.html);
    let read = t.get(&t.agent, &id).await;
    assert_eq!(read.body["status"], "answered");
    assert_eq!(read.body["response"]["response"]["actor"], "human:alice");
    assert_eq!(read.body["response"]["response"]["value"], "ship");

    // a decline of the other ask goes through without one
    let declined = t.resolve(&t.operator, &other, json!({"resolution": "declined"})).await;
    assert_eq!(declined.status, StatusCode::OK, "{}", declined.body);
    // a low ask is outside the policy: answered as before
    let low = t.submit_ok(with(operator_ask("pk3"), "/priority", json!("normal"))).await;
    let r = t.resolve(&t.operator, &low, json!({"resolution": "answered", "value": "hold"})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
}

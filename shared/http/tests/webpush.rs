//! Issue 41 on every backend (`MA2H_TEST_STORE`): Web Push as a channel. An operator subscribes a
//! device from the Devices page; a routed ask is pushed to it encrypted per RFC 8291 and signed
//! with the deployment's VAPID key (both checked here as a push service and the browser would);
//! a confirm ask carries one single-use answer token per option, which the service worker POSTs
//! to `/inbox/push/answer`: it answers once, as that operator. Sensitive asks put nothing in a
//! payload; a gone device (410) is removed; a removed device's buttons and a revoked operator's
//! devices stop at once; the outcome replaces the notification.

mod common;

use std::sync::Arc;

use axum::http::{Method, StatusCode};
use base64::Engine as _;
use chrono::Duration;
use common::recording::Recording;
use common::*;
use ma2h_core::channels::manage::{self, RouteSpec};
use ma2h_core::channels::notify;
use ma2h_core::channels::sender::Notifier;
use serde_json::{Value, json};
use web_push_native::p256;

const ENDPOINT: &str = "https://push.test/sub/1";

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes)
}

fn unb64(s: &str) -> Vec<u8> {
    base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(s).unwrap()
}

/// A browser's side of a subscription: its key pair and auth secret.
struct Browser {
    key: p256::SecretKey,
    auth: [u8; 16],
}

impl Browser {
    fn new(seed: u8) -> Self {
        let mut bytes = [seed; 32];
        bytes[0] = 1;
        Self { key: p256::SecretKey::from_slice(&bytes).unwrap(), auth: [seed; 16] }
    }
    fn subscription(&self, endpoint: &str) -> Value {
        use p256::elliptic_curve::sec1::ToEncodedPoint as _;
        let public = self.key.public_key().to_encoded_point(false);
        json!({"endpoint": endpoint, "keys": {"p256dh": b64(public.as_bytes()), "auth": b64(&self.auth)}})
    }

    /// RFC 8291: decrypt one `aes128gcm` push body.
    fn decrypt(&self, body: &[u8]) -> Value {
        use aes_gcm::aead::{Aead as _, KeyInit as _};
        use hmac::{KeyInit as _, Mac as _};
        use p256::elliptic_curve::sec1::ToEncodedPoint as _;
        let mac = |key: &[u8], data: &[&[u8]]| -> Vec<u8> {
            let mut m = hmac::Hmac::<sha2::Sha256>::new_from_slice(key).unwrap();
            for d in data {
                m.update(d);
            }
            m.finalize().into_bytes().to_vec()
        };
        let (salt, idlen) = (&body[..16], body[20] as usize);
        assert_eq!(idlen, 65, "the sender's key is an uncompressed P-256 point");
        let server = &body[21..21 + idlen];
        let ciphertext = &body[21 + idlen..];
        let server_key = p256::PublicKey::from_sec1_bytes(server).unwrap();
        let shared = p256::ecdh::diffie_hellman(self.key.to_nonzero_scalar(), server_key.as_affine());
        let ua_public = self.key.public_key().to_encoded_point(false);
        let prk_key = mac(&self.auth, &[shared.raw_secret_bytes().as_slice()]);
        let ikm = mac(&prk_key, &[b"WebPush: info\0", ua_public.as_bytes(), server, &[1]]);
        let prk = mac(salt, &[&ikm]);
        let cek = &mac(&prk, &[b"Content-Encoding: aes128gcm\0\x01"])[..16];
        let nonce = &mac(&prk, &[b"Content-Encoding: nonce\0\x01"])[..12];
        let cipher = aes_gcm::Aes128Gcm::new_from_slice(cek).unwrap();
        let padded = cipher.decrypt(aes_gcm::Nonce::from_slice(nonce), ciphertext).unwrap();
        let end = padded.iter().rposition(|b| *b != 0).unwrap();
        assert_eq!(padded[end], 2, "one record, the last");
        serde_json::from_slice(&padded[..end]).unwrap()
    }
}

/// alice logged in, a Web Push channel `phones` for her, the only route; a sender recording pushes.
async fn setup() -> (TestHub, String, Arc<Recording>, Notifier) {
    let mut settings = settings();
    settings.channels.config_cache = std::time::Duration::ZERO;
    let t = hub_with(settings).await;
    manage::put_webpush(&t.hub, "admin", "acme", "phones", &["alice".into()]).await.unwrap();
    let route = RouteSpec { id: "all".into(), targets: vec!["phones".into()], ..RouteSpec::default() };
    manage::put_route(&t.hub, "admin", "acme", route).await.unwrap();
    let cookie = t.ui_login(&t.operator).await;
    let sent = Arc::new(Recording::default());
    (t, cookie, sent.clone(), Notifier::new(sent))
}

/// Subscribe `browser` at `endpoint` from the Devices page.
async fn subscribe(t: &TestHub, cookie: &str, browser: &Browser, endpoint: &str) -> axum::http::StatusCode {
    let page = t.page(Method::GET, "/inbox/devices", Some(cookie), None).await;
    assert_eq!(page.status, StatusCode::OK);
    let sub = browser.subscription(endpoint).to_string();
    let form = [
        ("csrf", page.csrf()),
        ("action", "subscribe".into()),
        ("label", "Chrome on Android".into()),
        ("subscription", sub),
    ];
    let pairs: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
    t.page(Method::POST, "/inbox/devices", Some(cookie), Some(&pairs)).await.status
}

fn confirm(key: &str) -> Value {
    with(
        with(ask(key), "/request", json!({"mode": "confirm", "allowed_resolvers": ["human:alice"]})),
        "/expires_at",
        json!(ts(start() + Duration::hours(1))),
    )
}

/// A push as sent: its headers and (encrypted) body.
type Push = (Vec<(String, String)>, Vec<u8>);

/// The pushes sent, oldest first.
fn pushes(sent: &Recording) -> Vec<Push> {
    sent.raw.lock().unwrap().iter().map(|r| (r.headers.clone(), r.body.clone())).collect()
}

fn header<'a>(headers: &'a [(String, String)], name: &str) -> Option<&'a str> {
    headers.iter().find(|(n, _)| n.eq_ignore_ascii_case(name)).map(|(_, v)| v.as_str())
}

#[tokio::test]
async fn a_pushed_ask_is_encrypted_to_the_device_signed_with_vapid_and_its_button_answers_once() {
    let (t, cookie, sent, notifier) = setup().await;
    let browser = Browser::new(7);
    assert_eq!(subscribe(&t, &cookie, &browser, ENDPOINT).await, StatusCode::SEE_OTHER);
    let devices = t.page(Method::GET, "/inbox/devices", Some(&cookie), None).await;
    assert!(devices.html.contains("Chrome on Android") && devices.html.contains("push.test"));
    assert!(!devices.html.contains("sub/1"), "the endpoint (a capability URL) is never shown");

    let id = t.submit_ok(confirm("wp1")).await;
    notify::work_due(&t.hub, &notifier, 10).await.unwrap();
    let all = pushes(&sent);
    assert_eq!(all.len(), 1, "one device, one push");
    let (headers, body) = &all[0];
    assert_eq!(header(headers, "content-encoding"), Some("aes128gcm"));
    assert_eq!(header(headers, "urgency"), Some("high"), "a high ask");
    assert!(header(headers, "ttl").is_some_and(|v| v.parse::<u64>().is_ok()));
    // VAPID (RFC 8292): `vapid t=<JWT>, k=<key>`, the JWT verified with the key the page subscribes with
    let auth = header(headers, "authorization").unwrap();
    let (jwt, k) = auth.strip_prefix("vapid t=").unwrap().split_once(", k=").unwrap();
    assert_eq!(k, ma2h_core::channels::webpush::public_key(&t.hub));
    let devpage = t.page(Method::GET, "/inbox/devices", Some(&cookie), None).await;
    assert!(devpage.html.contains(&format!("data-key=\"{k}\"")), "the Devices page subscribes with it");
    {
        use web_push_native::jwt_simple::prelude::*;
        let key = ES256PublicKey::from_bytes(&unb64(k)).unwrap();
        let opts = VerificationOptions {
            allowed_audiences: Some(HashSet::from_strings(&["https://push.test"])),
            ..Default::default()
        };
        let claims =
            key.verify_token::<NoCustomClaims>(jwt, Some(opts)).expect("a valid VAPID JWT for the push service");
        assert!(claims.subject.is_some_and(|s| s.starts_with("mailto:") || s.starts_with("https://")));
    }
    let payload = browser.decrypt(body);
    assert_eq!(payload["id"], id.as_str());
    assert_eq!(payload["title"], "Ship to prod?");
    assert_eq!(payload["url"], format!("https://hub.test/inbox/{id}"));
    assert!(!payload.to_string().contains("v1.opaque"), "never `state`");
    let buttons = payload["actions"].as_array().unwrap();
    assert_eq!(buttons.iter().map(|b| b["title"].as_str().unwrap()).collect::<Vec<_>>(), ["Approve", "Deny"]);

    // a button: the worker POSTs its token; once
    let press = |token: &str| t.call(Method::POST, "/inbox/push/answer", None, Some(json!({"token": token})));
    let r = press(buttons[0]["token"].as_str().unwrap()).await;
    assert_eq!((r.status, &r.body["outcome"]), (StatusCode::OK, &json!("answered")), "{}", r.body);
    let read = t.get(&t.agent, &id).await;
    assert_eq!(read.body["response"]["response"]["actor"], "human:alice");
    let again = press(buttons[0]["token"].as_str().unwrap()).await;
    assert_eq!((again.status, &again.body["outcome"]), (StatusCode::CONFLICT, &json!("already_used")));
    let other = press(buttons[1]["token"].as_str().unwrap()).await;
    assert_eq!(other.body["outcome"], "refused", "the race is lost, and said: {}", other.body);
    assert!(other.body["reason"].as_str().unwrap().contains("already"));
    // a GET never answers; a forged token is invalid
    let get = t.call(Method::GET, "/inbox/push/answer", None, None).await;
    assert_eq!(get.status, StatusCode::METHOD_NOT_ALLOWED);
    assert_eq!(press("AAAA").await.body["outcome"], "invalid");

    // the outcome replaces the notification
    notify::work_due(&t.hub, &notifier, 10).await.unwrap();
    let all = pushes(&sent);
    assert_eq!(all.len(), 2);
    let outcome = browser.decrypt(&all[1].1);
    assert_eq!((outcome["kind"].as_str(), outcome["tag"].as_str()), (Some("outcome"), Some(id.as_str())));
    assert!(outcome.get("actions").is_none());
}

#[tokio::test]
async fn nothing_sensitive_goes_in_a_payload_bidi_controls_are_shown_and_big_selects_get_no_buttons() {
    let (t, cookie, sent, notifier) = setup().await;
    let browser = Browser::new(9);
    subscribe(&t, &cookie, &browser, ENDPOINT).await;
    let mut tricky = confirm("wp1b");
    tricky["title"] = json!("Open report\u{202E}fdp.exe");
    t.submit_ok(tricky).await;
    let mut secret = confirm("wp2");
    secret["sensitive"] = json!(true);
    secret["body"] = json!("the production password is hunter2");
    t.submit_ok(secret).await;
    let mut big = ask("wp3");
    big["request"] = json!({"mode": "select", "allowed_resolvers": ["human:alice"], "options": [
        {"value": "a", "label": "A"}, {"value": "b", "label": "B"}, {"value": "c", "label": "C"}]});
    t.submit_ok(big).await;
    notify::work_due(&t.hub, &notifier, 10).await.unwrap();
    let mut payloads: Vec<Value> = pushes(&sent).iter().map(|(_, b)| browser.decrypt(b)).collect();
    assert_eq!(payloads.len(), 3);
    let at = payloads.iter().position(|p| p["title"].as_str().is_some_and(|t| t.starts_with("Open report"))).unwrap();
    let bidi = payloads.remove(at);
    assert_eq!(bidi["title"], "Open report[U+202E]fdp.exe", "a bidi control is shown, not obeyed");
    assert!(bidi.get("actions").is_some(), "an ordinary confirm keeps its buttons");
    for p in &payloads {
        assert!(p.get("actions").is_none(), "sensitive, or a select of three: {p}");
        assert!(!p.to_string().contains("hunter2"), "{p}");
    }
    assert!(payloads.iter().any(|p| p["body"] == "Sensitive: open it in the inbox."));
}

#[tokio::test]
async fn a_gone_device_is_removed_and_a_removed_device_or_revoked_operator_answers_nothing() {
    let (t, cookie, sent, notifier) = setup().await;
    let (one, two) = (Browser::new(3), Browser::new(4));
    subscribe(&t, &cookie, &one, "https://push.test/sub/one").await;
    subscribe(&t, &cookie, &two, "https://push.test/sub/two").await;
    *sent.webhook_status.lock().unwrap() = 410; // the push service: both unsubscribed
    t.submit_ok(confirm("wp4")).await;
    notify::work_due(&t.hub, &notifier, 10).await.unwrap();
    let page = t.page(Method::GET, "/inbox/devices", Some(&cookie), None).await;
    assert!(page.html.contains("No device yet."), "both removed on 410");

    *sent.webhook_status.lock().unwrap() = 201;
    subscribe(&t, &cookie, &one, "https://push.test/sub/one").await;
    let id = t.submit_ok(confirm("wp5")).await;
    notify::work_due(&t.hub, &notifier, 10).await.unwrap();
    let last = pushes(&sent).pop().unwrap();
    let token = one.decrypt(&last.1)["actions"][0]["token"].as_str().unwrap().to_owned();
    // remove the device: its notification's buttons stop
    let page = t.page(Method::GET, "/inbox/devices", Some(&cookie), None).await;
    let dev = page.html.split("name=\"id\" value=\"").nth(1).unwrap().split('"').next().unwrap().to_owned();
    let form = [("csrf", page.csrf()), ("action", "remove".into()), ("id", dev)];
    let pairs: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
    assert_eq!(t.page(Method::POST, "/inbox/devices", Some(&cookie), Some(&pairs)).await.status, StatusCode::SEE_OTHER);
    let r = t.call(Method::POST, "/inbox/push/answer", None, Some(json!({"token": token}))).await;
    assert_eq!(r.body["outcome"], "refused", "{}", r.body);
    assert!(r.body["reason"].as_str().unwrap().contains("can no longer answer from this device"));
    assert_eq!(t.get(&t.agent, &id).await.body["status"], "open");

    // a revoked operator: a delivered button answers nothing, and no push goes out
    subscribe(&t, &cookie, &two, "https://push.test/sub/two").await;
    let id = t.submit_ok(confirm("wp6")).await;
    notify::work_due(&t.hub, &notifier, 10).await.unwrap();
    let token = two.decrypt(&pushes(&sent).pop().unwrap().1)["actions"][0]["token"].as_str().unwrap().to_owned();
    let before = pushes(&sent).len();
    let creds = t.hub.credentials.list_credentials().await.unwrap();
    let alice = creds.iter().find(|c| c.principal.name() == "alice").unwrap();
    ma2h_core::admin::revoke(&t.hub, &alice.id).await.unwrap();
    let r = t.call(Method::POST, "/inbox/push/answer", None, Some(json!({"token": token}))).await;
    assert_eq!(r.body["outcome"], "refused", "{}", r.body);
    assert_eq!(t.get(&t.agent, &id).await.body["status"], "open");
    t.submit_ok(confirm("wp7")).await;
    notify::work_due(&t.hub, &notifier, 10).await.unwrap();
    assert_eq!(pushes(&sent).len(), before, "nothing pushed to a revoked operator's devices");
}

#[tokio::test]
async fn subscriptions_are_checked_and_an_agent_has_no_devices_page() {
    let (t, cookie, _, _) = setup().await;
    let bad = Browser::new(5);
    assert_eq!(subscribe(&t, &cookie, &bad, "ftp://push.test/x").await, StatusCode::UNPROCESSABLE_ENTITY);
    let page = t.page(Method::GET, "/inbox/devices", Some(&cookie), None).await;
    let form = [
        ("csrf", page.csrf()),
        ("action", "subscribe".into()),
        ("subscription", r#"{"endpoint":"https://push.test/x","keys":{"p256dh":"AAAA","auth":"AAAA"}}"#.into()),
    ];
    let pairs: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let r = t.page(Method::POST, "/inbox/devices", Some(&cookie), Some(&pairs)).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "keys that are not a P-256 key and a 16-byte secret");
    // the same browser twice is one device
    let b = Browser::new(6);
    subscribe(&t, &cookie, &b, ENDPOINT).await;
    subscribe(&t, &cookie, &b, ENDPOINT).await;
    let page = t.page(Method::GET, "/inbox/devices", Some(&cookie), None).await;
    assert_eq!(page.html.matches("action\" value=\"remove\"").count(), 1);
}

#[tokio::test]
async fn under_a_passkey_policy_a_notification_button_opens_the_message_to_confirm_there() {
    let (t, cookie, sent, notifier) = setup().await;
    let browser = Browser::new(9);
    assert_eq!(subscribe(&t, &cookie, &browser, ENDPOINT).await, StatusCode::SEE_OTHER);
    let spec = ma2h_core::decisions::manage::PolicySpec {
        id: "keyed".into(),
        approvals: 1,
        passkey: true,
        ..Default::default()
    };
    ma2h_core::decisions::manage::put(&t.hub, "admin", "acme", spec).await.unwrap();
    let id = t.submit_ok(confirm("wp-pk")).await;
    notify::work_due(&t.hub, &notifier, 10).await.unwrap();
    let payload = browser.decrypt(&pushes(&sent)[0].1);
    let token = payload["actions"][0]["token"].as_str().unwrap().to_owned();
    let r = t.call(Method::POST, "/inbox/push/answer", None, Some(json!({"token": token}))).await;
    assert_eq!((r.status, &r.body["outcome"]), (StatusCode::FORBIDDEN, &json!("step_up")), "{}", r.body);
    assert_eq!(r.body["url"], format!("/inbox/{id}#answer"), "the worker opens the message's answer form");
    assert_eq!(t.get(&t.agent, &id).await.body["status"], "open", "nothing was answered");
    let page = t.page(Method::GET, &format!("/inbox/{id}"), Some(&cookie), None).await;
    assert!(page.html.contains("data-step-up="), "where the answer is confirmed with a passkey");
}

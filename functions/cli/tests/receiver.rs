//! The receiver side end to end: `ma2h listen` re-invoked by a real signed push (§2.1), and
//! `ma2h verify` / `ma2h open-state` rejecting tampered bodies, tampered state, replayed `jti`,
//! out-of-window `t` and duplicate resolutions (§9.2, §9.3, §6).

mod support;

use std::io::Write;
use std::process::Stdio;

use ma2h_protocol::signature::{self, SignedContext, SigningKey};
use serde_json::{Value, json};
use support::*;

const URL: &str = "https://agent.example/ma2h/resume";

#[test]
fn listen_is_reinvoked_by_the_signed_push_and_the_resumed_command_opens_the_sealed_state() {
    let hub = TestHub::start();
    let out_file = hub.tmp.path().join("resumed.json");
    let exec = format!("\"{BIN}\" open-state > '{}'", out_file.display());
    let (mut listener, url) = spawn_listen(&mut hub.ma2h(&["listen", "--port", "0", "--once", "--exec", &exec]));

    // run #1: seal state, ask with the re-invoke callback, exit
    let out =
        hub.run(&["ask", "Resume deploy?", "--state", r#"{"step":2,"pr":"refs/pull/7"}"#, "--callback-url", &url]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let id = stdout(&out);
    let (_, read) = http(&hub.addr, "GET", &format!("/v1/messages/{id}"), &hub.agent_key, None);
    assert!(!read.to_string().contains("refs/pull/7"), "the Hub only ever sees sealed state");

    // the human answers; the Hub pushes; listen verifies and runs run #2 once
    assert_eq!(hub.resolve(&id, answered("approve")).0, 200);
    let status = wait_child(&mut listener.0, 20);
    assert_eq!(status.code(), Some(0));
    let resumed: Value = serde_json::from_str(&std::fs::read_to_string(&out_file).unwrap()).unwrap();
    assert_eq!(resumed, json!({"step": 2, "pr": "refs/pull/7"}));
}

/// A Response signed for `url` exactly as the Hub signs pushes.
fn signed(body: &Value, url: &str, jti: &str, t: i64, secret: &str) -> String {
    let ctx = SignedContext::for_response(body, url, jti, &t.to_string()).unwrap();
    let v1 = signature::sign(&ctx, &SigningKey::Hmac(secret.as_bytes().to_vec()));
    signature::header_value(&ctx.t, jti, &v1)
}

fn response_body(state: Value) -> Value {
    json!({"ma2h_version": "0.5", "in_reply_to": "msg_1", "resolution_id": "res_1", "resolution": "answered",
        "agent": {"id": "bot", "run_id": "r"}, "defaulted": false, "state": state,
        "response": {"value": "approve", "edited": false, "actor": "human:alice", "resolved_at": "2026-06-04T18:04:11Z"}})
}

/// `ma2h verify` with `body` on stdin.
fn verify(hub: &TestHub, body: &Value, header: &str, extra: &[&str]) -> std::process::Output {
    let mut args = vec!["verify", "--callback-url", URL, "--signature", header];
    args.extend_from_slice(extra);
    let mut child = hub
        .ma2h(&args)
        .env_remove("MA2H_SIGNING_SECRET")
        .env("MA2H_CALLBACK_SECRET", "whsec-1")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&serde_json::to_vec(body).unwrap()).unwrap();
    child.wait_with_output().unwrap()
}

fn now() -> i64 {
    ma2h_client::now_unix()
}

#[test]
fn verify_accepts_once_then_rejects_a_replayed_jti_and_dedups_a_retried_resolution() {
    let hub = TestHub::start();
    let body = response_body(json!(null));
    let h1 = signed(&body, URL, "jti_1", now(), "whsec-1");
    let out = verify(&hub, &body, &h1, &[]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(json_out(&out)["resolution_id"], "res_1", "the verified body is printed");

    let out = verify(&hub, &body, &h1, &[]);
    assert_eq!(code(&out), 5, "replayed jti: {}", stderr(&out));
    assert!(stderr(&out).contains("replayed jti"));

    let h2 = signed(&body, URL, "jti_2", now(), "whsec-1");
    let out = verify(&hub, &body, &h2, &[]);
    assert_eq!(code(&out), 6, "duplicate resolution: {}", stderr(&out));
    assert!(stdout(&out).is_empty(), "nothing to act on");
}

#[test]
fn verify_rejects_a_tampered_body_a_foreign_url_and_an_out_of_window_t() {
    let hub = TestHub::start();
    let body = response_body(json!({"n": 0.1}));
    let h = signed(&body, URL, "jti_1", now(), "whsec-1");
    let mut tampered = body.clone();
    tampered["response"]["value"] = json!("deny");
    assert_eq!(code(&verify(&hub, &tampered, &h, &[])), 5);
    let mut tampered_state = body.clone();
    tampered_state["state"]["n"] = json!(0.2);
    assert_eq!(code(&verify(&hub, &tampered_state, &h, &[])), 5);
    let foreign = signed(&body, "https://evil.example/cb", "jti_2", now(), "whsec-1");
    assert_eq!(code(&verify(&hub, &body, &foreign, &[])), 5);
    let stale = signed(&body, URL, "jti_3", now() - 300, "whsec-1");
    let out = verify(&hub, &body, &stale, &[]);
    assert_eq!(code(&out), 5);
    assert!(stderr(&out).contains("outside"), "{}", stderr(&out));
    // none of those poisoned the cache: the genuine delivery is accepted
    assert_eq!(code(&verify(&hub, &body, &h, &[])), 0);
}

#[test]
fn verify_accepts_either_key_during_rotation_and_needs_some_key() {
    let hub = TestHub::start();
    let body = response_body(json!(null));
    let h = signed(&body, URL, "jti_1", now(), "whsec-old");
    assert_eq!(code(&verify(&hub, &body, &h, &[])), 5, "only the new key held");
    assert_eq!(code(&verify(&hub, &body, &h, &["--key", "whsec-old"])), 0, "old + new held");

    let out = hub
        .ma2h(&["verify", "--callback-url", URL, "--signature", &h])
        .env_remove("MA2H_SIGNING_SECRET")
        .stdin(Stdio::null())
        .output()
        .unwrap();
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("no verification key"), "{}", stderr(&out));
}

#[test]
fn sealed_state_opens_only_untampered_with_the_right_key_and_agent() {
    let hub = TestHub::start();
    let plain = write(hub.tmp.path(), "plain.json", r#"{"step":1}"#);
    let out = hub.run(&["seal-state", "--in", plain.to_str().unwrap()]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let sealed = json_out(&out);
    assert!(!stdout(&out).contains("step"));

    // opened from a Response body carrying it
    let resp = write(hub.tmp.path(), "resp.json", &response_body(sealed.clone()).to_string());
    let out = hub.run(&["open-state", "--in", resp.to_str().unwrap()]);
    assert_eq!((code(&out), json_out(&out)), (0, json!({"step": 1})));

    let mut bad = sealed.clone();
    let ct = bad["ciphertext"].as_str().unwrap();
    bad["ciphertext"] = json!(format!("{}{}", if ct.starts_with('A') { "B" } else { "A" }, &ct[1..]));
    let tampered = write(hub.tmp.path(), "tampered.json", &bad.to_string());
    let out = hub.run(&["open-state", "--in", tampered.to_str().unwrap()]);
    assert_eq!(code(&out), 7, "{}", stderr(&out));
    assert!(stdout(&out).is_empty(), "nothing returned before verification");

    let good = write(hub.tmp.path(), "sealed.json", &sealed.to_string());
    let other_agent =
        hub.ma2h(&["open-state", "--in", good.to_str().unwrap()]).env("MA2H_AGENT_ID", "other").output().unwrap();
    assert_eq!(code(&other_agent), 7);
    let other_key = hub
        .ma2h(&["open-state", "--in", good.to_str().unwrap()])
        .env("MA2H_STATE_KEY", "BBECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=")
        .output()
        .unwrap();
    assert_eq!(code(&other_key), 7);
    let no_key =
        hub.ma2h(&["open-state", "--in", good.to_str().unwrap()]).env_remove("MA2H_STATE_KEY").output().unwrap();
    assert_eq!(code(&no_key), 2);
    assert!(stderr(&no_key).contains("MA2H_STATE_KEY is not set"));
}

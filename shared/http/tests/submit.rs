//! `POST /v1/messages` through the Router (§8.1, §8.6, §10).

mod common;

use axum::http::{Method, StatusCode};
use chrono::Duration;
use common::*;
use ma2h_core::admin;
use ma2h_core::kernel::settings::Settings;
use ma2h_protocol::schema::{self, SchemaKind};
use serde_json::json;

#[tokio::test]
async fn a_notify_is_acked_delivered_with_urls_from_the_public_base() {
    let t = hub().await;
    let r = t.submit(&t.agent, notify()).await;
    assert_eq!(r.status, StatusCode::ACCEPTED);
    let id = r.body["id"].as_str().unwrap();
    assert!(id.starts_with("msg_"));
    assert_eq!(r.body["status"], "delivered");
    assert_eq!(r.body["poll_url"], format!("https://hub.test/v1/messages/{id}"));
    assert_eq!(r.body["review_url"], format!("https://hub.test/inbox/{id}"));
    assert_eq!(r.body.as_object().unwrap().len(), 4, "the ack is closed: {}", r.body);
    schema::validate(SchemaKind::SubmitAck, &r.body).unwrap();
}

#[tokio::test]
async fn an_ask_is_acked_open_and_ids_are_unique() {
    let t = hub().await;
    let a = t.submit(&t.agent, ask("k1")).await;
    let b = t.submit(&t.agent, ask("k2")).await;
    assert_eq!(a.body["status"], "open");
    assert_ne!(a.body["id"], b.body["id"]);
}

#[tokio::test]
async fn missing_or_unknown_credentials_are_401_and_the_api_key_header_works() {
    let t = hub().await;
    let r = t.call(Method::POST, "/v1/messages", None, Some(notify())).await;
    assert_eq!((r.status, r.code()), (StatusCode::UNAUTHORIZED, "unauthenticated"));
    let r = t.submit("ma2h_ak_nope", notify()).await;
    assert_eq!((r.status, r.code()), (StatusCode::UNAUTHORIZED, "unauthenticated"));

    let req = axum::http::Request::builder()
        .method("POST")
        .uri("/v1/messages")
        .header("x-api-key", &t.agent)
        .body(axum::body::Body::from(serde_json::to_vec(&notify()).unwrap()))
        .unwrap();
    let resp = tower::ServiceExt::oneshot(t.app.clone(), req).await.unwrap();
    assert_eq!(resp.status(), StatusCode::ACCEPTED);
}

async fn bot_credential(t: &TestHub) -> String {
    let creds = ma2h_core::admin::list(&t.hub).await.unwrap();
    creds.into_iter().find(|c| c.principal == "agent:bot" && c.account == "acme").unwrap().credential_id
}

#[tokio::test]
async fn a_revoked_credential_is_401_at_once_though_it_was_just_used() {
    let t = hub().await;
    // used first: the Hub now holds the verified credential in its cache
    assert_eq!(t.submit(&t.agent, notify()).await.status, StatusCode::ACCEPTED);
    ma2h_core::admin::revoke(&t.hub, &bot_credential(&t).await).await.unwrap();
    let r = t.submit(&t.agent, notify()).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_revoke_written_by_another_process_is_honoured_within_the_cache_ttl() {
    let t = hub().await;
    assert_eq!(t.submit(&t.agent, notify()).await.status, StatusCode::ACCEPTED);
    // the `ma2h-hub admin` CLI writes the store directly: this Hub's cache is not told
    let mut c = t.hub.credentials.credential_by_id(&bot_credential(&t).await).await.unwrap().unwrap();
    c.revoked_at = Some(chrono::Utc::now());
    t.hub.credentials.update_credential(&c).await.unwrap();
    tokio::time::sleep(ma2h_core::kernel::credential_cache::DEFAULT_TTL + std::time::Duration::from_millis(50)).await;
    assert_eq!(t.submit(&t.agent, notify()).await.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_rotated_key_works_during_the_overlap_and_not_after() {
    let t = hub().await;
    let new = ma2h_core::admin::rotate(&t.hub, &bot_credential(&t).await, Duration::hours(1)).await.unwrap();
    assert_eq!(t.submit(&t.agent, notify()).await.status, StatusCode::ACCEPTED);
    assert_eq!(t.submit(&new.api_key, notify()).await.status, StatusCode::ACCEPTED);
    t.advance(Duration::hours(1));
    assert_eq!(t.submit(&t.agent, notify()).await.status, StatusCode::UNAUTHORIZED);
    assert_eq!(t.submit(&new.api_key, notify()).await.status, StatusCode::ACCEPTED);
}

#[tokio::test]
async fn an_envelope_for_another_agent_is_403_agent_id_mismatch() {
    let t = hub().await;
    let r = t.submit(&t.agent, with(notify(), "/agent/id", json!("other"))).await;
    assert_eq!((r.status, r.code()), (StatusCode::FORBIDDEN, "agent_id_mismatch"));
}

#[tokio::test]
async fn operators_cannot_submit() {
    let t = hub().await;
    let r = t.submit(&t.operator, notify()).await;
    assert_eq!((r.status, r.code()), (StatusCode::FORBIDDEN, "not_authorized"));
}

#[tokio::test]
async fn version_rules_follow_section_10() {
    let t = hub().await;
    let r = t.submit(&t.agent, with(notify(), "/ma2h_version", json!("1.0"))).await;
    assert_eq!((r.status, r.code()), (StatusCode::BAD_REQUEST, "version_not_supported"));
    let r = t.submit(&t.agent, with(notify(), "/ma2h_version", json!("0.03"))).await;
    assert_eq!((r.status, r.code()), (StatusCode::BAD_REQUEST, "validation_error"));
    // older minors are accepted
    for v in ["0.2", "0.3", "0.4"] {
        let r = t.submit(&t.agent, with(notify(), "/ma2h_version", json!(v))).await;
        assert_eq!(r.status, StatusCode::ACCEPTED, "{v}: {}", r.body);
    }
    let push =
        json!({ "mode": "push", "url": "https://agent.example/cb", "auth": { "scheme": "hmac", "secret_ref": "s" } });
    let old_push = with(with(ask("p1"), "/ma2h_version", json!("0.2")), "/request/callback", push.clone());
    let r = t.submit(&t.agent, old_push).await;
    assert_eq!((r.status, r.code()), (StatusCode::BAD_REQUEST, "version_not_supported"));
    let old_pull = with(with(ask("p2"), "/ma2h_version", json!("0.2")), "/request/callback", json!({"mode": "pull"}));
    assert_eq!(t.submit(&t.agent, old_pull).await.status, StatusCode::ACCEPTED, "§10: pull is unaffected");
}

#[tokio::test]
async fn a_push_callback_needs_a_bound_host_and_the_agents_own_secrets() {
    let t = hub().await;
    let cb = |url: &str, auth: serde_json::Value| json!({ "mode": "push", "url": url, "auth": auth });
    let hmac = |name: &str| json!({ "scheme": "hmac", "secret_ref": name });
    // no binding yet
    let r = t
        .submit(&t.agent, with(ask("p1"), "/request/callback", cb("https://agent.example/cb", hmac("cbsecret"))))
        .await;
    assert_eq!((r.status, r.code()), (StatusCode::UNPROCESSABLE_ENTITY, "invalid_field"));
    assert!(r.message().contains("binding"), "{}", r.message());
    admin::bind_callback(&t.hub, "acme", "bot", "Agent.Example").await.unwrap();
    // bound, but the secret is not registered — and never resolved from the Hub's environment
    for name in ["cbsecret", "env:PATH", "hub:signing"] {
        let r =
            t.submit(&t.agent, with(ask(name), "/request/callback", cb("https://agent.example/cb", hmac(name)))).await;
        assert_eq!((r.status, r.code()), (StatusCode::UNPROCESSABLE_ENTITY, "invalid_field"), "{name}");
        assert!(r.message().contains("secret_ref"), "{}", r.message());
    }
    // another agent's secret is not ours
    admin::put_secret(&t.hub, "acme", "other", "cbsecret", "s3cret").await.unwrap();
    let r = t
        .submit(&t.agent, with(ask("p2"), "/request/callback", cb("https://agent.example/cb", hmac("cbsecret"))))
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    admin::put_secret(&t.hub, "acme", "bot", "cbsecret", "s3cret").await.unwrap();
    let r = t
        .submit(&t.agent, with(ask("p3"), "/request/callback", cb("https://agent.example/cb", hmac("cbsecret"))))
        .await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    // credentials in the URL, other hosts, bad tokens
    let r = t
        .submit(&t.agent, with(ask("p4"), "/request/callback", cb("https://u:p@agent.example/cb", hmac("cbsecret"))))
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    let r =
        t.submit(&t.agent, with(ask("p5"), "/request/callback", cb("https://evil.example/cb", hmac("cbsecret")))).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    let bearer = json!({ "scheme": "bearer", "token_ref": "missing" });
    let r = t.submit(&t.agent, with(ask("p6"), "/request/callback", cb("https://agent.example/cb", bearer))).await;
    assert!(r.message().contains("token_ref"), "{}", r.body);
}

#[tokio::test]
async fn production_mode_requires_https_callbacks() {
    let t = hub_with(Settings { mode: ma2h_core::kernel::settings::Mode::Production, ..settings() }).await;
    admin::bind_callback(&t.hub, "acme", "bot", "agent.example").await.unwrap();
    let cb = json!({ "mode": "push", "url": "http://agent.example/cb" });
    let r = t.submit(&t.agent, with(ask("h"), "/request/callback", cb)).await;
    assert_eq!((r.status, r.code()), (StatusCode::UNPROCESSABLE_ENTITY, "invalid_field"));
    assert!(r.message().contains("https"), "{}", r.message());
}

#[tokio::test]
async fn unknown_fields_are_ignored_and_kept() {
    let t = hub().await;
    let id = t.submit_ok(with(notify(), "/x_future_field", json!({"a": 1}))).await;
    let r = t.get(&t.agent, &id).await;
    assert_eq!(r.body["x_future_field"], json!({"a": 1}));
}

#[tokio::test]
async fn schema_violations_are_400_naming_the_field() {
    let t = hub().await;
    let cases = [
        (without(notify(), "/title"), "title"),
        (without(ask("k"), "/idempotency_key"), "idempotency_key"),
        (with(notify(), "/priority", json!("asap")), "/priority"),
        (without(ask("k"), "/request/options"), "options"),
        (with(notify(), "/agent/runtime", json!("mainframe")), "/agent/runtime"),
    ];
    for (env, field) in cases {
        let r = t.submit(&t.agent, env).await;
        assert_eq!((r.status, r.code()), (StatusCode::BAD_REQUEST, "validation_error"), "{field}: {}", r.body);
        assert!(r.message().contains(field), "message should name {field}: {}", r.message());
    }
    let r = t.call_raw(Method::POST, "/v1/messages", Some(&t.agent), Some(b"{not json".to_vec())).await;
    assert_eq!((r.status, r.code()), (StatusCode::BAD_REQUEST, "validation_error"));
    let r = t.call_raw(Method::POST, "/v1/messages", Some(&t.agent), Some(b"[1,2]".to_vec())).await;
    assert_eq!((r.status, r.code()), (StatusCode::BAD_REQUEST, "validation_error"));
}

#[tokio::test]
async fn cross_field_rules_are_422_invalid_field() {
    let t = hub().await;
    let past = ts(start() - Duration::minutes(1));
    let three = json!([{"value":"a","label":"A"},{"value":"b","label":"B"},{"value":"c","label":"C"}]);
    let nested = json!({"type":"object","properties":{"a":{"type":"object"}}});
    let flat = json!({"type":"object","properties":{"n":{"type":"integer","minimum":1}},"required":["n"]});
    let cases = [
        (with(ask("a"), "/expires_at", json!(past)), "/expires_at"),
        (with(ask("b"), "/expires_at", json!(ts(start()))), "/expires_at"),
        (with(ask("c"), "/request/default_on_expire", json!("nope")), "/request/default_on_expire"),
        (with(with(ask("d"), "/request/mode", json!("confirm")), "/request/options", three), "/request/options"),
        (
            with(
                without(
                    without(with(ask("e"), "/request/mode", json!("input")), "/request/options"),
                    "/request/default_on_expire",
                ),
                "/request/schema",
                nested,
            ),
            "/request/schema",
        ),
        (
            with(
                with(
                    without(with(ask("f"), "/request/mode", json!("input")), "/request/options"),
                    "/request/schema",
                    flat,
                ),
                "/request/default_on_expire",
                json!({"n": 0}),
            ),
            "/request/default_on_expire",
        ),
    ];
    for (env, field) in cases {
        let r = t.submit(&t.agent, env).await;
        assert_eq!((r.status, r.code()), (StatusCode::UNPROCESSABLE_ENTITY, "invalid_field"), "{field}: {}", r.body);
        assert!(r.message().contains(field), "{}", r.message());
    }
}

#[tokio::test]
async fn confirm_without_options_gets_approve_and_deny() {
    let t = hub().await;
    let env = without(
        with(without(ask("c"), "/request/default_on_expire"), "/request/mode", json!("confirm")),
        "/request/options",
    );
    let id = t.submit_ok(env).await;
    let r = t.get(&t.agent, &id).await;
    let values: Vec<&str> =
        r.body["request"]["options"].as_array().unwrap().iter().map(|o| o["value"].as_str().unwrap()).collect();
    assert_eq!(values, ["approve", "deny"]);
    let r = t.resolve(&t.operator, &id, json!({"resolution": "answered", "value": "approve"})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
}

#[tokio::test]
async fn an_addressed_submit_or_an_unknown_session_is_refused() {
    let t = hub().await;
    let r = t.submit(&t.agent, with(notify(), "/to", json!("agent:other"))).await;
    assert_eq!((r.status, r.code()), (StatusCode::UNPROCESSABLE_ENTITY, "unknown_destination"));
    let r = t.submit(&t.agent, with(notify(), "/agent/session", json!("sess_1"))).await;
    assert_eq!((r.status, r.code()), (StatusCode::UNPROCESSABLE_ENTITY, "invalid_field"));
}

#[tokio::test]
async fn an_identical_replay_returns_the_original_ack_with_the_current_status() {
    let t = hub().await;
    let first = t.submit(&t.agent, ask("same")).await;
    // §8.1: run_id and session are excluded from the comparison (a restarted agent retries).
    let retry = with(ask("same"), "/agent/run_id", json!("run_2"));
    let again = t.submit(&t.agent, retry.clone()).await;
    assert_eq!(again.status, StatusCode::ACCEPTED);
    assert_eq!(again.body, first.body);
    let id = first.body["id"].as_str().unwrap();
    t.resolve(&t.operator, id, json!({"resolution": "answered", "value": "ship"})).await;
    let after = t.submit(&t.agent, retry).await;
    assert_eq!(after.body["id"], first.body["id"]);
    assert_eq!(after.body["status"], "answered");
}

#[tokio::test]
async fn a_differing_replay_is_409_and_keys_are_per_agent() {
    let t = hub().await;
    t.submit_ok(ask("dup")).await;
    let r = t.submit(&t.agent, with(ask("dup"), "/title", json!("Something else"))).await;
    assert_eq!((r.status, r.code()), (StatusCode::CONFLICT, "idempotency_conflict"));
    // the same key from another agent is independent
    let other = with(ask("dup"), "/agent/id", json!("other"));
    assert_eq!(t.submit(&t.other_agent, other).await.status, StatusCode::ACCEPTED);
}

#[tokio::test]
async fn idempotency_claims_outlive_24_hours_then_lapse() {
    let t = hub().await;
    let first = t.submit(&t.agent, ask("ttl")).await;
    t.advance(Duration::hours(25));
    let again = t.submit(&t.agent, ask("ttl")).await;
    assert_eq!(again.body["id"], first.body["id"], "§8.1: at least 24 h");
    t.advance(Duration::hours(24));
    let later = t.submit(&t.agent, ask("ttl")).await;
    assert_eq!(later.status, StatusCode::ACCEPTED);
    assert_ne!(later.body["id"], first.body["id"], "the 48 h claim lapsed");
}

#[tokio::test]
async fn size_caps_are_422() {
    let mut s = settings();
    s.limits.max_body_bytes = 100;
    s.limits.max_part_bytes = 200;
    s.limits.max_context_parts = 2;
    let t = hub_with(s).await;
    let r = t.submit(&t.agent, with(notify(), "/body", json!("x".repeat(101)))).await;
    assert_eq!((r.status, r.code()), (StatusCode::UNPROCESSABLE_ENTITY, "invalid_field"));
    assert!(r.message().contains("/body"));
    let part = json!({"kind": "text", "text": "hi"});
    let r = t.submit(&t.agent, with(notify(), "/context", json!([part, part, part]))).await;
    assert!(r.message().contains("/context"), "{}", r.body);
    let big = json!({"kind": "text", "text": "y".repeat(300)});
    let r = t.submit(&t.agent, with(notify(), "/context", json!([big]))).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(r.message().contains("/context/0"), "{}", r.body);
    let huge = vec![b' '; t.hub.settings.max_request_bytes() + 1];
    let r = t.call_raw(Method::POST, "/v1/messages", Some(&t.agent), Some(huge)).await;
    assert_eq!((r.status, r.code()), (StatusCode::UNPROCESSABLE_ENTITY, "invalid_field"));
    let max = t.hub.settings.limits.max_envelope_bytes;
    assert_eq!(
        r.message(),
        format!("request body exceeds max_envelope_bytes ({max})"),
        "the configured limit, not the read's"
    );
}

#[tokio::test]
async fn over_the_request_rate_is_429_with_retry_after() {
    let t = hub_with(Settings { requests_per_minute: 3, ..settings() }).await;
    for _ in 0..3 {
        assert_eq!(t.submit(&t.agent, notify()).await.status, StatusCode::ACCEPTED);
    }
    let r = t.submit(&t.agent, notify()).await;
    assert_eq!((r.status, r.code()), (StatusCode::TOO_MANY_REQUESTS, "rate_limited"));
    let retry: u64 = r.headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry));
    // another agent has its own budget; the next minute resets it
    assert_eq!(
        t.submit(&t.other_agent, with(notify(), "/agent/id", json!("other"))).await.status,
        StatusCode::ACCEPTED
    );
    t.advance(Duration::seconds(60));
    assert_eq!(t.submit(&t.agent, notify()).await.status, StatusCode::ACCEPTED);
}

#[tokio::test]
async fn over_the_inbox_depth_is_429_but_notify_still_lands() {
    let t = hub_with(Settings { inbox_depth: 2, ..settings() }).await;
    t.submit_ok(ask("d1")).await;
    let id = t.submit_ok(ask("d2")).await;
    let r = t.submit(&t.agent, ask("d3")).await;
    assert_eq!((r.status, r.code()), (StatusCode::TOO_MANY_REQUESTS, "rate_limited"));
    assert!(r.headers.contains_key("retry-after"));
    assert_eq!(t.submit(&t.agent, notify()).await.status, StatusCode::ACCEPTED);
    // a replay of an existing key is never blocked by the depth limit
    assert_eq!(t.submit(&t.agent, ask("d2")).await.body["id"], json!(id));
    t.cancel(&t.agent, &id).await;
    assert_eq!(t.submit(&t.agent, ask("d3")).await.status, StatusCode::ACCEPTED);
}

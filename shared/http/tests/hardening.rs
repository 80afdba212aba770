//! Regression tests for the attacks of issue 13 that land in the use cases and the Router: each
//! reproduces the attack and fails without its fix (docs/SECURITY.md lists them).

mod common;

use axum::http::{Method, StatusCode};
use common::*;
use ma2h_core::admin;
use ma2h_core::kernel::settings::{Mode, Settings};
use serde_json::json;

#[tokio::test]
async fn an_agent_id_with_a_hash_gets_no_credential_and_no_borrowed_resolver_rights() {
    let t = hub().await;
    // item 5: `botB#evil` would be read as a session of `botB` (§4) — refused at creation
    let err = admin::create_agent(&t.hub, "acme", "bot#evil", None).await.unwrap_err();
    assert!(err.to_string().contains('#'), "{err}");
    // and an envelope naming such an agent is a 422 naming the field, never routed
    let r = t.submit(&t.agent, with(ask("h1"), "/agent/id", json!("bot#evil"))).await;
    assert_eq!((r.status, r.code()), (StatusCode::UNPROCESSABLE_ENTITY, "invalid_field"));
    assert!(r.message().contains("/agent/id"), "{}", r.message());
}

#[tokio::test]
async fn rate_counters_of_ids_containing_slashes_do_not_collide() {
    // item 7: `a`/`b/c` and `a/b`/`c` used to share the key `rpm/a/b/c/<minute>`
    let t = hub_with(Settings { requests_per_minute: 1, ..settings() }).await;
    let one = admin::create_agent(&t.hub, "a", "b/c", None).await.unwrap().api_key;
    let two = admin::create_agent(&t.hub, "a/b", "c", None).await.unwrap().api_key;
    let from = |agent: &str| with(notify(), "/agent/id", json!(agent));
    assert_eq!(t.submit(&one, from("b/c")).await.status, StatusCode::ACCEPTED);
    assert_eq!(t.submit(&two, from("c")).await.status, StatusCode::ACCEPTED, "its own budget");
    assert_eq!(t.submit(&one, from("b/c")).await.status, StatusCode::TOO_MANY_REQUESTS);
}

#[tokio::test]
async fn the_signing_secret_is_shown_once_and_rotated_explicitly() {
    let t = hub().await;
    // item 11: `bot` already has a credential (and so a secret) in the harness
    let again = admin::create_agent(&t.hub, "acme", "bot", None).await.unwrap();
    assert_eq!(again.signing_secret, None, "a second credential does not reprint the secret");
    let first = admin::create_agent(&t.hub, "acme", "fresh", None).await.unwrap();
    assert!(first.signing_secret.as_deref().is_some_and(|s| s.starts_with("whsec_")));
    let list = admin::list(&t.hub).await.unwrap();
    let id = &list.iter().find(|c| c.principal == "agent:fresh").unwrap().credential_id;
    let rotated = admin::rotate(&t.hub, id, chrono::Duration::hours(1)).await.unwrap();
    assert_eq!(rotated.signing_secret, None, "rotating a key does not reprint the secret");
    let new = admin::rotate_signing_secret(&t.hub, "acme", "fresh").await.unwrap();
    assert!(new.starts_with("whsec_") && Some(&new) != first.signing_secret.as_ref());
}

#[tokio::test]
async fn the_hubs_own_secrets_cannot_be_deleted_or_overwritten() {
    let t = hub().await;
    for name in ["hub:signing", "hub:signing-alg"] {
        assert!(admin::delete_secret(&t.hub, "acme", "bot", name).await.is_err(), "{name}");
        assert!(admin::put_secret(&t.hub, "acme", "bot", name, "x").await.is_err(), "{name}");
    }
    // the agent's pushes are still signed with its secret
    assert!(admin::list_secrets(&t.hub, "acme", "bot").await.unwrap().is_empty());
}

#[tokio::test]
async fn a_binding_with_a_port_is_refused_not_silently_widened() {
    let t = hub().await;
    let err = admin::bind_callback(&t.hub, "acme", "bot", "hooks.example:8443").await.unwrap_err();
    assert!(err.to_string().contains("port"), "{err}");
    assert_eq!(admin::bind_callback(&t.hub, "acme", "bot", "Hooks.Example").await.unwrap(), "hooks.example");
    assert_eq!(admin::list_bindings(&t.hub, "acme", "bot").await.unwrap(), vec!["hooks.example".to_owned()]);
    for host in ["h".repeat(254), format!("{}.example", "l".repeat(64))] {
        let err = admin::bind_callback(&t.hub, "acme", "bot", &host).await.unwrap_err();
        assert!(err.to_string().contains("longer than a DNS name"), "{err}");
    }
    let longest = format!("{}.{}.{}.{}", "a".repeat(63), "b".repeat(63), "c".repeat(63), "d".repeat(61));
    assert_eq!(admin::bind_callback(&t.hub, "acme", "bot", &longest).await.unwrap(), longest, "253 characters fit");
}

#[tokio::test]
async fn binding_a_loopback_or_metadata_literal_is_refused_outside_dev_mode() {
    let prod = hub_with(Settings { mode: Mode::Production, ..settings() }).await;
    for host in ["127.0.0.1", "169.254.169.254", "[::1]", "10.0.0.7", "[::ffff:127.0.0.1]"] {
        let err = admin::bind_callback(&prod.hub, "acme", "bot", host).await.unwrap_err();
        assert!(err.to_string().contains("§9.4"), "{host}: {err}");
    }
    assert!(admin::bind_callback(&prod.hub, "acme", "bot", "hooks.example").await.is_ok());
    // dev mode keeps the local receiver path open (MA2H_DEV_EGRESS_ALLOW decides at delivery)
    let dev = hub().await;
    assert!(admin::bind_callback(&dev.hub, "acme", "bot", "127.0.0.1").await.is_ok());
}

fn input_ask(pattern: &str, default: serde_json::Value) -> serde_json::Value {
    let ask = with(ask("pat"), "/request/mode", json!("input"));
    let ask = without(ask, "/request/options");
    let ask = with(
        ask,
        "/request/schema",
        json!({"type": "object", "properties": {"code": {"type": "string", "pattern": pattern}}}),
    );
    with(ask, "/request/default_on_expire", default)
}

#[tokio::test]
async fn a_backtracking_input_pattern_is_refused_at_submit_naming_the_property() {
    let t = hub().await;
    // item 1: lookaround needs a backtracking engine (seconds of CPU on a crafted subject)
    let r = t.submit(&t.agent, input_ask("^(?=(a|aa)+$)(a|aa)+b$", json!({"code": "a"}))).await;
    assert_eq!((r.status, r.code()), (StatusCode::UNPROCESSABLE_ENTITY, "invalid_field"));
    assert!(r.message().contains("property `code`"), "{}", r.message());
    // a linear pattern with a 30,000-character default is refused by length, not matched
    let r = t.submit(&t.agent, input_ask("^(a|aa)+$", json!({"code": "a".repeat(30_000)}))).await;
    assert_eq!((r.status, r.code()), (StatusCode::UNPROCESSABLE_ENTITY, "invalid_field"));
    assert!(r.message().contains("/request/default_on_expire"), "{}", r.message());
    assert_eq!(t.submit(&t.agent, input_ask("^(a|aa)+$", json!({"code": "aaa"}))).await.status, StatusCode::ACCEPTED);
}

#[tokio::test]
async fn a_cookie_copied_before_logout_is_dead_after_it() {
    // item 8: the sealed cookie used to stay valid until it expired (12 h)
    let t = hub().await;
    let cookie = t.ui_login(&t.operator).await;
    let copy = cookie.clone();
    let csrf = t.page(Method::GET, "/inbox", Some(&cookie), None).await.csrf();
    let r = t.page(Method::POST, "/logout", Some(&cookie), Some(&[("csrf", &csrf)])).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    let r = t.page(Method::GET, "/inbox", Some(&copy), None).await;
    assert_eq!((r.status, r.location()), (StatusCode::SEE_OTHER, "/login"), "the copied cookie no longer works");
    // another session of the same operator is unaffected
    let other = t.ui_login(&t.operator).await;
    assert_eq!(t.page(Method::GET, "/inbox", Some(&other), None).await.status, StatusCode::OK);
}

#[tokio::test]
async fn a_login_form_token_logs_in_once() {
    let t = hub().await;
    let form = t.page(Method::GET, "/login", None, None).await;
    let login_cookie = cookie_pair(&form.set_cookies()[0]);
    let csrf = form.csrf();
    let fields = [("csrf", csrf.as_str()), ("api_key", t.operator.as_str())];
    let first = t.page(Method::POST, "/login", Some(&login_cookie), Some(&fields)).await;
    assert_eq!(first.status, StatusCode::SEE_OTHER);
    let replay = t.page(Method::POST, "/login", Some(&login_cookie), Some(&fields)).await;
    assert_eq!(replay.status, StatusCode::FORBIDDEN, "{}", replay.html);
    assert!(replay.set_cookies().iter().all(|c| !c.starts_with("ma2h_inbox=") || c.contains("Max-Age=0")));
}

/// A request from `ip` (what the local server and the Lambda adapter attach).
async fn from_ip(t: &TestHub, ip: &str, uri: &str, key: &str) -> (StatusCode, axum::http::HeaderMap) {
    use tower::ServiceExt;
    let mut req = axum::http::Request::get(uri)
        .header("authorization", format!("Bearer {key}"))
        .body(axum::body::Body::empty())
        .unwrap();
    req.extensions_mut().insert(ma2h_http::extract::ClientIp(ip.parse().unwrap()));
    let resp = t.app.clone().oneshot(req).await.unwrap();
    (resp.status(), resp.headers().clone())
}

#[tokio::test]
async fn failed_authentications_are_throttled_per_client_and_logged() {
    // item 9: 500 wrong keys used to be 500 plain 401s
    let t = hub_with(Settings { auth_failures_per_minute: 5, ..settings() }).await;
    for _ in 0..5 {
        assert_eq!(
            from_ip(&t, "192.0.2.9", "/v1/operator/messages", "ma2h_op_guess").await.0,
            StatusCode::UNAUTHORIZED
        );
    }
    let (status, headers) = from_ip(&t, "192.0.2.9", "/v1/operator/messages", "ma2h_op_guess").await;
    assert_eq!(status, StatusCode::TOO_MANY_REQUESTS);
    let retry: u64 = headers["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((1..=60).contains(&retry));
    // the valid key still works from there; another client still gets its 401s
    assert_eq!(from_ip(&t, "192.0.2.9", "/v1/operator/messages", &t.operator).await.0, StatusCode::OK);
    assert_eq!(from_ip(&t, "192.0.2.10", "/v1/operator/messages", "ma2h_op_guess").await.0, StatusCode::UNAUTHORIZED);
    // the next minute starts afresh
    t.advance(chrono::Duration::seconds(60));
    assert_eq!(from_ip(&t, "192.0.2.9", "/v1/operator/messages", "ma2h_op_guess").await.0, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn state_and_the_whole_envelope_are_capped() {
    // item 2: `state` and unknown fields used to fill the whole ~4.5 MB request cap
    let t = hub().await;
    let limits = t.hub.settings.limits;
    let r = t.submit(&t.agent, with(ask("s1"), "/state", json!({ "blob": "x".repeat(limits.max_state_bytes) }))).await;
    assert_eq!((r.status, r.code()), (StatusCode::UNPROCESSABLE_ENTITY, "invalid_field"));
    assert!(r.message().contains("/state") && r.message().contains("max_state_bytes"), "{}", r.message());
    let padded = with(ask("s2"), "/x_padding", json!("p".repeat(limits.max_envelope_bytes)));
    let r = t.submit(&t.agent, padded).await;
    assert_eq!((r.status, r.code()), (StatusCode::UNPROCESSABLE_ENTITY, "invalid_field"));
    // just under both caps is fine
    let fits = with(ask("s3"), "/state", json!({ "blob": "x".repeat(limits.max_state_bytes - 64) }));
    assert_eq!(t.submit(&t.agent, fits).await.status, StatusCode::ACCEPTED);
}

#[tokio::test]
async fn state_comes_back_byte_exact_even_beyond_a_double() {
    // item 10: 123456789012345678901234567890 used to come back as 1.2345678901234568e+29
    let t = hub().await;
    let state = r#"{"n":123456789012345678901234567890,"f":0.10000000000000000555,"s":"ok"}"#;
    let mut env = serde_json::to_string(&without(ask("big"), "/state")).unwrap();
    env.insert_str(1, &format!(r#""state": {state},"#));
    let r = t.call_raw(Method::POST, "/v1/messages", Some(&t.agent), Some(env.into_bytes())).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    let id = r.body["id"].as_str().unwrap().to_owned();
    t.resolve(&t.operator, &id, json!({"resolution": "answered", "value": "ship"})).await;
    let text = get_text(&t, &id).await;
    assert_eq!(text.matches(state).count(), 2, "in the message and its Response: {text}");
}

/// The raw text of an agent's GET.
async fn get_text(t: &TestHub, id: &str) -> String {
    use http_body_util::BodyExt;
    use tower::ServiceExt;
    let req = axum::http::Request::get(format!("/v1/messages/{id}"))
        .header("authorization", format!("Bearer {}", t.agent))
        .body(axum::body::Body::empty())
        .unwrap();
    let resp = t.app.clone().oneshot(req).await.unwrap();
    assert_eq!(resp.headers()["content-type"], "application/json");
    String::from_utf8(resp.into_body().collect().await.unwrap().to_bytes().to_vec()).unwrap()
}

#[tokio::test]
async fn the_priority_badge_has_one_class_attribute_so_its_style_applies() {
    let t = hub().await;
    let id = t.submit_ok(with(ask("pb"), "/priority", json!("urgent"))).await;
    let cookie = t.ui_login(&t.operator).await;
    for path in ["/inbox".to_owned(), format!("/inbox/{id}")] {
        let page = t.page(Method::GET, &path, Some(&cookie), None).await;
        assert!(page.html.contains(r#"class="badge p-urgent""#), "{path}: {}", page.html);
        assert!(!page.html.contains(r#"class="badge" class="#), "{path}: a duplicate class attribute");
    }
}

#[tokio::test]
async fn every_answer_carries_a_request_id_and_a_sane_caller_id_is_kept() {
    let t = hub().await;
    let fresh = t.call(Method::GET, "/healthz", None, None).await;
    let id = fresh.headers["x-request-id"].to_str().unwrap().to_owned();
    assert!(id.starts_with("req_") && id.len() > 20, "{id}");
    let again = t.call(Method::GET, "/healthz", None, None).await;
    assert_ne!(again.headers["x-request-id"], fresh.headers["x-request-id"], "one id per request");
    // errors carry it too
    let err = t.call(Method::GET, "/v1/messages/msg_01HZZZZZZZZZZZZZZZZZZZZZZZ", Some(&t.agent), None).await;
    assert!(err.headers.contains_key("x-request-id"));
    for (given, kept) in
        [("trace-42.a:b_c", true), ("has space", false), ("<script>", false), (&*"x".repeat(129), false)]
    {
        let req = axum::http::Request::builder()
            .uri("/healthz")
            .header("x-request-id", given)
            .body(axum::body::Body::empty())
            .unwrap();
        let resp = tower::ServiceExt::oneshot(t.app.clone(), req).await.unwrap();
        let answered = resp.headers()["x-request-id"].to_str().unwrap();
        assert_eq!(answered == given, kept, "{given:?} → {answered:?}");
    }
}

/// Found by a black-box pass (session 18): axum's own rejections answered in plain text.
#[tokio::test]
async fn a_path_segment_that_is_not_utf8_gets_the_error_envelope() {
    let t = hub().await;
    for (method, uri, key) in [
        (Method::GET, "/v1/messages/%FF", &t.agent),
        (Method::POST, "/v1/messages/%FF/cancel", &t.agent),
        (Method::POST, "/v1/messages/%FF/resolve", &t.operator),
        (Method::GET, "/v1/sessions/%FF", &t.agent),
        (Method::GET, "/v1/agents/%FF/presence", &t.operator),
        (Method::GET, "/v1/operator/directives/%FF", &t.operator),
    ] {
        let r = t.call(method.clone(), uri, Some(key), Some(json!({}))).await;
        assert_eq!((r.status, r.code()), (StatusCode::BAD_REQUEST, "validation_error"), "{method} {uri}: {}", r.body);
        assert!(r.message().contains("UTF-8"), "{uri}: {}", r.message());
    }
}

#[tokio::test]
async fn a_body_that_cannot_be_read_is_a_400_not_an_over_size_422() {
    use axum::body::{Body, Bytes};
    use http_body_util::BodyExt as _;
    use tower::ServiceExt as _;
    let t = hub().await;
    // What hyper hands on for malformed chunked framing: a body stream that fails part-way.
    let chunks = vec![Ok(Bytes::from_static(b"{")), Err(std::io::Error::other("invalid chunk size line"))];
    let req = axum::http::Request::builder()
        .method(Method::POST)
        .uri("/v1/messages")
        .header("authorization", format!("Bearer {}", t.agent))
        .body(Body::from_stream(futures_util::stream::iter(chunks)))
        .unwrap();
    let resp = t.app.clone().oneshot(req).await.unwrap();
    assert_eq!(resp.status(), StatusCode::BAD_REQUEST);
    let body: serde_json::Value =
        serde_json::from_slice(&resp.into_body().collect().await.unwrap().to_bytes()).unwrap();
    assert_eq!(body["error"]["code"], "validation_error", "{body}");
    assert!(body["error"]["message"].as_str().unwrap().contains("could not be read"), "{body}");
}

#[tokio::test]
async fn a_path_under_v1_agents_that_names_no_endpoint_says_so() {
    let t = hub().await;
    for (method, uri) in [
        (Method::GET, "/v1/agents//presence"),
        (Method::GET, "/v1/agents/bot/presence/"),
        (Method::GET, "/v1/agents/bot/elsewhere"),
        (Method::POST, "/v1/agents/bot/stop/x"),
        (Method::DELETE, "/v1/agents/bot/nothing"),
    ] {
        let r = t.call(method.clone(), uri, Some(&t.operator), None).await;
        assert_eq!(
            (r.status, r.code(), r.message()),
            (StatusCode::NOT_FOUND, "not_found", "no such endpoint"),
            "{method} {uri}"
        );
    }
}

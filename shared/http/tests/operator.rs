//! The operator listing and discovery through the Router.

mod common;

use axum::http::{Method, StatusCode};
use chrono::Duration;
use common::*;
use ma2h_core::kernel::settings::Settings;
use ma2h_protocol::schema::{self, SchemaKind};
use serde_json::json;

#[tokio::test]
async fn the_listing_shows_open_messages_urgent_first_then_oldest() {
    let t = hub().await;
    let normal = t.submit_ok(with(ask("o1"), "/priority", json!("normal"))).await;
    t.advance(Duration::seconds(1));
    let urgent =
        t.submit_ok(with(with(ask("o2"), "/priority", json!("urgent")), "/client_ref", json!("secret-ref"))).await;
    t.advance(Duration::seconds(1));
    let high = t.submit_ok(with(ask("o3"), "/priority", json!("high"))).await;
    let old_normal_first = t.submit_ok(with(task("o4"), "/priority", json!("normal"))).await;
    t.submit_ok(notify()).await;
    let r = t.call(Method::GET, "/v1/operator/messages", Some(&t.operator), None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let ids: Vec<&str> = r.body["messages"].as_array().unwrap().iter().map(|m| m["id"].as_str().unwrap()).collect();
    assert_eq!(ids, [urgent.as_str(), high.as_str(), normal.as_str(), old_normal_first.as_str()]);
    let text = r.body.to_string();
    assert!(!text.contains("secret-ref") && !text.contains("v1.opaque"), "no client_ref or state: {text}");
    let r = t.call(Method::GET, "/v1/operator/messages?type=task", Some(&t.operator), None).await;
    assert_eq!(r.body["count"], 1);
}

#[tokio::test]
async fn the_resolved_listing_shows_outcomes_newest_first() {
    let t = hub().await;
    let a = t.submit_ok(ask("h1")).await;
    let b = t.submit_ok(ask("h2")).await;
    t.resolve(&t.operator, &a, json!({"resolution": "declined"})).await;
    t.advance(Duration::seconds(1));
    t.resolve(&t.operator, &b, json!({"resolution": "answered", "value": "ship", "comment": "ok"})).await;
    let r = t.call(Method::GET, "/v1/operator/messages?status=resolved&type=ask", Some(&t.operator), None).await;
    let list = r.body["messages"].as_array().unwrap();
    assert_eq!(list[0]["id"], json!(b));
    assert_eq!(list[0]["resolution"], "answered");
    assert_eq!(list[0]["actor"], "human:alice");
    assert_eq!(list[1]["resolution"], "declined");
}

#[tokio::test]
async fn the_listing_is_for_operators_of_the_account_only() {
    let t = hub().await;
    t.submit_ok(ask("x1")).await;
    let r = t.call(Method::GET, "/v1/operator/messages", Some(&t.agent), None).await;
    assert_eq!((r.status, r.code()), (StatusCode::FORBIDDEN, "not_authorized"));
    let globex_op = ma2h_core::admin::create_operator(&t.hub, "globex", "carol", None).await.unwrap().api_key;
    let r = t.call(Method::GET, "/v1/operator/messages", Some(&globex_op), None).await;
    assert_eq!(r.body["count"], 0, "another account's messages are invisible");
    let r = t.call(Method::GET, "/v1/operator/messages?status=maybe", Some(&t.operator), None).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn the_capability_document_reflects_the_configuration() {
    let t = hub_with(Settings {
        requests_per_minute: 42,
        inbox_depth: 7,
        retention_days: 9,
        long_poll_max_seconds: 25,
        ..settings()
    })
    .await;
    let r = t.call(Method::GET, "/.well-known/ma2h", None, None).await;
    assert_eq!(r.status, StatusCode::OK);
    schema::validate(SchemaKind::Capability, &r.body).unwrap();
    assert_eq!(r.body["ma2h_version"], "0.5");
    assert_eq!(
        r.body["rate_limit"],
        json!({"requests_per_minute": 42, "inbox_depth": 7, "inter_agent_requests_per_minute": 120})
    );
    assert_eq!(r.body["retention_days"], 9);
    assert_eq!(r.body["long_poll_max_seconds"], 25);
    assert_eq!(r.body["max_body_bytes"], 65536);
    assert_eq!(r.body["auth_schemes"], json!(["bearer", "apikey"]));
    assert_eq!(r.body["callback_auth_schemes"], json!(["hmac", "bearer", "apikey"]));
    assert_eq!(r.body["push"]["max_attempts"], 8);
    let key = &r.body["signing_keys"][0];
    assert_eq!((key["alg"].as_str(), key["status"].as_str()), (Some("ed25519"), Some("current")));
    assert_eq!(key["public_key"].as_str().unwrap().len(), 43, "32 bytes, base64url");
    // Advertised: the mailbox, acks, presence, sessions (with the hard stop) and the inter-agent
    // leg's deployment ceiling.
    assert_eq!((r.body["inbound"]["enabled"].as_bool(), r.body["ack"]["enabled"].as_bool()), (Some(true), Some(true)));
    assert_eq!(r.body["inbound"]["session_param"], true);
    assert_eq!(
        r.body["sessions"],
        json!({"enabled": true, "min_ttl_seconds": 60, "max_ttl_seconds": 3600, "max_live_per_agent": 16,
               "agent_list_visibility": false, "terminal_retention_seconds": 86400, "operator_hard_stop": true})
    );
    assert_eq!(
        r.body["inter_agent"],
        json!({"enabled": true, "entry_kinds": ["message", "response", "receipt"], "sender_allowlists": true})
    );
}

/// Issue 13 item 4: 504 open asks from one agent, then one from another. Nothing hides: the
/// second agent's ask is one filter away, paging reaches it, and the counts cover all 505.
#[tokio::test]
async fn a_flood_from_one_agent_hides_nothing_from_the_listing() {
    let t = hub_with(Settings { requests_per_minute: 100_000, inbox_depth: 10_000, ..settings() }).await;
    for i in 0..504 {
        let env = with(with(ask(&format!("f{i}")), "/priority", json!("normal")), "/tags", json!(["flood"]));
        t.submit_ok(with(env, "/agent/project", json!("noise"))).await;
    }
    t.advance(Duration::seconds(1));
    let quiet = with(with(ask("q1"), "/agent/id", json!("other")), "/priority", json!("normal"));
    let r = t.submit(&t.other_agent, with(quiet, "/tags", json!(["db", "ops"]))).await;
    let quiet_id = r.body["id"].as_str().unwrap().to_owned();
    let t = &t;
    let list = |q: &str| {
        let uri = format!("/v1/operator/messages?{q}");
        async move { t.call(Method::GET, &uri, Some(&t.operator), None).await }
    };

    let first = list("limit=500").await;
    assert_eq!(first.body["count"], 500);
    assert!(!first.body.to_string().contains(&quiet_id), "the newest is on a later page");
    let cursor = first.body["next_cursor"].as_str().expect("more follow").to_owned();
    let second = list(&format!("limit=500&cursor={cursor}")).await;
    assert_eq!(second.status, StatusCode::OK, "{}", second.body);
    assert_eq!(second.body["count"], 5);
    assert_eq!(second.body["messages"][4]["id"], json!(quiet_id), "oldest first within a priority");
    assert!(second.body.get("next_cursor").is_none(), "the last page says so");

    for q in ["agent=other", "tag=ops", "priority=normal&agent=other&type=ask", "project=&tag=db"] {
        let r = list(&format!("{q}&counts=true")).await;
        assert_eq!(r.status, StatusCode::OK, "{q}: {}", r.body);
        assert_eq!(r.body["count"], 1, "{q}");
        assert_eq!(r.body["messages"][0]["id"], json!(quiet_id), "{q}");
        assert_eq!(r.body["counts"]["open"], 505, "{q}: counts cover every open message");
        assert_eq!(r.body["counts"]["matching"], 1, "{q}");
    }
    let r = list("project=noise&counts=1&limit=1").await;
    assert_eq!((r.body["count"].as_u64(), r.body["counts"]["matching"].as_u64()), (Some(1), Some(504)));
    assert_eq!(r.body["counts"]["priority"]["normal"], 505);
    assert_eq!(r.body["counts"]["type"]["ask"], 505);
    assert_eq!(r.body["messages"][0]["agent"]["project"], "noise");
    assert_eq!(r.body["messages"][0]["tags"], json!(["flood"]));
}

#[tokio::test]
async fn listing_queries_are_checked_at_the_edge() {
    let t = hub().await;
    t.submit_ok(ask("c1")).await;
    t.submit_ok(ask("c2")).await;
    let page = t.call(Method::GET, "/v1/operator/messages?limit=1", Some(&t.operator), None).await;
    let open_cursor = page.body["next_cursor"].as_str().unwrap().to_owned();
    let long = "x".repeat(257);
    for q in [
        "cursor=not-a-cursor".to_owned(),
        format!("status=resolved&cursor={open_cursor}"),
        "priority=extreme".into(),
        "type=memo".into(),
        "counts=maybe".into(),
        format!("tag={long}"),
        "agent=bad%23agent".into(),
    ] {
        let r = t.call(Method::GET, &format!("/v1/operator/messages?{q}"), Some(&t.operator), None).await;
        assert_eq!((r.status, r.code()), (StatusCode::BAD_REQUEST, "validation_error"), "{q}: {}", r.body);
    }
    let r = t.call(Method::GET, &format!("/v1/operator/messages?cursor={open_cursor}"), Some(&t.operator), None).await;
    assert_eq!(r.body["count"], 1, "the cursor continues the listing");
    assert!(r.body.get("counts").is_none(), "counts only when asked");
}

#[tokio::test]
async fn a_page_of_zero_is_refused_and_a_page_over_the_maximum_is_the_maximum() {
    let t = hub().await;
    t.submit_ok(ask("z1")).await;
    let zero = t.call(Method::GET, "/v1/operator/messages?limit=0", Some(&t.operator), None).await;
    assert_eq!((zero.status, zero.code()), (StatusCode::BAD_REQUEST, "validation_error"), "{}", zero.body);
    let big = t.call(Method::GET, "/v1/operator/messages?limit=100000", Some(&t.operator), None).await;
    assert_eq!(big.status, StatusCode::OK);
    assert_eq!(big.body["count"], 1);
}

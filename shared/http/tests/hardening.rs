//! Regression tests for the attacks of issue 13 that land in the use cases and the Router: each
//! reproduces the attack and fails without its fix (docs/SECURITY.md lists them).

mod common;

use axum::http::StatusCode;
use common::*;
use ma2h_core::admin;
use ma2h_core::settings::{Mode, Settings};
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

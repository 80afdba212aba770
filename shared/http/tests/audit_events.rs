//! Issue 42 on every backend (`MA2H_TEST_STORE`): the Hub records its security-relevant events
//! in the ledger as they commit — and only those that commit: an idempotent replay, a lost
//! compare-and-set or a refused write records nothing. Each entry names its principal and target
//! and never carries `state` or a sensitive value; the export of it all verifies.

mod common;

use std::collections::BTreeMap;

use axum::http::{Method, StatusCode};
use chrono::Duration;
use common::*;
use ma2h_core::audit::export::export;
use ma2h_protocol::audit::{Line, verify};
use ma2h_protocol::ids::AccountId;
use serde_json::{Value, json};

/// Every entry of `account`'s ledger, in export order (verified first).
async fn entries(t: &TestHub, account: &str) -> Vec<Value> {
    let lines = export(&t.hub, &AccountId::parse(account).unwrap(), None, None).await.unwrap();
    verify(lines.iter().map(String::as_str), &t.hub.keys.verifying_keys()).unwrap_or_else(|f| panic!("{f}"));
    let mut out: Vec<Value> = lines
        .iter()
        .filter(|l| matches!(Line::parse(l), Ok(Line::Entry(_))))
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    out.sort_by(|a, b| a["at"].as_str().cmp(&b["at"].as_str()).then(a["id"].as_str().cmp(&b["id"].as_str())));
    out
}

fn count(entries: &[Value], kind: &str, target: &str) -> usize {
    entries.iter().filter(|e| e["kind"] == kind && e["target"] == target).count()
}

fn one<'a>(entries: &'a [Value], kind: &str, target: &str) -> &'a Value {
    let found: Vec<&Value> = entries.iter().filter(|e| e["kind"] == kind && e["target"] == target).collect();
    assert_eq!(found.len(), 1, "one `{kind}` of {target} in {entries:#?}");
    found[0]
}

#[tokio::test]
async fn message_events_are_recorded_once_as_they_commit_with_principal_and_digest_never_state() {
    let t = hub().await;
    let id = t.submit_ok(ask("k1")).await;
    // a replay of the same submit commits nothing new, and records nothing
    let again = t.submit(&t.agent, ask("k1")).await;
    assert_eq!(again.body["id"], id);
    let r = t.resolve(&t.operator, &id, json!({"resolution": "answered", "value": "ship"})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    // a second answer loses the compare-and-set: no entry
    let lost = t.resolve(&t.operator, &id, json!({"resolution": "answered", "value": "hold"})).await;
    assert_eq!(lost.status, StatusCode::CONFLICT, "{}", lost.body);

    let cancelled = t.submit_ok(ask("k2")).await;
    assert_eq!(t.cancel(&t.agent, &cancelled).await.status, StatusCode::OK);
    let expiring = t.submit_ok(with(ask("k3"), "/expires_at", json!(ts(t.clock_now() + Duration::minutes(5))))).await;
    t.advance(Duration::minutes(6));
    assert_eq!(t.get(&t.agent, &expiring).await.body["status"], "expired");

    let log = entries(&t, "acme").await;
    let submitted = one(&log, "message.submitted", &id);
    assert_eq!(
        (submitted["principal"].as_str(), submitted["detail"]["type"].as_str()),
        (Some("agent:bot"), Some("ask"))
    );
    // the digest is of the accepted envelope without `state` (§9.6)
    let mut envelope = ask("k1");
    envelope.as_object_mut().unwrap().remove("state");
    assert_eq!(submitted["digest"].as_str(), Some(ma2h_protocol::jcs::canonical_sha256(&envelope).as_str()));
    let text = serde_json::to_string(&log).unwrap();
    assert!(!text.contains("v1.opaque"), "no entry carries `state`");

    let resolved = one(&log, "message.resolved", &id);
    assert_eq!(resolved["principal"], "human:alice");
    assert_eq!(resolved["detail"]["resolution"], "answered");
    assert_eq!(resolved["detail"]["resolution_id"], r.body["resolution_id"]);
    assert_eq!(count(&log, "message.resolved", &id), 1, "the lost answer is not recorded");
    assert_eq!(one(&log, "message.cancelled", &cancelled)["principal"], "agent:bot");
    let expired = one(&log, "message.expired", &expiring);
    assert!(expired["principal"].as_str().unwrap().starts_with("system:"), "{expired}");
}

#[tokio::test]
async fn sessions_stops_directives_and_their_acks_are_recorded_with_who_did_them() {
    let t = hub().await;
    let s = t.call(Method::POST, "/v1/sessions", Some(&t.agent), Some(json!({"ttl_seconds": 600}))).await;
    assert_eq!(s.status, StatusCode::CREATED, "{}", s.body);
    let sid = s.body["session"]["id"].as_str().unwrap().to_owned();
    let d = t
        .call(
            Method::POST,
            "/v1/operator/directives",
            Some(&t.operator),
            Some(json!({"to": "agent:bot", "title": "Pause"})),
        )
        .await;
    assert_eq!(d.status, StatusCode::CREATED, "{}", d.body);
    let did = d.body["id"].as_str().unwrap().to_owned();
    let drained = t.call(Method::GET, "/v1/inbox", Some(&t.agent), None).await;
    assert_eq!(drained.status, StatusCode::OK);
    let ack = t.call(Method::POST, "/v1/inbox/ack", Some(&t.agent), Some(json!({"ids": [did]}))).await;
    assert_eq!(ack.status, StatusCode::OK, "{}", ack.body);
    // acked again: nothing changes, nothing recorded
    t.call(Method::POST, "/v1/inbox/ack", Some(&t.agent), Some(json!({"ids": [did]}))).await;

    let stop = t.call(Method::POST, "/v1/agents/bot/stop", Some(&t.operator), None).await;
    assert!(stop.status.is_success(), "{}", stop.body);
    let lift = t.call(Method::DELETE, "/v1/agents/bot/stop", Some(&t.operator), None).await;
    assert!(lift.status.is_success(), "{}", lift.body);
    // lifting again lifts nothing: not recorded
    t.call(Method::DELETE, "/v1/agents/bot/stop", Some(&t.operator), None).await;

    let log = entries(&t, "acme").await;
    assert_eq!(one(&log, "session.opened", &sid)["principal"], "agent:bot");
    let closed = one(&log, "session.closed", &sid);
    assert_eq!(
        (closed["principal"].as_str(), closed["detail"]["how"].as_str()),
        (Some("human:alice"), Some("operator"))
    );
    let sent = one(&log, "directive.sent", &did);
    assert_eq!(sent["principal"], "human:alice");
    assert_eq!(one(&log, "directive.acked", &did)["principal"], "agent:bot");
    assert_eq!(one(&log, "agent.stopped", "agent:bot")["principal"], "human:alice");
    assert_eq!(one(&log, "agent.stop_lifted", "agent:bot")["principal"], "human:alice");
}

#[tokio::test]
async fn a_lapsed_lease_is_recorded_once_even_by_racing_sweeps_and_a_close_is_not_an_expiry() {
    let t = hub().await;
    let register = || async {
        let s = t.call(Method::POST, "/v1/sessions", Some(&t.agent), Some(json!({"ttl_seconds": 60}))).await;
        assert_eq!(s.status, StatusCode::CREATED, "{}", s.body);
        (s.body["session"]["id"].as_str().unwrap().to_owned(), s.body["session"]["expires_at"].clone())
    };
    let (lapsing, lease_end) = register().await;
    let (closing, _) = register().await;
    let closed = t.call(Method::DELETE, &format!("/v1/sessions/{closing}"), Some(&t.agent), None).await;
    assert_eq!(closed.status, StatusCode::OK, "{}", closed.body);
    t.advance(Duration::minutes(2));
    // two sweepers find the same lapsed lease (two Lambda invocations, two processes)
    let sweep = || ma2h_core::messages::sweep::sweep_once(&t.hub);
    let (a, b) = tokio::join!(sweep(), sweep());
    assert_eq!(a.unwrap().sessions_expired + b.unwrap().sessions_expired, 1);
    sweep().await.unwrap();

    let log = entries(&t, "acme").await;
    let expired = one(&log, "session.expired", &lapsing);
    assert_eq!(
        (expired["principal"].as_str(), expired["detail"]["agent"].as_str()),
        (Some("system:lease"), Some("bot"))
    );
    // the lease's end, as the session record said it (not the sweep's time)
    assert_eq!(expired["detail"]["lapsed_at"], lease_end, "{expired}");
    assert_eq!(count(&log, "session.expired", &closing), 0, "a close is recorded as `session.closed` only");
    assert_eq!(one(&log, "session.closed", &closing)["detail"]["how"], "closed");
}

#[tokio::test]
async fn credential_secret_binding_and_policy_changes_are_recorded_never_with_a_value() {
    let t = hub().await;
    let log = entries(&t, "acme").await;
    // the fixture's credentials: an agent `bot`, an agent `other`, the operator
    let created: BTreeMap<String, String> = log
        .iter()
        .filter(|e| e["kind"] == "credential.created")
        .map(|e| (e["detail"]["principal"].as_str().unwrap().to_owned(), e["principal"].as_str().unwrap().to_owned()))
        .collect();
    assert!(created.contains_key("agent:bot") && created.contains_key("human:alice"), "{created:?}");
    assert!(created.values().all(|p| p == "system:admin"));

    ma2h_core::admin::put_secret(&t.hub, "acme", "bot", "hook-token", "s3cret-value-xyz").await.unwrap();
    ma2h_core::admin::bind_callback(&t.hub, "acme", "bot", "hooks.example.com").await.unwrap();
    let policy = json!({"id": "two-eyes", "approvals": 2});
    let r = t.call(Method::PUT, "/v1/operator/approval-policies/two-eyes", Some(&t.operator), Some(policy)).await;
    assert!(r.status.is_success(), "{}", r.body);

    let log = entries(&t, "acme").await;
    let secrets: Vec<&Value> =
        log.iter().filter(|e| e["kind"] == "secret.set" && e["detail"]["name"] == "hook-token").collect();
    assert_eq!(secrets.len(), 1, "{log:#?}");
    assert_eq!((secrets[0]["target"].as_str(), secrets[0]["digest"].as_str()), (Some("agent:bot"), None));
    assert!(!serde_json::to_string(&log).unwrap().contains("s3cret-value-xyz"));
    assert_eq!(one(&log, "binding.added", "agent:bot")["detail"]["host"], "hooks.example.com");
    let changed = one(&log, "policy.changed", "policy:two-eyes");
    assert_eq!(
        (changed["principal"].as_str(), changed["detail"]["action"].as_str()),
        (Some("human:alice"), Some("put"))
    );
    // nothing of this account reaches another's ledger
    assert!(entries(&t, "globex").await.iter().all(|e| e["kind"] != "policy.changed"));
}

#[tokio::test]
async fn the_audit_page_shows_the_login_and_filters_by_kind_actor_agent_and_time() {
    let t = hub().await;
    let id = t.submit_ok(ask("k1")).await;
    let r = t.resolve(&t.operator, &id, json!({"resolution": "answered", "value": "ship"})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let cookie = t.ui_login(&t.operator).await;

    let all = t.page(Method::GET, "/inbox/audit", Some(&cookie), None).await;
    assert_eq!(all.status, StatusCode::OK, "{}", all.html);
    for shown in ["message.submitted", "message.resolved", "login", "credential.created", &id] {
        assert!(all.html.contains(shown), "{shown} on the page");
    }
    let resolved = t.page(Method::GET, "/inbox/audit?kind=message.resolved", Some(&cookie), None).await;
    assert!(resolved.html.contains("message.resolved") && !resolved.html.contains("<code>message.submitted</code>"));
    let by_agent = t.page(Method::GET, "/inbox/audit?actor=agent%3Abot", Some(&cookie), None).await;
    assert!(by_agent.html.contains("message.submitted") && !by_agent.html.contains("<code>login</code>"));
    let family = t.page(Method::GET, "/inbox/audit?kind=message.&agent=other", Some(&cookie), None).await;
    assert!(family.html.contains("No entries"), "nothing about agent `other` in messages");
    let later = ts(t.clock_now() + Duration::hours(1));
    let empty = t.page(Method::GET, &format!("/inbox/audit?since={later}"), Some(&cookie), None).await;
    assert!(empty.html.contains("No entries") || empty.status == StatusCode::BAD_REQUEST, "{}", empty.status);
    let bad = t.page(Method::GET, "/inbox/audit?since=yesterday", Some(&cookie), None).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);

    let file = t.page(Method::GET, "/inbox/audit/export", Some(&cookie), None).await;
    assert_eq!(file.status, StatusCode::OK);
    assert_eq!(file.headers["content-type"], "application/jsonl");
    let report = verify(file.html.lines(), &t.hub.keys.verifying_keys()).unwrap_or_else(|f| panic!("{f}"));
    assert!(report.entries >= 3);
    // without a session: the login page, never the ledger
    let anon = t.page(Method::GET, "/inbox/audit", None, None).await;
    assert!(anon.status.is_redirection() || anon.status == StatusCode::UNAUTHORIZED, "{}", anon.status);
}

//! Requests per phase of a routed ask (issue 20, docs/COST.md "Channel notifications"): the
//! outbox item written with the submit, the `deliver` job that announces it on a webhook, the
//! terminal's wake-up and the outcome event — each one conditional write per state change of the
//! item, and nothing at all for an account without routes (the lifecycle test's counts).

use std::sync::atomic::Ordering;

use axum::http::StatusCode;
use serde_json::json;

use crate::env::*;
use crate::metering::Tally;
use crate::support::event;

/// A routed ask's submit, as a pull-mode ask (auth, counter, claim, message, the account's open
/// counter) plus the outbox item (NOTE#, a conditional put before the message) and its job.
const ROUTED_SUBMIT: &[(&str, u64)] =
    &[("dynamodb:GetItem", 1), ("dynamodb:UpdateItem", 2), ("dynamodb:PutItem", 3), ("sqs:SendMessage", 1)];

/// Put `route`, then warm the agent's rate window and the configuration cache (read once per
/// container per `MA2H_CHANNELS_CACHE_MS`), as on a busy container; the set-up is not metered.
async fn route_and_warm(e: &Env, route: ma2h_core::channels::manage::RouteSpec) {
    let hub = &e.dep.hub;
    ma2h_core::channels::manage::put_route(hub, "admin", "acme", route).await.unwrap();
    let (status, _) = call(e, event("POST", "/v1/messages", &e.agent, Some(&notify("warm")))).await;
    assert_eq!(status, StatusCode::ACCEPTED);
    ma2h_core::channels::schedule::config(hub, &ma2h_protocol::ids::AccountId::parse("acme").unwrap()).await.unwrap();
    e.phase().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_per_phase_of_a_routed_ask() {
    with_env("channels", false, |e| async move {
        let (url, hits) = receiver().await;
        let hub = &e.dep.hub;
        ma2h_core::channels::manage::put_webhook(hub, "admin", "acme", "pager", &url, "whk").await.unwrap();
        let route = ma2h_core::channels::manage::RouteSpec {
            id: "all".into(),
            targets: vec!["pager".into()],
            ..Default::default()
        };
        route_and_warm(&e, route).await;
        let mut rows: Vec<(String, Tally)> = Vec::new();
        let mut phase = |name: &str, t: Tally, expected: &[(&str, u64)]| {
            crate::cost_eq!(t.requests, expect(expected), "{name}");
            rows.push((name.to_owned(), t));
        };

        let (status, ack) = call(&e, event("POST", "/v1/messages", &e.agent, Some(&ask("ch1", None, None)))).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{ack}");
        let id = ack["id"].as_str().unwrap().to_owned();
        // as a pull-mode ask (auth, counter, claim, message, the account's open counter), plus
        // the outbox item (NOTE#, conditional put, before the message) and its job
        phase("submit (routed ask, pull)", e.phase().await, ROUTED_SUBMIT);

        assert_eq!(deliver_via_esm(&e).await, (1, 0));
        assert_eq!(hits.load(Ordering::SeqCst), 1, "message.created sent");
        // the claim (conditional UpdateItem, ALL_NEW), the message (lookup), the save (put at
        // the claimed version)
        phase(
            "deliver: announce on the webhook",
            e.phase().await,
            &[("dynamodb:UpdateItem", 1), ("dynamodb:Query", 1), ("dynamodb:PutItem", 1)],
        );

        let answer = json!({"resolution": "answered", "value": "ship"});
        let (status, res) =
            call(&e, event("POST", &format!("/v1/messages/{id}/resolve"), &e.operator, Some(&answer))).await;
        assert_eq!(status, StatusCode::OK, "{res}");
        // as any resolve (auth, lookup, tombstone + CAS, the open counter), plus the item's
        // wake-up and its job
        phase(
            "resolve (routed: wakes the item)",
            e.phase().await,
            &[
                ("dynamodb:GetItem", 1),
                ("dynamodb:Query", 1),
                ("dynamodb:PutItem", 2),
                ("dynamodb:UpdateItem", 2),
                ("sqs:SendMessage", 1),
            ],
        );

        assert_eq!(deliver_via_esm(&e).await, (1, 0));
        assert_eq!(hits.load(Ordering::SeqCst), 2, "message.resolved sent");
        phase(
            "deliver: the outcome event",
            e.phase().await,
            &[("dynamodb:UpdateItem", 1), ("dynamodb:Query", 1), ("dynamodb:PutItem", 1)],
        );
        print_table("Requests per phase of a routed ask (counted on the wire, asserted)", &rows);
    })
    .await;
}

/// A Slack press or an email answer acts as its human only while they hold an active operator
/// key: one `Query` of that human's credential pointers and one `GetItem` per credential of
/// theirs — whatever the table holds (it used to be a `Scan` of every credential, per press).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_answer_outside_the_api_reads_its_humans_credentials_never_the_table() {
    use ma2h_core::kernel::credentials::PrincipalId;
    use ma2h_protocol::ids::{AccountId, HumanId};
    with_env("operator-check", false, |e| async move {
        let hub = &e.dep.hub;
        // alice's second key, and credentials of others that must not be read
        ma2h_core::admin::create_operator(hub, "acme", "alice", None).await.unwrap();
        for n in 0..5 {
            ma2h_core::admin::create_agent(hub, "acme", &format!("bot-{n}"), None).await.unwrap();
        }
        ma2h_core::admin::create_operator(hub, "globex", "alice", None).await.unwrap();
        e.phase().await;
        let (acme, alice) =
            (AccountId::parse("acme").unwrap(), PrincipalId::Operator(HumanId::parse("alice").unwrap()));
        let creds = hub.credentials.credentials_of(&acme, &alice).await.unwrap();
        assert_eq!(creds.len(), 2);
        let t = e.phase().await;
        assert_eq!(t.requests, expect(&[("dynamodb:Query", 1), ("dynamodb:GetItem", 2)]));
    })
    .await;
}

/// Issue 40: an operator's activity is one conditional `UpdateItem` on their first request in a
/// minute (per container); an on-call ladder reads presence (one `Query` of the account's
/// `SEEN#` items) only when a rung falls due, and a rung is a step of the message's one outbox
/// item — its send costs what any step costs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_of_presence_and_an_on_call_ladder() {
    with_env("ladder", false, |e| async move {
        let (url, hits) = receiver().await;
        let hub = &e.dep.hub;
        ma2h_core::channels::manage::put_webhook(hub, "admin", "acme", "pager", &url, "whk").await.unwrap();
        let route = ma2h_core::channels::manage::RouteSpec {
            id: "all".into(),
            targets: vec!["pager".into()],
            ladder: vec!["alice".into(), "bob".into()],
            ladder_minutes: Some(10),
            ..Default::default()
        };
        route_and_warm(&e, route).await;
        let mut rows: Vec<(String, Tally)> = Vec::new();
        let mut phase = |name: &str, t: Tally, expected: &[(&str, u64)]| {
            crate::cost_eq!(t.requests, expect(expected), "{name}");
            rows.push((name.to_owned(), t));
        };

        let (status, ack) = call(&e, event("POST", "/v1/messages", &e.agent, Some(&ask("lad1", None, None)))).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{ack}");
        phase("submit (routed ask with a ladder): as any routed ask", e.phase().await, ROUTED_SUBMIT);
        assert_eq!(deliver_via_esm(&e).await, (1, 0));
        assert_eq!(hits.load(Ordering::SeqCst), 2, "message.created and alice's message.ladder");
        phase(
            "deliver: announce, and the first rung (one presence read)",
            e.phase().await,
            &[("dynamodb:UpdateItem", 1), ("dynamodb:Query", 2), ("dynamodb:PutItem", 1)],
        );

        e.clock.advance(chrono::Duration::minutes(10));
        assert_eq!(ma2h_core::channels::notify::requeue_due(hub, 10).await.unwrap(), 1);
        assert_eq!(deliver_via_esm(&e).await, (1, 0));
        assert_eq!(hits.load(Ordering::SeqCst), 3, "bob's rung (offline, but the last is always reached)");
        // the sweep's walk of the due index (129 sharded partitions, once per sweep whatever is
        // due), then the claim, the message, presence, the save
        phase(
            "a rung falls due: the sweep's requeue, then deliver",
            e.phase().await,
            &[("dynamodb:Query", 131), ("dynamodb:UpdateItem", 1), ("dynamodb:PutItem", 1), ("sqs:SendMessage", 1)],
        );
        e.clock.advance(chrono::Duration::minutes(2)); // past the last activity write
        let (status, team) = call(&e, event("GET", "/v1/operator/presence", &e.operator, None)).await;
        assert_eq!(status, StatusCode::OK, "{team}");
        // the key's lookup, alice's activity; the listing: the account's `SEEN#` items and its
        // policy item (absences and ladders, as stored)
        phase(
            "an operator's first request in a minute: GET /v1/operator/presence",
            e.phase().await,
            &[("dynamodb:GetItem", 2), ("dynamodb:UpdateItem", 1), ("dynamodb:Query", 1)],
        );
        let (status, _) = call(&e, event("GET", "/v1/operator/presence", &e.operator, None)).await;
        assert_eq!(status, StatusCode::OK);
        phase(
            "the same operator within the minute (no activity write)",
            e.phase().await,
            &[("dynamodb:GetItem", 2), ("dynamodb:Query", 1)],
        );

        print_table("Presence and an on-call ladder (counted on the wire, asserted)", &rows);
    })
    .await;
}

/// Issue 41: a Web Push notification is one step of the outbox item, like any channel's: besides
/// the claim, the message and the save, the recipient's credentials (a revoked operator's devices
/// get nothing) and their devices are read — one `Query` each, and a `GetItem` per credential.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_of_a_web_push_notification() {
    use base64::Engine as _;
    use web_push_native::p256::elliptic_curve::sec1::ToEncodedPoint as _;
    with_env("webpush", false, |e| async move {
        let (url, hits) = receiver().await;
        let hub = &e.dep.hub;
        ma2h_core::channels::manage::put_webpush(hub, "admin", "acme", "phones", &["alice".into()]).await.unwrap();
        let route = ma2h_core::channels::manage::RouteSpec {
            id: "all".into(),
            targets: vec!["phones".into()],
            ..Default::default()
        };
        let key = web_push_native::p256::SecretKey::from_slice(&[7u8; 32]).unwrap();
        let b64 = |b: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b);
        let sub = json!({"endpoint": url, "keys": {
            "p256dh": b64(key.public_key().to_encoded_point(false).as_bytes()), "auth": b64(&[9u8; 16])}});
        let alice = ma2h_core::kernel::auth::Principal {
            account: ma2h_protocol::ids::AccountId::parse("acme").unwrap(),
            id: ma2h_core::kernel::credentials::PrincipalId::Operator(
                ma2h_protocol::ids::HumanId::parse("alice").unwrap(),
            ),
            credential_id: "cred".into(),
        };
        ma2h_core::channels::webpush::subscribe(hub, &alice, &sub, "a phone").await.unwrap();
        route_and_warm(&e, route).await;
        let mut rows: Vec<(String, Tally)> = Vec::new();
        let mut phase = |name: &str, t: Tally, expected: &[(&str, u64)]| {
            crate::cost_eq!(t.requests, expect(expected), "{name}");
            rows.push((name.to_owned(), t));
        };
        let (status, ack) = call(&e, event("POST", "/v1/messages", &e.agent, Some(&ask("wp1", None, None)))).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{ack}");
        phase("submit (an ask routed to Web Push): as any routed ask", e.phase().await, ROUTED_SUBMIT);
        assert_eq!(deliver_via_esm(&e).await, (1, 0));
        assert_eq!(hits.load(Ordering::SeqCst), 1, "one device, one push");
        // claim, message, the recipient's credentials (pointers + the key), devices, save
        phase(
            "deliver: a Web Push notification to one device",
            e.phase().await,
            &[("dynamodb:UpdateItem", 1), ("dynamodb:Query", 3), ("dynamodb:GetItem", 1), ("dynamodb:PutItem", 1)],
        );
        print_table("A Web Push notification (counted on the wire, asserted)", &rows);
    })
    .await;
}

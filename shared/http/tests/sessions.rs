//! §16 sessions through the Router: registration and reads, the lease and its touchpoints, the
//! session's mail (response entries, session-addressed directives and their bounce), and the
//! operator's kill-switch and hard stop — on whichever store `MA2H_TEST_STORE` names.

mod common;

use axum::http::{Method, StatusCode};
use chrono::Duration;
use common::{Reply, TestHub, ask, hub, with};
use ma2h_core::messages::sweep;
use ma2h_core::push::deliver;
use ma2h_protocol::entries::ResponseEntryContext;
use ma2h_protocol::ids::{AccountId, AgentId};
use ma2h_protocol::inbound::parse_signature_member;
use ma2h_protocol::schema::{SchemaKind, validate};
use ma2h_protocol::signature::verify_canonical;
use serde_json::{Value, json};

impl TestHub {
    async fn register(&self, key: &str, body: Value) -> Reply {
        self.call(Method::POST, "/v1/sessions", Some(key), Some(body)).await
    }

    /// Register `agent:bot` and return the session id.
    async fn session(&self) -> String {
        let r = self.register(&self.agent, json!({"label": "ci run", "run_id": "run_1", "ttl_seconds": 120})).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
        validate(SchemaKind::SessionEnvelope, &r.body).unwrap_or_else(|e| panic!("{e}: {}", r.body));
        r.body["session"]["id"].as_str().unwrap().to_owned()
    }

    async fn read_session(&self, key: &str, id: &str) -> Reply {
        self.call(Method::GET, &format!("/v1/sessions/{id}"), Some(key), None).await
    }

    async fn close_session(&self, key: &str, id: &str) -> Reply {
        self.call(Method::DELETE, &format!("/v1/sessions/{id}"), Some(key), None).await
    }

    async fn drain_in(&self, key: &str, session: &str) -> Reply {
        self.call(Method::GET, &format!("/v1/inbox?session={session}"), Some(key), None).await
    }

    async fn directive_to(&self, to: &str) -> Reply {
        self.call(
            Method::POST,
            "/v1/operator/directives",
            Some(&self.operator),
            Some(json!({"to": to, "title": "Stop"})),
        )
        .await
    }
}

#[tokio::test]
async fn a_session_is_registered_clamped_listed_and_visible_only_to_its_owner_and_operator() {
    let h = hub().await;
    let r = h.register(&h.agent, json!({"ttl_seconds": 1, "kind": "worker", "labels": {"repo": "acme/web"}})).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let s = &r.body["session"];
    assert!(s["id"].as_str().unwrap().starts_with("sess_"));
    assert_eq!((s["state"].as_str(), s["ttl_seconds"].as_u64()), (Some("active"), Some(60)), "clamped up to 60");
    assert_eq!((s["kind"].as_str(), s["labels"]["repo"].as_str()), (Some("worker"), Some("acme/web")));
    assert_eq!(r.headers["location"], format!("/v1/sessions/{}", s["id"].as_str().unwrap()));
    let big = h.register(&h.agent, json!({"ttl_seconds": 999_999})).await;
    assert_eq!(big.body["session"]["ttl_seconds"], 3600, "clamped down to the maximum");
    let id = s["id"].as_str().unwrap();

    let own = h.call(Method::GET, "/v1/sessions", Some(&h.agent), None).await;
    validate(SchemaKind::SessionList, &own.body).unwrap();
    assert_eq!((own.body["scope"].as_str(), own.body["sessions"].as_array().unwrap().len()), (Some("own"), 2));
    let theirs = h.call(Method::GET, "/v1/sessions", Some(&h.other_agent), None).await;
    assert_eq!(theirs.body["sessions"], json!([]), "another agent sees none of bot's");
    let all = h.call(Method::GET, "/v1/sessions", Some(&h.operator), None).await;
    assert_eq!(all.body["scope"], "account");

    assert_eq!(h.read_session(&h.agent, id).await.status, StatusCode::OK);
    assert_eq!(h.read_session(&h.operator, id).await.status, StatusCode::OK);
    let unknown = h.read_session(&h.agent, "sess_01JZZZZZZZZZZZZZZZZZZZZZZZ").await;
    for key in [&h.other_agent, &h.foreign_agent] {
        let r = h.read_session(key, id).await;
        assert_eq!((r.status, &r.body), (StatusCode::NOT_FOUND, &unknown.body), "indistinguishable from unknown");
        assert_eq!(h.close_session(key, id).await.status, StatusCode::NOT_FOUND);
    }
    for bad in [
        json!({"ttl_seconds": 0}),
        json!({"labels": {"a": 1}}),
        json!({"run_id": ""}),
        json!([]),
        json!({"labels": {"k": "v".repeat(201)}}),
    ] {
        let r = h.register(&h.agent, bad.clone()).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{bad}: {}", r.body);
    }
    assert_eq!(h.register(&h.operator, json!({})).await.status, StatusCode::FORBIDDEN, "agents register");
    let edge = h.register(&h.agent, json!({"label": "", "labels": {"k".repeat(100): "v".repeat(200)}})).await;
    assert_eq!(edge.status, StatusCode::CREATED, "the published limits are the enforced ones: {}", edge.body);
}

#[tokio::test]
async fn over_the_live_cap_registration_is_429_with_retry_after() {
    let mut settings = common::settings();
    settings.sessions.max_live_per_agent = 2;
    let h = common::hub_with(settings).await;
    h.session().await;
    let second = h.session().await;
    let r = h.register(&h.agent, json!({})).await;
    assert_eq!((r.status, r.code()), (StatusCode::TOO_MANY_REQUESTS, "rate_limited"));
    assert!(r.headers.contains_key("retry-after"));
    // Closing one frees a slot (§16.4: a crash-looping agent clears its stale leases itself).
    assert_eq!(h.close_session(&h.agent, &second).await.status, StatusCode::OK);
    assert_eq!(h.register(&h.agent, json!({})).await.status, StatusCode::CREATED);
}

#[tokio::test]
async fn presenting_a_session_renews_it_and_ended_sessions_answer_410_by_who_ended_them() {
    let h = hub().await;
    let id = h.session().await;
    h.advance(Duration::seconds(100));
    let drained = h.drain_in(&h.agent, &id).await;
    assert_eq!(drained.status, StatusCode::OK, "{}", drained.body);
    let read = h.read_session(&h.agent, &id).await.body;
    assert_eq!(
        read["session"]["expires_at"],
        ma2h_protocol::time::format(h.clock_now() + Duration::seconds(120)),
        "renewed"
    );
    assert_eq!(read["session"]["last_seen"], ma2h_protocol::time::format(h.clock_now()));

    // Another agent presenting it, or an unknown id: 404.
    assert_eq!(h.drain_in(&h.other_agent, &id).await.status, StatusCode::NOT_FOUND);
    assert_eq!(h.drain_in(&h.agent, "sess_nope").await.status, StatusCode::NOT_FOUND);
    let ack = |s: &str| format!("/v1/inbox/ack?session={s}");
    let r = h.call(Method::POST, &ack(&id), Some(&h.other_agent), Some(json!({"ids": []}))).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);

    // Self-closed: 410 gone (re-register and continue); the close is idempotent.
    assert_eq!(h.close_session(&h.agent, &id).await.body["session"]["state"], "closed");
    let again = h.close_session(&h.agent, &id).await;
    assert_eq!((again.status, again.body["session"].get("closed_by_operator")), (StatusCode::OK, None));
    let r = h.drain_in(&h.agent, &id).await;
    assert_eq!((r.status, r.code()), (StatusCode::GONE, "gone"));
    let r = h.call(Method::POST, &ack(&id), Some(&h.agent), Some(json!({"ids": []}))).await;
    assert_eq!((r.status, r.code()), (StatusCode::GONE, "gone"));
    let r = h.submit(&h.agent, with(ask("s1"), "/agent/session", json!(id))).await;
    assert_eq!((r.status, r.code()), (StatusCode::GONE, "destination_gone"));

    // Lapsed: the lease is judged on the Hub clock, at its expiry instant.
    let lapsing = h.session().await;
    h.advance(Duration::seconds(121));
    let r = h.drain_in(&h.agent, &lapsing).await;
    assert_eq!((r.status, r.code()), (StatusCode::GONE, "gone"));
    assert_eq!(h.read_session(&h.agent, &lapsing).await.body["session"]["state"], "expired");
}

#[tokio::test]
async fn a_submit_naming_its_session_renews_it_and_a_foreign_one_is_422() {
    let h = hub().await;
    let id = h.session().await;
    h.advance(Duration::seconds(60));
    let r = h.submit(&h.agent, with(ask("s1"), "/agent/session", json!(id))).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    let read = h.read_session(&h.agent, &id).await.body;
    assert_eq!(
        read["session"]["last_seen"],
        ma2h_protocol::time::format(h.clock_now()),
        "a submit naming it is activity"
    );
    let theirs = h.register(&h.other_agent, json!({})).await.body["session"]["id"].as_str().unwrap().to_owned();
    let r = h.submit(&h.agent, with(ask("s2"), "/agent/session", json!(theirs))).await;
    assert_eq!((r.status, r.code()), (StatusCode::UNPROCESSABLE_ENTITY, "invalid_field"));
}

#[tokio::test]
async fn an_answer_to_a_session_ask_is_a_signed_response_entry_for_that_session_only() {
    let h = hub().await;
    let id = h.session().await;
    let msg = h.submit_ok(with(ask("s1"), "/agent/session", json!(id))).await;
    let r = h.resolve(&h.operator, &msg, json!({"resolution": "answered", "value": "ship"})).await;
    assert_eq!(r.status, StatusCode::OK);
    let resolution_id = r.body["resolution_id"].as_str().unwrap().to_owned();

    assert_eq!(h.call(Method::GET, "/v1/inbox", Some(&h.agent), None).await.body["messages"], json!([]), "v0.4 shape");
    let drained = h.drain_in(&h.agent, &id).await;
    let entries = drained.body["messages"].as_array().unwrap();
    assert_eq!(entries.len(), 1, "{}", drained.body);
    validate(SchemaKind::InboundMessage, &entries[0]).unwrap();
    let response = &entries[0]["response"];
    assert_eq!(
        (response["in_reply_to"].as_str(), response["resolution_id"].as_str()),
        (Some(msg.as_str()), Some(resolution_id.as_str()))
    );
    // §9.8: the verifier rebuilds `to` from its own drain identity.
    let header = parse_signature_member(entries[0]["signature"].as_str().unwrap()).unwrap();
    let key = deliver::agent_signing_key(&h.hub, &AccountId::parse("acme").unwrap(), &AgentId::parse("bot").unwrap())
        .await
        .unwrap();
    let ctx = ResponseEntryContext::for_drain(response, "bot", &id, &header.jti, &header.t).unwrap();
    verify_canonical(&ctx.to_canonical(), &header.v1, &[key.verifying_key()]).expect("signed for this session");
    let other = ResponseEntryContext::for_drain(response, "bot", "sess_01JOTHER", &header.jti, &header.t).unwrap();
    assert!(verify_canonical(&other.to_canonical(), &header.v1, &[key.verifying_key()]).is_err(), "bound to `to`");
    // The drain is delivery evidence; acking the entry acknowledges the Response (§8.7.1).
    let read = h.get(&h.agent, &msg).await.body;
    assert_eq!(read["delivery"]["state"], "delivered-to-agent", "{read}");
    let acked = h
        .call(
            Method::POST,
            &format!("/v1/inbox/ack?session={id}"),
            Some(&h.agent),
            Some(json!({"ids": [resolution_id]})),
        )
        .await;
    assert_eq!(acked.body["acked"], 1);
    assert_eq!(h.get(&h.agent, &msg).await.body["delivery"]["state"], "acknowledged");

    // A session that ended before the answer gets no entry; the Response is still pullable.
    let short = h.session().await;
    let m2 = h.submit_ok(with(ask("s2"), "/agent/session", json!(short))).await;
    h.close_session(&h.agent, &short).await;
    h.resolve(&h.operator, &m2, json!({"resolution": "answered", "value": "hold"})).await;
    assert_eq!(h.drain_in(&h.agent, &id).await.body["messages"], json!([]));
    assert_eq!(h.get(&h.agent, &m2).await.body["status"], "answered");
}

#[tokio::test]
async fn an_agent_resolver_presenting_its_session_is_attested_session_qualified() {
    let h = hub().await;
    let theirs = h.register(&h.other_agent, json!({})).await.body["session"]["id"].as_str().unwrap().to_owned();
    let envelope = with(ask("s1"), "/request/allowed_resolvers", json!([format!("agent:other#{theirs}")]));
    let msg = h.submit_ok(envelope).await;
    let bare = h.resolve(&h.other_agent, &msg, json!({"resolution": "answered", "value": "ship"})).await;
    assert_eq!(bare.status, StatusCode::NOT_FOUND, "the bare principal does not match a session entry");
    let uri = format!("/v1/messages/{msg}/resolve?session={theirs}");
    let r = h
        .call(Method::POST, &uri, Some(&h.other_agent), Some(json!({"resolution": "answered", "value": "ship"})))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let got = h.get(&h.agent, &msg).await.body;
    assert_eq!(got["response"]["response"]["actor"], format!("agent:other#{theirs}"));
}

#[tokio::test]
async fn session_addressed_directives_reach_only_that_session_and_bounce_when_it_ends() {
    let h = hub().await;
    let (id, sibling) = (h.session().await, h.session().await);
    let unknown = h.directive_to("agent:bot#sess_01JZZZZZZZZZZZZZZZZZZZZZZZ").await;
    assert_eq!((unknown.status, unknown.code()), (StatusCode::UNPROCESSABLE_ENTITY, "unknown_destination"));
    let seen = h.directive_to(&format!("agent:bot#{id}")).await.body["id"].as_str().unwrap().to_owned();
    h.advance(Duration::milliseconds(1)); // FIFO is by enqueue instant (ties: any order)
    let unseen_r = h.directive_to(&format!("agent:bot#{id}")).await;
    let unseen = unseen_r.body["id"].as_str().unwrap().to_owned();
    assert_eq!(h.call(Method::GET, "/v1/inbox", Some(&h.agent), None).await.body["messages"], json!([]));
    assert_eq!(h.drain_in(&h.agent, &sibling).await.body["messages"], json!([]), "not a sibling's");
    let first = h.call(Method::GET, &format!("/v1/inbox?session={id}&max=1"), Some(&h.agent), None).await;
    assert_eq!(first.body["messages"][0]["directive"]["id"], seen.as_str());

    h.close_session(&h.agent, &id).await;
    let track = |d: String| {
        let h = &h;
        async move { h.call(Method::GET, &format!("/v1/operator/directives/{d}"), Some(&h.operator), None).await.body }
    };
    let t = track(seen).await;
    assert_eq!(
        (t["delivery"]["state"].as_str(), t["delivery"]["prior"].as_str()),
        (Some("bounced"), Some("delivered"))
    );
    assert!(t["delivery"]["delivered_at"].is_string());
    let t = track(unseen).await;
    assert_eq!((t["delivery"]["state"].as_str(), t["delivery"]["prior"].as_str()), (Some("bounced"), Some("queued")));
    let gone = h.directive_to(&format!("agent:bot#{id}")).await;
    assert_eq!((gone.status, gone.code()), (StatusCode::GONE, "destination_gone"));
}

#[tokio::test]
async fn a_lapsed_session_is_expired_and_bounced_by_the_sweeper_then_purged() {
    let h = hub().await;
    let id = h.session().await;
    let d = h.directive_to(&format!("agent:bot#{id}")).await.body["id"].as_str().unwrap().to_owned();
    h.advance(Duration::seconds(121));
    let report = sweep::sweep_once(&h.hub).await.unwrap();
    assert_eq!((report.sessions_expired, report.entries_bounced), (1, 1), "{report:?}");
    let t = h.call(Method::GET, &format!("/v1/operator/directives/{d}"), Some(&h.operator), None).await.body;
    assert_eq!(t["delivery"]["prior"], "queued");
    h.advance(Duration::seconds(86_400));
    // a store with a native TTL (DynamoDB) deletes nothing itself, and reads the session as purged
    let purged = if h.hub.messages.native_ttl() { 0 } else { 1 };
    assert_eq!(sweep::sweep_once(&h.hub).await.unwrap().sessions_purged, purged);
    assert_eq!(h.read_session(&h.agent, &id).await.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_operator_kill_switch_is_a_hard_stop_only_a_human_can_lift() {
    let h = hub().await;
    let (killed, sibling) = (h.session().await, h.session().await);
    let r = h.close_session(&h.operator, &killed).await;
    assert_eq!((r.status, r.body["session"]["closed_by_operator"].as_bool()), (StatusCode::OK, Some(true)));
    let first = h.call(Method::GET, "/v1/agents/bot/stop", Some(&h.operator), None).await.body;
    h.advance(Duration::seconds(1));
    h.close_session(&h.operator, &killed).await;
    let again = h.call(Method::GET, "/v1/agents/bot/stop", Some(&h.operator), None).await.body;
    assert_eq!(first, again, "a repeated kill keeps the stop as first recorded");
    validate(SchemaKind::SessionEnvelope, &r.body).unwrap();
    // The killed party's own touchpoints say "stop; do not re-register" (§16.3).
    let d = h.drain_in(&h.agent, &killed).await;
    assert_eq!((d.status, d.code()), (StatusCode::GONE, "session_closed_by_operator"));
    let s = h.submit(&h.agent, with(ask("k1"), "/agent/session", json!(killed))).await;
    assert_eq!((s.status, s.code()), (StatusCode::GONE, "session_closed_by_operator"));
    // §16.4.1 point 3: registration is refused while stopped.
    let reg = h.register(&h.agent, json!({})).await;
    assert_eq!((reg.status, reg.code()), (StatusCode::FORBIDDEN, "session_closed_by_operator"));
    // Point 5: no agent credential reaches the resume or the stop, on any route.
    for method in [Method::DELETE, Method::POST, Method::GET] {
        let r = h.call(method.clone(), "/v1/agents/bot/stop", Some(&h.agent), None).await;
        assert_eq!(r.status, StatusCode::FORBIDDEN, "{method}");
    }
    assert_eq!(h.register(&h.other_agent, json!({})).await.status, StatusCode::CREATED, "only bot is stopped");
    // Points 1 and 2: the stop is keyed on the principal and outlives the session's purge.
    h.advance(Duration::seconds(86_401));
    sweep::sweep_once(&h.hub).await.unwrap();
    assert_eq!(h.read_session(&h.agent, &killed).await.status, StatusCode::NOT_FOUND, "purged");
    let reg = h.register(&h.agent, json!({})).await;
    assert_eq!((reg.status, reg.code()), (StatusCode::FORBIDDEN, "session_closed_by_operator"));
    let stop = h.call(Method::GET, "/v1/agents/bot/stop", Some(&h.operator), None).await;
    assert_eq!((stop.body["stopped"].as_bool(), stop.body["session_id"].as_str()), (Some(true), Some(killed.as_str())));
    let _ = sibling;
    let lifted = h.call(Method::DELETE, "/v1/agents/bot/stop", Some(&h.operator), None).await;
    assert_eq!((lifted.status, lifted.body["stopped"].as_bool()), (StatusCode::OK, Some(false)));
    assert_eq!(h.register(&h.agent, json!({})).await.status, StatusCode::CREATED);
}

#[tokio::test]
async fn stopping_an_agent_closes_every_live_session_and_bounces_their_mail() {
    let h = hub().await;
    let (a, b) = (h.session().await, h.session().await);
    let d = h.directive_to(&format!("agent:bot#{a}")).await.body["id"].as_str().unwrap().to_owned();
    let r = h.call(Method::POST, "/v1/agents/bot/stop", Some(&h.operator), None).await;
    assert_eq!((r.status, r.body["stopped"].as_bool()), (StatusCode::OK, Some(true)), "{}", r.body);
    for id in [&a, &b] {
        let s = h.read_session(&h.operator, id).await.body;
        assert_eq!(
            (s["session"]["state"].as_str(), s["session"]["closed_by_operator"].as_bool()),
            (Some("closed"), Some(true))
        );
    }
    let t = h.call(Method::GET, &format!("/v1/operator/directives/{d}"), Some(&h.operator), None).await.body;
    assert_eq!(t["delivery"]["state"], "bounced");
    assert_eq!(h.register(&h.agent, json!({})).await.status, StatusCode::FORBIDDEN);
}

#[tokio::test]
async fn the_admin_console_stops_and_lifts_an_agent_like_an_operator() {
    let h = hub().await;
    let live = h.session().await;
    let stop = ma2h_core::admin::stop_agent(&h.hub, "acme", "bot").await.unwrap();
    assert_eq!(stop.by, ma2h_core::admin::ADMIN_ACTOR);
    assert_eq!(h.read_session(&h.agent, &live).await.body["session"]["closed_by_operator"], true);
    assert_eq!(h.register(&h.agent, json!({})).await.code(), "session_closed_by_operator");
    let seen = h.call(Method::GET, "/v1/agents/bot/stop", Some(&h.operator), None).await.body;
    assert_eq!((seen["stopped"].as_bool(), seen["stopped_by"].as_str()), (Some(true), Some("system:admin")));
    assert!(ma2h_core::admin::stop_status(&h.hub, "acme", "bot").await.unwrap().is_some());
    assert!(ma2h_core::admin::lift_stop(&h.hub, "acme", "bot").await.unwrap());
    assert!(!ma2h_core::admin::lift_stop(&h.hub, "acme", "bot").await.unwrap(), "nothing left to lift");
    assert_eq!(h.register(&h.agent, json!({})).await.status, StatusCode::CREATED);
    assert!(ma2h_core::admin::stop_agent(&h.hub, "acme", "bot#sess_x").await.is_err(), "not an agent id");
}

#[tokio::test]
async fn an_unknown_or_foreign_session_is_a_404_that_says_session() {
    let h = hub().await;
    let mine = h.session().await;
    for (key, id) in [(&h.agent, "sess_nope"), (&h.agent, "garbage"), (&h.other_agent, mine.as_str())] {
        let r = h.call(Method::GET, &format!("/v1/sessions/{id}"), Some(key), None).await;
        assert_eq!(
            (r.status, r.code(), r.message()),
            (StatusCode::NOT_FOUND, "not_found", "unknown session id"),
            "{id}"
        );
    }
    let r = h.call(Method::GET, "/v1/inbox?session=sess_nope", Some(&h.agent), None).await;
    assert_eq!((r.status, r.message()), (StatusCode::NOT_FOUND, "unknown session id"), "{}", r.body);
}

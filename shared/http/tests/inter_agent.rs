//! The v0.5 inter-agent leg through the Router: the opt-in and allowlists, honest submit-time
//! destination validation, signed `message` entries and their claim rules, the addressee as
//! resolver, delivery honesty (bounce, expiry, receipts, undeliverable auto-resolution) and the
//! stream — on whichever store `MA2H_TEST_STORE` names.

mod common;

use axum::http::{Method, StatusCode};
use chrono::Duration;
use common::{Reply, TestHub, hub, hub_with, settings, ts, with};
use ma2h_core::admin;
use ma2h_core::messages::sweep;
use ma2h_core::push::deliver;
use ma2h_protocol::ids::{AccountId, AgentId};
use ma2h_protocol::inbound::parse_signature_member;
use ma2h_protocol::inter_agent::{MessageEntryContext, ReceiptEntryContext};
use ma2h_protocol::schema::{SchemaKind, validate};
use ma2h_protocol::signature::verify_canonical;
use serde_json::{Value, json};

impl TestHub {
    async fn opt_in(&self) {
        let r = self
            .call(Method::PATCH, "/v1/operator/inter-agent", Some(&self.operator), Some(json!({"enabled": true})))
            .await;
        assert_eq!((r.status, r.body["enabled"].as_bool()), (StatusCode::OK, Some(true)), "{}", r.body);
    }

    async fn session_of(&self, key: &str) -> String {
        let r = self.call(Method::POST, "/v1/sessions", Some(key), Some(json!({"ttl_seconds": 600}))).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
        r.body["session"]["id"].as_str().unwrap().to_owned()
    }

    async fn drain(&self, key: &str, session: Option<&str>) -> Vec<Value> {
        let uri = session.map_or("/v1/inbox".to_owned(), |s| format!("/v1/inbox?session={s}"));
        let r = self.call(Method::GET, &uri, Some(key), None).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        for item in r.body["messages"].as_array().unwrap() {
            validate(SchemaKind::InboundMessage, item).unwrap_or_else(|e| panic!("{e}: {item}"));
        }
        r.body["messages"].as_array().unwrap().clone()
    }

    async fn ack(&self, key: &str, session: &str, ids: &[&str]) -> u64 {
        let r = self
            .call(Method::POST, &format!("/v1/inbox/ack?session={session}"), Some(key), Some(json!({"ids": ids})))
            .await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        r.body["acked"].as_u64().unwrap()
    }

    async fn close(&self, key: &str, session: &str) {
        let r = self.call(Method::DELETE, &format!("/v1/sessions/{session}"), Some(key), None).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    }

    async fn read(&self, id: &str) -> Value {
        let r = self.get(&self.agent, id).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        validate(SchemaKind::GetMessage, &r.body).unwrap_or_else(|e| panic!("{e}: {}", r.body));
        r.body
    }
}

/// A Hub over `settings` whose account has opted in.
async fn opted_in(settings: ma2h_core::kernel::settings::Settings) -> TestHub {
    let h = hub_with(settings).await;
    h.opt_in().await;
    h
}

/// An addressed ask from `bot` (optionally in `session`) to `to`.
fn ask_to(to: &str, key: &str, session: Option<&str>) -> Value {
    let mut v = json!({
        "ma2h_version": "0.5", "type": "ask", "created_at": "2026-06-04T12:00:00Z",
        "agent": { "id": "bot", "run_id": "run_1", "runtime": "cli" },
        "to": to, "title": "May I restart your queue consumer?", "idempotency_key": key,
        "client_ref": "ticket-9", "state": { "sealed": "v1.secret-resume-blob" },
        "request": { "mode": "confirm" }
    });
    if let Some(s) = session {
        v["agent"]["session"] = json!(s);
    }
    v
}

fn notify_to(to: &str) -> Value {
    json!({
        "ma2h_version": "0.5", "type": "notify", "created_at": "2026-06-04T12:00:00Z",
        "agent": { "id": "bot", "run_id": "run_1", "runtime": "cli" }, "to": to, "title": "Deploy done"
    })
}

fn accepted(r: &Reply) -> String {
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    validate(SchemaKind::SubmitAck, &r.body).unwrap_or_else(|e| panic!("{e}: {}", r.body));
    assert!(r.body.get("destination").is_some(), "§8.1: every addressed ack carries `destination`");
    r.body["id"].as_str().unwrap().to_owned()
}

/// §7/§14.2: the sender reads its ask resolved as undeliverable, its track `state` (with `prior`).
fn assert_undeliverable(read: &Value, state: &str, prior: Option<&str>) {
    assert_eq!((read["mailbox"]["state"].as_str(), read["mailbox"]["prior"].as_str()), (Some(state), prior), "{read}");
    assert_eq!(
        (read["status"].as_str(), read["response"]["response"]["actor"].as_str()),
        (Some("cancelled"), Some("system:undeliverable")),
        "{read}"
    );
}

/// Advance the clock by `total` in 50-minute steps, draining as `session` each time so its
/// (one-hour) lease stays alive: it would receive any receipt sent meanwhile.
async fn keep_alive(h: &TestHub, key: &str, session: &str, total: Duration) {
    let mut left = total;
    while left > Duration::zero() {
        let step = left.min(Duration::minutes(50));
        h.advance(step);
        left -= step;
        let r = h.call(Method::GET, &format!("/v1/inbox?session={session}&max=1"), Some(key), None).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    }
}

async fn key_of(h: &TestHub, agent: &str) -> ma2h_protocol::signature::SigningKey {
    deliver::agent_signing_key(&h.hub, &AccountId::parse("acme").unwrap(), &AgentId::parse(agent).unwrap())
        .await
        .unwrap()
}

#[tokio::test]
async fn the_leg_is_off_until_the_accounts_operator_opts_in() {
    let h = hub().await;
    let cap = h.call(Method::GET, "/.well-known/ma2h", None, None).await.body;
    assert_eq!(cap["inter_agent"]["enabled"], true, "the deployment ceiling");
    assert_eq!(cap["inter_agent"]["entry_kinds"], json!(["message", "response", "receipt"]));
    assert!(cap["rate_limit"]["inter_agent_requests_per_minute"].as_u64().is_some());
    assert!(cap["inbound"].get("stream_url").is_none(), "not served by this Router's settings");

    let off = h.submit(&h.agent, notify_to("agent:other")).await;
    assert_eq!((off.status, off.code()), (StatusCode::UNPROCESSABLE_ENTITY, "unknown_destination"));
    assert!(off.message().contains("not enabled"), "{}", off.body);
    let denied =
        h.call(Method::PATCH, "/v1/operator/inter-agent", Some(&h.agent), Some(json!({"enabled": true}))).await;
    assert_eq!(denied.status, StatusCode::FORBIDDEN, "only the account's human opts in");
    h.opt_in().await;
    let r = h.submit(&h.agent, notify_to("agent:other")).await;
    accepted(&r);
    assert_eq!(r.body["status"], "queued", "§8.1: never `delivered` at accept");
    assert_eq!(r.body["destination"], json!({"state": "unknown"}), "no presence oracle on another agent");
    // Another account's opt-in is its own.
    let foreign = h.submit(&h.foreign_agent, notify_to("agent:other")).await;
    assert_eq!(foreign.code(), "unknown_destination");
}

#[tokio::test]
async fn every_undeliverable_destination_answers_one_identical_422_and_the_senders_own_ended_session_410() {
    let h = opted_in(settings()).await;
    admin::create_agent(&h.hub, "globex", "elsewhere", None).await.unwrap();
    let theirs = h.session_of(&h.other_agent).await;
    h.close(&h.other_agent, &theirs).await;
    let mine = h.session_of(&h.agent).await;
    h.close(&h.agent, &mine).await;
    let policy = json!({"allowlists": {"guarded": ["other"]}});
    admin::create_agent(&h.hub, "acme", "guarded", None).await.unwrap();
    let r = h.call(Method::PATCH, "/v1/operator/inter-agent", Some(&h.operator), Some(policy)).await;
    assert_eq!(r.body["allowlists"]["guarded"], json!(["other"]));

    let mut bodies = Vec::new();
    for to in [
        "agent:nobody".to_owned(),                                // unknown
        "agent:elsewhere".to_owned(),                             // another account's agent
        "agent:guarded".to_owned(),                               // allowlist refuses bot
        format!("agent:other#{theirs}"),                          // ended, but bot may not see other's sessions
        "agent:other#sess_01JZZZZZZZZZZZZZZZZZZZZZZZ".to_owned(), // unknown session
    ] {
        let r = h.submit(&h.agent, notify_to(&to)).await;
        assert_eq!((r.status, r.code()), (StatusCode::UNPROCESSABLE_ENTITY, "unknown_destination"), "{to}");
        bodies.push(r.body);
    }
    assert!(bodies.windows(2).all(|w| w[0] == w[1]), "byte-identical: no oracle {bodies:?}");
    let own = h.submit(&h.agent, notify_to(&format!("agent:bot#{mine}"))).await;
    assert_eq!((own.status, own.code()), (StatusCode::GONE, "destination_gone"), "own session: visible");
    // The allowlist admits its member.
    let from_other = with(notify_to("agent:guarded"), "/agent/id", json!("other"));
    accepted(&h.submit(&h.other_agent, from_other).await);
    // A pre-0.5 envelope may not carry `to` (it would reach a human inbox elsewhere).
    let old = h.submit(&h.agent, with(notify_to("agent:other"), "/ma2h_version", json!("0.4"))).await;
    assert_eq!(old.status, StatusCode::BAD_REQUEST, "{}", old.body);
}

#[tokio::test]
async fn an_addressed_ask_reaches_only_a_session_drain_signed_and_stripped_and_only_the_addressee_resolves_it() {
    let h = opted_in(settings()).await;
    let asker = h.session_of(&h.agent).await;
    let worker = h.session_of(&h.other_agent).await;
    // A forged `from` is ignored (§10, §8.7.1): the drained message carries the attested one.
    let forged = with(ask_to(&format!("agent:other#{worker}"), "k1", Some(&asker)), "/from", json!("agent:mallory"));
    let r = h.submit(&h.agent, forged).await;
    let id = accepted(&r);
    assert_eq!(r.body["status"], "open");
    assert_eq!(h.read(&id).await["mailbox"]["state"], "queued");

    assert!(h.drain(&h.other_agent, None).await.is_empty(), "§8.7.1: a session-less drain is the v0.4 shape");
    let entries = h.drain(&h.other_agent, Some(&worker)).await;
    assert_eq!(entries.len(), 1);
    let m = &entries[0]["message"];
    assert_eq!(
        (m["id"].as_str(), m["from"].as_str()),
        (Some(id.as_str()), Some(format!("agent:bot#{asker}").as_str()))
    );
    assert!(m.get("state").is_none() && m.get("client_ref").is_none(), "submitter machinery stripped: {m}");
    let header = parse_signature_member(entries[0]["signature"].as_str().unwrap()).unwrap();
    let ctx = MessageEntryContext::for_entry(m, &header.jti, &header.t).unwrap();
    let key = key_of(&h, "other").await;
    verify_canonical(&ctx.to_canonical(), &header.v1, &[key.verifying_key()]).expect("§9.8 signed for the addressee");
    let read = h.read(&id).await;
    assert_eq!(read["mailbox"]["state"], "delivered", "the drain is delivery evidence");

    let answer = json!({"resolution": "answered", "value": "approve"});
    assert_eq!(h.resolve(&h.agent, &id, answer.clone()).await.status, StatusCode::FORBIDDEN, "not the submitter");
    assert_eq!(h.resolve(&h.operator, &id, answer.clone()).await.status, StatusCode::FORBIDDEN, "not the human");
    let done = h
        .call(Method::POST, &format!("/v1/messages/{id}/resolve?session={worker}"), Some(&h.other_agent), Some(answer))
        .await;
    assert_eq!(done.status, StatusCode::OK, "{}", done.body);
    let read = h.read(&id).await;
    assert_eq!(read["response"]["response"]["actor"], format!("agent:other#{worker}"), "attested session-qualified");
    assert_eq!(read["response"]["state"]["sealed"], "v1.secret-resume-blob", "state rides only the Response");
    let back = h.drain(&h.agent, Some(&asker)).await;
    assert_eq!(back[0]["response"]["in_reply_to"], id.as_str(), "the response entry returns to the asker");

    assert_eq!(h.ack(&h.other_agent, &worker, &[&id]).await, 1, "a message entry's ack key is its id");
    let read = h.read(&id).await;
    assert_eq!(read["mailbox"]["state"], "acknowledged");
    assert!(read["mailbox"]["acknowledged_at"].is_string());
}

#[tokio::test]
async fn principal_addressed_mail_goes_to_one_sibling_session_per_window_and_is_rescued_by_another() {
    let h = opted_in(settings()).await;
    let (s1, s2) = (h.session_of(&h.other_agent).await, h.session_of(&h.other_agent).await);
    let id = accepted(&h.submit(&h.agent, notify_to("agent:other")).await);
    assert_eq!(h.drain(&h.other_agent, Some(&s1)).await.len(), 1, "first claim wins");
    assert!(h.drain(&h.other_agent, Some(&s2)).await.is_empty(), "hidden from the sibling this window");
    h.close(&h.other_agent, &s1).await;
    assert_eq!(h.read(&id).await["status"], "delivered", "a principal-addressed entry never bounces on one death");
    h.advance(Duration::seconds(61));
    let rescued = h.drain(&h.other_agent, Some(&s2)).await;
    assert_eq!(rescued[0]["message"]["id"], id.as_str(), "visibility-timeout redelivery to a sibling");
}

#[tokio::test]
async fn a_session_death_bounces_its_mail_resolves_the_ask_undeliverable_and_receipts_the_senders_session() {
    let h = opted_in(settings()).await;
    let asker = h.session_of(&h.agent).await;
    let worker = h.session_of(&h.other_agent).await;
    let ask_id = accepted(&h.submit(&h.agent, ask_to(&format!("agent:other#{worker}"), "k2", Some(&asker))).await);
    let seen_id = accepted(
        &h.submit(&h.agent, with(notify_to(&format!("agent:other#{worker}")), "/agent/session", json!(asker))).await,
    );
    // Drain only the notify's... both arrive; ack neither.
    assert_eq!(h.drain(&h.other_agent, Some(&worker)).await.len(), 2);
    let late = accepted(
        &h.submit(&h.agent, with(notify_to(&format!("agent:other#{worker}")), "/agent/session", json!(asker))).await,
    );
    // The operator's kill-switch closes the worker's session.
    h.close(&h.operator, &worker).await;

    let ask = h.read(&ask_id).await;
    assert_eq!(ask["status"], "cancelled", "§7: undeliverable ask auto-resolves");
    assert_eq!(ask["response"]["response"]["actor"], "system:undeliverable");
    assert_eq!(
        (ask["mailbox"]["state"].as_str(), ask["mailbox"]["prior"].as_str()),
        (Some("bounced"), Some("delivered"))
    );
    let seen = h.read(&seen_id).await;
    assert_eq!((seen["status"].as_str(), seen["mailbox"]["prior"].as_str()), (Some("bounced"), Some("delivered")));
    let never = h.read(&late).await;
    assert_eq!((never["status"].as_str(), never["mailbox"]["prior"].as_str()), (Some("bounced"), Some("queued")));
    assert!(never["mailbox"].get("delivered_at").is_none());

    let mine = h.drain(&h.agent, Some(&asker)).await;
    let receipts: Vec<&Value> = mine.iter().filter(|e| e.get("receipt").is_some()).collect();
    assert_eq!(receipts.len(), 3, "one per bounced message: {mine:?}");
    assert!(mine.iter().any(|e| e["response"]["in_reply_to"] == ask_id.as_str()), "and the auto-cancellation");
    let r = receipts.iter().find(|e| e["receipt"]["in_reply_to"] == late.as_str()).unwrap();
    assert_eq!(
        (r["receipt"]["prior"].as_str(), r["receipt"]["session"].as_str()),
        (Some("queued"), Some(worker.as_str()))
    );
    assert!(!r["receipt"].to_string().contains("operator"), "§16.4: no attribution on a receipt");
    let header = parse_signature_member(r["signature"].as_str().unwrap()).unwrap();
    let ctx =
        ReceiptEntryContext::for_receipt(&r["receipt"], &format!("agent:bot#{asker}"), &header.jti, &header.t).unwrap();
    verify_canonical(&ctx.to_canonical(), &header.v1, &[key_of(&h, "bot").await.verifying_key()]).expect("§9.8");
    let rcpt = r["receipt"]["id"].as_str().unwrap();
    assert_eq!(h.ack(&h.agent, &asker, &[rcpt]).await, 1, "a receipt's ack key is its rcpt_ id");
}

#[tokio::test]
async fn unseen_expiry_seen_expiry_and_the_principal_addressed_orphan_are_honest_at_the_deadline() {
    let mut s = settings();
    s.mailbox.retention_days = 1;
    let h = opted_in(s).await;
    let r = h.call(Method::POST, "/v1/sessions", Some(&h.agent), Some(json!({"ttl_seconds": 3600}))).await;
    let asker = r.body["session"]["id"].as_str().unwrap().to_owned();
    let worker = h.session_of(&h.other_agent).await;
    let soon = ts(h.clock_now() + Duration::seconds(30));
    // Seen before its own expires_at, never answered: stays `delivered` (§14.2: seen, unanswered).
    let timed = accepted(
        &h.submit(&h.agent, with(ask_to("agent:other", "k3", Some(&asker)), "/expires_at", json!(soon))).await,
    );
    // Principal-addressed, drained, never acked, no expires_at: an orphan at the inbound retention.
    let orphan = accepted(&h.submit(&h.agent, ask_to("agent:other", "k4", Some(&asker))).await);
    assert_eq!(h.drain(&h.other_agent, Some(&worker)).await.len(), 2);
    // A self-addressed notify nobody ever drains.
    let never = accepted(&h.submit(&h.agent, with(notify_to("agent:bot"), "/expires_at", json!(soon))).await);
    h.advance(Duration::seconds(31));
    sweep::sweep_once(&h.hub).await.unwrap();
    let n = h.read(&never).await;
    assert_eq!((n["status"].as_str(), n["mailbox"]["state"].as_str()), (Some("expired"), Some("expired")), "{n}");
    assert!(n["mailbox"].get("prior").is_none(), "`expired` means never seen; no prior");
    let t = h.read(&timed).await;
    assert_eq!((t["status"].as_str(), t["mailbox"]["state"].as_str()), (Some("expired"), Some("delivered")), "{t}");
    // Past the inbound retention (the asker's session kept alive, renewed every 50 minutes).
    keep_alive(&h, &h.agent, &asker, Duration::hours(25)).await;
    sweep::sweep_once(&h.hub).await.unwrap();
    assert_undeliverable(&h.read(&orphan).await, "bounced", Some("delivered"));
    let receipts: Vec<Value> =
        h.drain(&h.agent, Some(&asker)).await.into_iter().filter(|e| e.get("receipt").is_some()).collect();
    assert_eq!(receipts.len(), 1, "the orphan's bounce only (expiry emits none): {receipts:?}");
    assert_eq!(receipts[0]["receipt"]["session"], worker.as_str(), "names the last claimant");
}

#[tokio::test]
async fn a_replay_from_a_new_session_returns_the_original_and_routes_to_the_first() {
    let h = opted_in(settings()).await;
    let first = h.session_of(&h.agent).await;
    let id = accepted(&h.submit(&h.agent, ask_to("agent:other", "k4", Some(&first))).await);
    let second = h.session_of(&h.agent).await;
    let again = h.submit(&h.agent, ask_to("agent:other", "k4", Some(&second))).await;
    assert_eq!((again.body["id"].as_str(), again.body["status"].as_str()), (Some(id.as_str()), Some("open")));
    assert!(again.body.get("destination").is_some());
    let worker = h.session_of(&h.other_agent).await;
    let m = h.drain(&h.other_agent, Some(&worker)).await;
    assert_eq!(m[0]["message"]["from"], format!("agent:bot#{first}"));
    let differs = h.submit(&h.agent, with(ask_to("agent:other", "k4", None), "/title", json!("other"))).await;
    assert_eq!(differs.status, StatusCode::CONFLICT);
}

#[tokio::test]
async fn addressed_submits_are_limited_per_sender() {
    let mut s = settings();
    s.inter_agent.requests_per_minute = 2;
    let h = opted_in(s).await;
    accepted(&h.submit(&h.agent, notify_to("agent:other")).await);
    accepted(&h.submit(&h.agent, notify_to("agent:other")).await);
    let third = h.submit(&h.agent, notify_to("agent:other")).await;
    assert_eq!(third.status, StatusCode::TOO_MANY_REQUESTS, "{}", third.body);
    let human_inbox = h.submit(&h.agent, common::notify()).await;
    assert_eq!(human_inbox.status, StatusCode::ACCEPTED, "the inter-agent budget is its own");
}

#[tokio::test]
async fn the_stream_pushes_provisionally_and_closes_before_the_lease() {
    let mut s = settings();
    s.inter_agent.stream_served = true;
    s.inter_agent.stream_max_hold = std::time::Duration::from_millis(300);
    let h = opted_in(s).await;
    let cap = h.call(Method::GET, "/.well-known/ma2h", None, None).await.body;
    assert_eq!(cap["inbound"]["stream_url"], "https://hub.test/v1/inbox/stream");
    assert!(cap["inbound"]["stream_max_hold_seconds"].as_u64() <= cap["presence"]["freshness_seconds"].as_u64());
    let worker = h.session_of(&h.other_agent).await;
    let id = accepted(&h.submit(&h.agent, notify_to("agent:other")).await);
    let r = h.call(Method::GET, &format!("/v1/inbox/stream?session={worker}"), Some(&h.other_agent), None).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(r.headers["content-type"], "text/event-stream");
    let text = r.body.as_str().unwrap();
    assert!(text.contains(&format!("event: message\nid: {id}\ndata: ")), "{text}");
    assert!(text.trim_end().ends_with("event: close\ndata: {\"reconnect\":true}"), "{text}");
    assert_eq!(h.read(&id).await["status"], "queued", "§8.7.2: a push is not delivery evidence");
    assert!(h.drain(&h.other_agent, Some(&worker)).await.is_empty(), "but it started the window");
    assert_eq!(h.ack(&h.other_agent, &worker, &[&id]).await, 1, "acked after the push");
    assert_eq!(h.read(&id).await["status"], "acknowledged");
    let none = h.call(Method::GET, "/v1/inbox/stream", Some(&h.other_agent), None).await;
    assert_eq!(none.status, StatusCode::BAD_REQUEST, "a stream serves one session");
    let gone = h
        .call(Method::GET, "/v1/inbox/stream?session=sess_01JZZZZZZZZZZZZZZZZZZZZZZZ", Some(&h.other_agent), None)
        .await;
    assert_eq!(gone.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn an_ask_nobody_drains_before_the_inbound_retention_resolves_undeliverable_without_a_receipt() {
    let mut s = settings();
    s.mailbox.retention_days = 1;
    let h = opted_in(s).await;
    let r = h.call(Method::POST, "/v1/sessions", Some(&h.agent), Some(json!({"ttl_seconds": 3600}))).await;
    let asker = r.body["session"]["id"].as_str().unwrap().to_owned();
    let id = accepted(&h.submit(&h.agent, ask_to("agent:other", "k9", Some(&asker))).await);
    // Keep the asker's session alive across the wait (renewed every 50 minutes): it would receive
    // a receipt if one were sent.
    keep_alive(
        &h,
        &h.agent,
        &asker,
        Duration::days(i64::from(h.hub.settings.mailbox.retention_days)) + Duration::hours(1),
    )
    .await;
    sweep::sweep_once(&h.hub).await.unwrap();
    assert_undeliverable(&h.read(&id).await, "expired", None);
    let mine = h.drain(&h.agent, Some(&asker)).await;
    assert!(mine.iter().all(|e| e.get("receipt").is_none()), "§14.2: expiry emits no receipt: {mine:?}");
    assert!(mine.iter().any(|e| e["response"]["in_reply_to"] == id.as_str()), "the auto-cancellation returns");
}

#[tokio::test]
async fn mail_written_for_a_session_whose_bounce_already_ran_is_bounced_when_the_sender_reads() {
    use ma2h_core::sessions::model::{EndKind, SessionEnd};
    let h = opted_in(settings()).await;
    let worker = h.session_of(&h.other_agent).await;
    let id = accepted(&h.submit(&h.agent, ask_to(&format!("agent:other#{worker}"), "k10", None)).await);
    // The race: the session ends and its bounce pass completes as if before the insert landed.
    let acme = AccountId::parse("acme").unwrap();
    let sid = ma2h_protocol::ids::SessionId::parse(&worker).unwrap();
    let at = h.clock_now();
    h.hub
        .sessions
        .end_session(&acme, &sid, SessionEnd { at, kind: EndKind::Closed }, at + Duration::days(1), None)
        .await
        .unwrap();
    h.hub.sessions.bounce_done(&acme, &sid).await.unwrap();
    assert_undeliverable(&h.read(&id).await, "bounced", Some("queued"));
}

#[tokio::test]
async fn other_agents_mail_is_capped_per_audience_and_never_crowds_out_directives() {
    let mut s = settings();
    s.mailbox.depth = 2;
    let h = opted_in(s).await;
    accepted(&h.submit(&h.agent, notify_to("agent:other")).await);
    accepted(&h.submit(&h.agent, notify_to("agent:other")).await);
    let full = h.submit(&h.agent, notify_to("agent:other")).await;
    assert_eq!((full.status, full.code()), (StatusCode::TOO_MANY_REQUESTS, "rate_limited"), "{}", full.body);
    let d = h
        .call(
            Method::POST,
            "/v1/operator/directives",
            Some(&h.operator),
            Some(json!({"to": "agent:other", "title": "Pause"})),
        )
        .await;
    assert_eq!(d.status, StatusCode::CREATED, "the human's directives have their own room: {}", d.body);
}

/// A Hub serving the stream with a 20 s hold, and the other agent's live session.
async fn streaming_hub() -> (TestHub, String) {
    let mut s = settings();
    s.inter_agent.stream_served = true;
    s.inter_agent.stream_max_hold = std::time::Duration::from_secs(20);
    let h = opted_in(s).await;
    let worker = h.session_of(&h.other_agent).await;
    (h, worker)
}

/// Hold the other agent's stream on `session`, run `mid_hold` 200 ms in, and require the stream
/// to end with its close frame well before the 20 s hold; its body.
/// Hold `session`'s stream while `mid_hold` runs; the stream must end soon, with a close frame
/// that says not to reconnect and the §8.5 code a reconnect would get.
async fn stream_ended_by(h: &TestHub, session: &str, code: &str, mid_hold: impl Future<Output = ()>) -> String {
    let started = std::time::Instant::now();
    let uri = format!("/v1/inbox/stream?session={session}");
    let (r, ()) = tokio::join!(h.call(Method::GET, &uri, Some(&h.other_agent), None), async {
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        mid_hold.await;
    });
    assert_eq!(r.status, StatusCode::OK);
    assert!(started.elapsed() < std::time::Duration::from_secs(5), "held {:?}", started.elapsed());
    let body = r.body.as_str().unwrap().to_owned();
    let last = body.trim_end().rsplit("\n\n").next().unwrap_or_default();
    let data: Value = serde_json::from_str(last.strip_prefix("event: close\ndata: ").expect(&body)).unwrap();
    assert_eq!(data, json!({"reconnect": false, "code": code}), "{body}");
    // And that is what a reconnect gets.
    let again = h.call(Method::GET, &format!("/v1/inbox/stream?session={session}"), Some(&h.other_agent), None).await;
    assert_eq!(again.body["error"]["code"], code, "{}", again.body);
    body
}

#[tokio::test]
async fn a_stream_stops_soon_after_its_session_ends_mid_hold() {
    let (h, worker) = streaming_hub().await;
    stream_ended_by(&h, &worker, "gone", async {
        h.close(&h.other_agent, &worker).await;
    })
    .await;
}

#[tokio::test]
async fn a_stream_killed_by_the_operator_says_not_to_reconnect() {
    let (h, worker) = streaming_hub().await;
    stream_ended_by(&h, &worker, "session_closed_by_operator", async {
        h.close(&h.operator, &worker).await;
    })
    .await;
}

/// Found by a black-box pass (session 18): a held stream kept pushing signed entries after its
/// key was revoked, while every request with that key already got 401.
#[tokio::test]
async fn a_stream_stops_soon_after_its_credential_is_revoked_mid_hold() {
    let (h, worker) = streaming_hub().await;
    let credential = ma2h_core::admin::list(&h.hub)
        .await
        .unwrap()
        .into_iter()
        .find(|c| c.principal == "agent:other" && c.account == "acme")
        .expect("the other agent's credential")
        .credential_id;
    let body = stream_ended_by(&h, &worker, "unauthenticated", async {
        ma2h_core::admin::revoke(&h.hub, &credential).await.unwrap();
        let to_other = json!({"to": "agent:other", "title": "After revoke"});
        let d = h.call(Method::POST, "/v1/operator/directives", Some(&h.operator), Some(to_other)).await;
        assert_eq!(d.status, StatusCode::CREATED, "{}", d.body);
    })
    .await;
    assert!(!body.contains("After revoke"), "nothing is pushed to a revoked key: {body}");
}

#[tokio::test]
async fn a_replayed_ack_reads_the_senders_own_ended_session_as_offline() {
    let h = opted_in(settings()).await;
    let mine = h.session_of(&h.agent).await;
    let to = format!("agent:bot#{mine}");
    let first = h.submit(&h.agent, ask_to(&to, "k11", Some(&mine))).await;
    accepted(&first);
    assert_eq!(first.body["destination"]["state"], "online", "self-addressed: its own session is visible");
    h.close(&h.agent, &mine).await;
    let again = h.submit(&h.agent, ask_to(&to, "k11", None)).await;
    assert_eq!(again.body["id"], first.body["id"], "the replay recovers the original");
    assert_eq!(again.body["destination"]["state"], "offline", "{}", again.body);
    assert!(again.body["destination"]["last_seen"].is_string());
}

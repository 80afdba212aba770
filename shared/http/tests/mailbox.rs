//! The human→agent leg through the Router: directives (§13), drain and ack (§8.7), the delivery
//! track (§14.2), presence (§15) — on whichever store `MA2H_TEST_STORE` names.

mod common;

use axum::http::{Method, StatusCode};
use chrono::Duration;
use common::{Reply, TestHub, hub, ts};
use ma2h_core::admin;
use ma2h_core::messages::sweep;
use ma2h_core::push::deliver;
use ma2h_protocol::ids::{AccountId, AgentId};
use ma2h_protocol::inbound::{InboundContext, parse_signature_member};
use ma2h_protocol::schema::{SchemaKind, validate};
use ma2h_protocol::signature::verify_canonical;
use serde_json::{Value, json};

impl TestHub {
    async fn send(&self, body: Value) -> Reply {
        self.call(Method::POST, "/v1/operator/directives", Some(&self.operator), Some(body)).await
    }

    async fn send_ok(&self, title: &str) -> String {
        let r = self
            .send(json!({"to": "agent:bot", "title": title, "body": "Hold **all** deploys.", "priority": "urgent",
                                 "tags": ["incident"], "context": [{"kind": "text", "text": "INC-42"}]}))
            .await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
        r.body["id"].as_str().unwrap().to_owned()
    }

    async fn drain(&self, key: &str, query: &str) -> Reply {
        self.call(Method::GET, &format!("/v1/inbox{query}"), Some(key), None).await
    }

    async fn ack(&self, key: &str, body: Value) -> Reply {
        self.call(Method::POST, "/v1/inbox/ack", Some(key), Some(body)).await
    }

    async fn track(&self, id: &str) -> Reply {
        self.call(Method::GET, &format!("/v1/operator/directives/{id}"), Some(&self.operator), None).await
    }

    async fn presence(&self, key: &str, agent: &str) -> Reply {
        self.call(Method::GET, &format!("/v1/agents/{agent}/presence"), Some(key), None).await
    }

    /// Verify one drained entry as an agent must (§9.7): schema, rebuilt context, signature.
    async fn verified(&self, entry: &Value) -> (String, String) {
        validate(SchemaKind::InboundMessage, entry).unwrap_or_else(|e| panic!("{e}: {entry}"));
        let directive = &entry["directive"];
        let header = parse_signature_member(entry["signature"].as_str().unwrap()).unwrap();
        let ctx = InboundContext::for_directive(directive, &header.jti, &header.t).unwrap();
        let key =
            deliver::agent_signing_key(&self.hub, &AccountId::parse("acme").unwrap(), &AgentId::parse("bot").unwrap())
                .await
                .unwrap();
        verify_canonical(&ctx.to_canonical(), &header.v1, &[key.verifying_key()]).expect("signature verifies");
        assert_eq!(header.t, self.clock_now().timestamp().to_string(), "signed at delivery time");
        (directive["id"].as_str().unwrap().to_owned(), header.jti)
    }
}

#[tokio::test]
async fn an_operator_directive_is_drained_signed_acked_and_tracked() {
    let h = hub().await;
    let id = h.send_ok("Pause deploys").await;
    let sent = h.track(&id).await;
    assert_eq!(sent.body["delivery"]["state"], "queued");
    assert_eq!(sent.body["directive"]["from"], "human:alice", "from is attested, never from the body");
    assert_eq!(sent.body["directive"]["ma2h_version"], "0.5");

    let drained = h.drain(&h.agent, "").await;
    assert_eq!(drained.status, StatusCode::OK);
    assert_eq!(drained.headers["cache-control"], "no-store");
    let messages = drained.body["messages"].as_array().unwrap();
    assert_eq!(messages.len(), 1);
    let (got, _) = h.verified(&messages[0]).await;
    assert_eq!(got, id);
    assert_eq!(messages[0]["directive"]["title"], "Pause deploys");
    let track = h.track(&id).await.body;
    assert_eq!(
        (track["delivery"]["state"].as_str(), track["delivery"]["delivered_at"].as_str()),
        (Some("delivered"), Some(ts(h.clock_now()).replace('Z', ".000Z").as_str()))
    );

    h.advance(Duration::seconds(5));
    let acked = h.ack(&h.agent, json!({"ids": [id, id], "note": "on it <b>now</b>"})).await;
    assert_eq!((acked.status, acked.body.clone()), (StatusCode::OK, json!({"acked": 1})));
    let track = h.track(&id).await.body;
    assert_eq!(track["delivery"]["state"], "acknowledged");
    assert_eq!(track["delivery"]["ack"]["note"], "on it <b>now</b>", "the note is data; renderers sanitize it");
    assert_eq!(track["delivery"]["ack"]["by"], "agent:bot");
    validate(SchemaKind::Ack, &track["delivery"]["ack"]).unwrap();
    assert_eq!(h.ack(&h.agent, json!({"ids": [id]})).await.body, json!({"acked": 0}), "a repeat is a no-op");
    h.advance(Duration::seconds(120));
    assert_eq!(h.drain(&h.agent, "").await.body, json!({"messages": []}), "an acked entry never comes back");
}

#[tokio::test]
async fn an_unacked_directive_is_redelivered_after_the_window_with_a_fresh_t_and_jti() {
    let h = hub().await;
    let id = h.send_ok("Rotate keys").await;
    let first = h.drain(&h.agent, "?max=5").await.body["messages"][0].clone();
    let (_, jti1) = h.verified(&first).await;
    h.advance(Duration::seconds(59));
    assert_eq!(h.drain(&h.agent, "").await.body["messages"], json!([]), "hidden inside the window");
    h.advance(Duration::seconds(1));
    let again = h.drain(&h.agent, "").await.body["messages"][0].clone();
    let (id2, jti2) = h.verified(&again).await;
    assert_eq!(id2, id);
    assert_ne!(jti1, jti2, "re-signed per delivery");
    assert_ne!(first["signature"], again["signature"]);
    assert_eq!(first["directive"], again["directive"], "the bound payload never changes");
    assert_eq!(h.track(&id).await.body["delivery"]["deliveries"], 2);
}

#[tokio::test]
async fn mailboxes_are_isolated_and_a_foreign_ack_changes_nothing() {
    let h = hub().await;
    let id = h.send_ok("Only for bot").await;
    assert_eq!(h.drain(&h.other_agent, "").await.body["messages"], json!([]));
    assert_eq!(h.drain(&h.foreign_agent, "").await.body["messages"], json!([]), "same agent id, other account");
    assert_eq!(h.drain(&h.agent, "").await.body["messages"].as_array().unwrap().len(), 1);
    for key in [&h.other_agent, &h.foreign_agent] {
        assert_eq!(h.ack(key, json!({"ids": [id]})).await.body, json!({"acked": 0}));
    }
    assert_eq!(h.track(&id).await.body["delivery"]["state"], "delivered");
    // An operator has no mailbox; an agent cannot send or read directives.
    assert_eq!(h.drain(&h.operator, "").await.code(), "not_authorized");
    let as_agent = h
        .call(Method::POST, "/v1/operator/directives", Some(&h.agent), Some(json!({"to": "agent:bot", "title": "x"})))
        .await;
    assert_eq!(as_agent.status, StatusCode::FORBIDDEN);
    assert_eq!(
        h.call(Method::GET, &format!("/v1/operator/directives/{id}"), Some(&h.agent), None).await.status,
        StatusCode::FORBIDDEN
    );
}

#[tokio::test]
async fn never_delivered_acks_count_nothing_and_unknown_ids_are_silent() {
    let h = hub().await;
    let id = h.send_ok("Queued only").await;
    let r = h.ack(&h.agent, json!({"ids": [id, "dir_01HZXDIR0001", "msg_x", "whatever"]})).await;
    assert_eq!((r.status, r.body), (StatusCode::OK, json!({"acked": 0})), "ack cannot fabricate a receipt");
    assert_eq!(h.track(&id).await.body["delivery"]["state"], "queued");
}

#[tokio::test]
async fn undeliverable_destinations_answer_one_identical_422() {
    let h = hub().await;
    admin::create_agent(&h.hub, "globex", "elsewhere", None).await.unwrap();
    let mut bodies = Vec::new();
    for to in ["agent:nobody", "agent:elsewhere", "agent:bot#sess_01J", "agent:a\u{7}b"] {
        let r = h.send(json!({"to": to, "title": "x"})).await;
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{to}: {}", r.body);
        bodies.push(r.body);
    }
    assert!(bodies.iter().all(|b| *b == bodies[0]), "no existence oracle: {bodies:?}");
    assert_eq!(bodies[0]["error"]["code"], "unknown_destination");
}

#[tokio::test]
async fn directive_bodies_are_validated_before_anything_is_written() {
    let h = hub().await;
    let past = ts(h.clock_now() - Duration::seconds(1));
    let cases: &[(Value, StatusCode, &str)] = &[
        (json!("text"), StatusCode::BAD_REQUEST, "/"),
        (json!({"to": "agent:bot"}), StatusCode::BAD_REQUEST, "/title"),
        (json!({"to": "bot", "title": "x"}), StatusCode::BAD_REQUEST, "/to"),
        (json!({"to": "agent:bot", "title": "x", "request": {}}), StatusCode::BAD_REQUEST, "/request"),
        (json!({"to": "agent:bot", "title": "x", "state": 1}), StatusCode::BAD_REQUEST, "/state"),
        (json!({"to": "agent:bot", "title": "x", "priority": "now"}), StatusCode::BAD_REQUEST, "/priority"),
        (json!({"to": "agent:bot", "title": "x\ny"}), StatusCode::BAD_REQUEST, "/title"),
        (json!({"to": "agent:bot", "title": "x".repeat(201)}), StatusCode::BAD_REQUEST, "/title"),
        (json!({"to": "agent:bot", "title": "x", "tags": [1]}), StatusCode::BAD_REQUEST, "/tags/0"),
        (
            json!({"to": "agent:bot", "title": "x", "context": [{"kind": "nope"}]}),
            StatusCode::BAD_REQUEST,
            "/context/0",
        ),
        (json!({"to": "agent:bot", "title": "x", "expires_at": "soon"}), StatusCode::BAD_REQUEST, "/expires_at"),
        (json!({"to": "agent:bot", "title": "x", "expires_at": past}), StatusCode::UNPROCESSABLE_ENTITY, "/expires_at"),
    ];
    for (body, status, pointer) in cases {
        let r = h.send(body.clone()).await;
        assert_eq!(r.status, *status, "{body}: {}", r.body);
        assert!(r.message().contains(&format!("`{pointer}")), "{body}: {}", r.body);
    }
    let raw = h.call_raw(Method::POST, "/v1/operator/directives", Some(&h.operator), Some(b"{nope".to_vec())).await;
    assert_eq!(raw.status, StatusCode::BAD_REQUEST);
    assert_eq!(h.drain(&h.agent, "").await.body["messages"], json!([]), "nothing was enqueued");
}

/// The Hub's own members in a directive request are ignored, as an agent's submit ignores a
/// `from` (§10, §13.1): the delivered directive carries the attested author and the Hub's id,
/// type, version and time — never the request's.
#[tokio::test]
async fn the_hubs_own_members_in_a_directive_request_are_ignored_never_taken() {
    let h = hub().await;
    let forged = json!({"to": "agent:bot", "title": "x", "from": "human:mallory", "id": "dir_forged",
                        "type": "ask", "ma2h_version": "9.9", "created_at": "2001-01-01T00:00:00Z"});
    let r = h.send(forged).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let drained = h.drain(&h.agent, "").await;
    let d = &drained.body["messages"][0]["directive"];
    assert_eq!(
        (d["from"].as_str(), d["type"].as_str(), d["ma2h_version"].as_str()),
        (Some("human:alice"), Some("directive"), Some("0.5"))
    );
    assert_ne!(d["id"], "dir_forged");
    assert_ne!(d["created_at"], "2001-01-01T00:00:00Z");
}

#[tokio::test]
async fn bad_drain_and_ack_input_is_a_400_and_sessions_are_unknown() {
    let h = hub().await;
    for q in ["?max=0", "?max=-1", "?max=abc", "?wait=1.5", "?wait=x"] {
        assert_eq!(h.drain(&h.agent, q).await.status, StatusCode::BAD_REQUEST, "{q}");
    }
    assert_eq!(h.drain(&h.agent, "?session=sess_01J").await.status, StatusCode::NOT_FOUND);
    let many: Vec<String> = (0..101).map(|i| format!("dir_{i}")).collect();
    for body in [
        json!({}),
        json!({"ids": "dir_x"}),
        json!({"ids": [1]}),
        json!({"ids": many}),
        json!({"ids": ["x".repeat(129)]}),
        json!({"ids": [], "note": 5}),
        json!({"ids": [], "note": "n".repeat(2001)}),
        json!([]),
    ] {
        let r = h.ack(&h.agent, body.clone()).await;
        assert_eq!((r.status, r.code()), (StatusCode::BAD_REQUEST, "validation_error"), "{body}");
    }
    assert_eq!(h.ack(&h.agent, json!({"ids": []})).await.body, json!({"acked": 0}));
    assert_eq!(h.drain(&h.agent, "?max=1000").await.status, StatusCode::OK, "a large max is clamped");
    h.send_ok("so the clamped wait returns at once").await;
    assert_eq!(h.drain(&h.agent, "?wait=100000").await.status, StatusCode::OK, "a long wait is clamped");
    assert_eq!(h.drain("nope", "").await.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_drain_returns_at_most_max_in_fifo_order() {
    let h = hub().await;
    let mut ids = Vec::new();
    for i in 0..3 {
        ids.push(h.send_ok(&format!("d{i}")).await);
        h.advance(Duration::milliseconds(5));
    }
    let got: Vec<String> = h.drain(&h.agent, "?max=2").await.body["messages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["directive"]["id"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(got, ids[..2]);
    assert_eq!(h.drain(&h.agent, "").await.body["messages"][0]["directive"]["id"], json!(ids[2]));
}

#[tokio::test]
async fn a_waiting_drain_wakes_when_a_directive_arrives() {
    let h = hub().await;
    let app = h.app.clone();
    let key = h.agent.clone();
    let waiter = tokio::spawn(async move {
        use tower::ServiceExt;
        let req = axum::http::Request::get("/v1/inbox?wait=20")
            .header("authorization", format!("Bearer {key}"))
            .body(axum::body::Body::empty())
            .unwrap();
        let resp = app.oneshot(req).await.unwrap();
        let bytes = http_body_util::BodyExt::collect(resp.into_body()).await.unwrap().to_bytes();
        serde_json::from_slice::<Value>(&bytes).unwrap()
    });
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    let id = h.send_ok("Wake up").await;
    let body = tokio::time::timeout(std::time::Duration::from_secs(15), waiter).await.expect("woken").unwrap();
    assert_eq!(body["messages"][0]["directive"]["id"], json!(id));
}

#[tokio::test]
async fn presence_is_unknown_then_online_then_offline_and_owner_only() {
    let h = hub().await;
    let unknown = h.presence(&h.operator, "bot").await;
    assert_eq!(unknown.body, json!({"agent_id": "bot", "state": "unknown", "freshness_seconds": 90}));
    validate(SchemaKind::Presence, &unknown.body).unwrap();
    h.drain(&h.agent, "").await;
    let online = h.presence(&h.operator, "bot").await.body;
    assert_eq!((online["state"].as_str(), online["last_seen"].is_string()), (Some("online"), true));
    validate(SchemaKind::Presence, &online).unwrap();
    // Not the owner: indistinguishable from never seen.
    for key in [&h.agent, &h.other_agent, &h.foreign_agent] {
        assert_eq!(h.presence(key, "bot").await.body["state"], "unknown");
        assert!(h.presence(key, "bot").await.body.get("last_seen").is_none());
    }
    h.advance(Duration::seconds(91));
    assert_eq!(h.presence(&h.operator, "bot").await.body["state"], "offline");
    assert_eq!(h.presence(&h.operator, "bot").await.body["last_seen"], online["last_seen"]);
    assert_eq!(h.call(Method::GET, "/v1/agents/bot/presence", None, None).await.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn presence_paths_carry_agent_ids_with_slashes() {
    let h = hub().await;
    let key = admin::create_agent(&h.hub, "acme", "deploy/bot", None).await.unwrap().api_key;
    h.drain(&key, "").await;
    for path in ["deploy/bot", "deploy%2Fbot"] {
        let r = h.presence(&h.operator, path).await;
        assert_eq!(
            (r.body["agent_id"].as_str(), r.body["state"].as_str()),
            (Some("deploy/bot"), Some("online")),
            "{path}"
        );
    }
    assert_eq!(h.call(Method::GET, "/v1/agents/bot", Some(&h.operator), None).await.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn an_undelivered_directive_expires_lazily_and_the_sweeper_closes_it() {
    let h = hub().await;
    let expires = ts(h.clock_now() + Duration::seconds(10));
    let r = h.send(json!({"to": "agent:bot", "title": "Soon stale", "expires_at": expires})).await;
    let id = r.body["id"].as_str().unwrap().to_owned();
    h.advance(Duration::seconds(11));
    assert_eq!(h.track(&id).await.body["delivery"]["state"], "expired", "read lazily");
    assert_eq!(h.drain(&h.agent, "").await.body["messages"], json!([]), "never delivered after expiry");
    let report = sweep::sweep_once(&h.hub).await.unwrap();
    assert_eq!(report.entries_closed, 1);
    assert_eq!(h.track(&id).await.body["delivery"]["state"], "expired");
}

#[tokio::test]
async fn one_sweep_closes_more_past_deadline_entries_than_its_batch() {
    // Issue 38: a full batch is followed by another while the sweep's budget lasts.
    let h = hub().await;
    let expires = ts(h.clock_now() + Duration::seconds(10));
    let n = sweep::SWEEP_BATCH + 7;
    for i in 0..n {
        let r = h.send(json!({"to": "agent:bot", "title": format!("stale {i}"), "expires_at": expires})).await;
        assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    }
    h.advance(Duration::seconds(11));
    assert_eq!(sweep::sweep_once(&h.hub).await.unwrap().entries_closed, n, "every one in one sweep");
    assert_eq!(sweep::sweep_once(&h.hub).await.unwrap().entries_closed, 0, "and none twice");
}

#[tokio::test]
async fn a_drained_directive_never_acked_bounces_when_its_retention_passes_not_at_its_own_expiry() {
    let h = hub().await;
    let orphan = h.send_ok("Drained, then forgotten").await;
    let expires = ts(h.clock_now() + Duration::days(2));
    let r = h.send(json!({"to": "agent:bot", "title": "Read, not answered", "expires_at": expires})).await;
    let timed = r.body["id"].as_str().unwrap().to_owned();
    assert_eq!(h.drain(&h.agent, "").await.body["messages"].as_array().unwrap().len(), 2);

    // Its own expiry passes: seen, never acked — stays `delivered` (§14.2), swept or not.
    h.advance(Duration::days(3));
    sweep::sweep_once(&h.hub).await.unwrap();
    assert_eq!(h.track(&timed).await.body["delivery"]["state"], "delivered");
    assert_eq!(h.track(&orphan).await.body["delivery"]["state"], "delivered", "its retention has not passed");

    // The inbound retention (30 days) passes: drained, its claimant gone, never rescued — an orphan.
    h.advance(Duration::days(28));
    let report = sweep::sweep_once(&h.hub).await.unwrap();
    assert_eq!(report.entries_closed, 1, "only the orphan was still open");
    let delivery = h.track(&orphan).await.body["delivery"].clone();
    assert_eq!((delivery["state"].as_str(), delivery["prior"].as_str()), (Some("bounced"), Some("delivered")));
    assert!(delivery["delivered_at"].is_string() && delivery["bounced_at"].is_string(), "{delivery}");
    assert_eq!(h.track(&timed).await.body["delivery"]["state"], "delivered", "never rewritten");
}

#[tokio::test]
async fn the_capability_document_advertises_the_mailbox_and_presence() {
    let h = hub().await;
    let doc = h.call(Method::GET, "/.well-known/ma2h", None, None).await.body;
    validate(SchemaKind::Capability, &doc).unwrap();
    assert_eq!(doc["inbound"]["poll_url"], "https://hub.test/v1/inbox");
    assert_eq!(doc["inbound"]["ack_url"], "https://hub.test/v1/inbox/ack");
    assert_eq!(
        (doc["inbound"]["max_batch"].as_u64(), doc["inbound"]["visibility_timeout_seconds"].as_u64()),
        (Some(32), Some(60))
    );
    assert_eq!(doc["inbound"]["webhook_supported"], false);
    assert_eq!(doc["presence"], json!({"enabled": true, "freshness_seconds": 90}));
    assert_eq!(doc["ack"], json!({"enabled": true}), "pulled acks only: no signature_algs");
}

#[tokio::test]
async fn a_read_response_is_delivered_to_the_agent_and_its_ack_is_first_wins() {
    let h = hub().await;
    let id = h.submit_ok(common::ask("k-ack")).await;
    let ack_of = |key: String, body: Value| {
        let h = &h;
        let id = id.clone();
        async move { h.call(Method::POST, &format!("/v1/messages/{id}/ack"), Some(&key), Some(body)).await }
    };
    let open = ack_of(h.agent.clone(), json!({})).await;
    assert_eq!((open.status, open.code()), (StatusCode::CONFLICT, "not_acknowledgeable"));
    assert_eq!(
        h.resolve(&h.operator, &id, json!({"resolution": "answered", "value": "ship"})).await.status,
        StatusCode::OK
    );
    // Resolved but never read by the agent: nothing delivered yet.
    assert_eq!(ack_of(h.agent.clone(), json!({})).await.code(), "not_acknowledgeable");

    let read = h.get(&h.agent, &id).await.body;
    assert_eq!(read["delivery"]["state"], "delivered-to-agent", "the submitter's read is delivery evidence");
    validate(SchemaKind::GetMessage, &read).unwrap();
    let stamped = read["delivery"]["delivered_at"].clone();
    h.advance(Duration::seconds(3));
    assert_eq!(h.get(&h.agent, &id).await.body["delivery"]["delivered_at"], stamped, "stamped once");

    let rid = read["response"]["resolution_id"].as_str().unwrap().to_owned();
    assert_eq!(ack_of(h.agent.clone(), json!({"resolution_id": "res_other"})).await.code(), "invalid_field");
    assert_eq!(ack_of(h.agent.clone(), json!({"note": 5})).await.code(), "validation_error");
    for key in [h.other_agent.clone(), h.foreign_agent.clone(), h.operator.clone()] {
        assert_eq!(ack_of(key, json!({})).await.status, StatusCode::NOT_FOUND, "like an unknown id");
    }
    let first = ack_of(h.agent.clone(), json!({"note": "got your Ship it — resuming", "resolution_id": rid})).await;
    assert_eq!(first.status, StatusCode::OK, "{}", first.body);
    validate(SchemaKind::Ack, &first.body).unwrap();
    assert_eq!(
        (first.body["in_reply_to"].as_str(), first.body["resolution_id"].as_str()),
        (Some(id.as_str()), Some(rid.as_str()))
    );
    h.advance(Duration::seconds(3));
    let again = ack_of(h.agent.clone(), json!({"note": "again"})).await;
    assert_eq!(again.body, first.body, "the first ack wins; a repeat returns it");
    let body = h.get(&h.agent, &id).await.body;
    assert_eq!(body["delivery"]["state"], "acknowledged");
    assert_eq!(body["delivery"]["ack"], first.body);
    validate(SchemaKind::GetMessage, &body).unwrap();

    let note = h.submit_ok(common::notify()).await;
    let r = h.call(Method::POST, &format!("/v1/messages/{note}/ack"), Some(&h.agent), None).await;
    assert_eq!(r.code(), "not_acknowledgeable", "a notify has no Response");
}

/// A HEAD is answered by the GET handler without a body: it must neither count as the agent's
/// read of the Response (§14.2) nor consume mailbox entries (§8.7).
#[tokio::test]
async fn a_head_request_is_no_delivery_evidence_and_never_drains() {
    let h = hub().await;
    let id = h.submit_ok(common::ask("k-head")).await;
    let resolved = h.resolve(&h.operator, &id, json!({"resolution": "answered", "value": "ship"})).await;
    assert_eq!(resolved.status, StatusCode::OK);
    let head = h.call(Method::HEAD, &format!("/v1/messages/{id}"), Some(&h.agent), None).await;
    assert_eq!(head.status, StatusCode::OK);
    let ack = h.call(Method::POST, &format!("/v1/messages/{id}/ack"), Some(&h.agent), Some(json!({}))).await;
    assert_eq!(ack.code(), "not_acknowledgeable", "a HEAD delivered nothing: {}", ack.body);
    assert_eq!(h.get(&h.agent, &id).await.body["delivery"]["state"], "delivered-to-agent", "a GET does");

    let directive = h.send_ok("Freeze").await;
    for uri in ["/v1/inbox", "/v1/inbox/stream"] {
        let r = h.call(Method::HEAD, uri, Some(&h.agent), None).await;
        assert_eq!(r.status, StatusCode::METHOD_NOT_ALLOWED, "HEAD {uri}");
    }
    let drained = h.drain(&h.agent, "").await;
    assert_eq!(drained.status, StatusCode::OK);
    let titles: Vec<&str> =
        drained.body["messages"].as_array().unwrap().iter().filter_map(|e| e["directive"]["title"].as_str()).collect();
    assert_eq!(titles, ["Freeze"], "the directive is still there for the GET: {}", drained.body);
    assert_eq!(h.track(&directive).await.body["delivery"]["deliveries"], 1, "delivered once, by the GET");
}

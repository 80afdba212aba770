//! The race harness the inter-agent leg needs (§7, §14.2): an addressee's resolve, the operator
//! closing the addressee's session (bounce → undeliverable auto-resolution) and expiry, all at
//! once, end in exactly one terminal with one `resolution_id` — on whichever store
//! `MA2H_TEST_STORE` names.

mod common;

use axum::http::{Method, StatusCode};
use chrono::Duration;
use common::{TestHub, hub, ts};
use ma2h_core::messages::sweep;
use serde_json::{Value, json};

async fn session_of(h: &TestHub, key: &str) -> String {
    let r = h.call(Method::POST, "/v1/sessions", Some(key), Some(json!({"ttl_seconds": 3600}))).await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    r.body["session"]["id"].as_str().unwrap().to_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn resolve_close_and_expiry_racing_leave_one_terminal_and_one_resolution_id() {
    let h = hub().await;
    let r = h.call(Method::PATCH, "/v1/operator/inter-agent", Some(&h.operator), Some(json!({"enabled": true}))).await;
    assert_eq!(r.status, StatusCode::OK);
    let asker = session_of(&h, &h.agent).await;
    let mut outcomes = std::collections::BTreeMap::<String, usize>::new();
    for round in 0..12 {
        let worker = session_of(&h, &h.other_agent).await;
        // Whole seconds, exactly as the envelope states it.
        let expires = chrono::DateTime::parse_from_rfc3339(&ts(h.clock_now() + Duration::seconds(30)))
            .unwrap()
            .with_timezone(&chrono::Utc);
        let ask = json!({
            "ma2h_version": "0.5", "type": "ask", "created_at": "2026-06-04T12:00:00Z",
            "agent": { "id": "bot", "run_id": "run_1", "runtime": "cli", "session": asker },
            "to": format!("agent:other#{worker}"), "title": "Restart?", "idempotency_key": format!("race-{round}"),
            "expires_at": ts(expires), "request": { "mode": "confirm" }
        });
        let r = h.submit(&h.agent, ask).await;
        assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
        let id = r.body["id"].as_str().unwrap().to_owned();
        let drained = h.call(Method::GET, &format!("/v1/inbox?session={worker}"), Some(&h.other_agent), None).await;
        assert_eq!(drained.body["messages"].as_array().unwrap().len(), 1);
        // Half the rounds race exactly at expires_at (answers still win), half just after it.
        let extra = if round % 2 == 0 { Duration::zero() } else { Duration::milliseconds(1) };
        h.advance(expires - h.clock_now() + extra);

        let resolve = {
            let (app, key, id, worker) = (h.app.clone(), h.other_agent.clone(), id.clone(), worker.clone());
            tokio::spawn(async move {
                call(
                    app,
                    Method::POST,
                    &format!("/v1/messages/{id}/resolve?session={worker}"),
                    &key,
                    Some(json!({"resolution": "answered", "value": "approve"})),
                )
                .await
            })
        };
        let close = {
            let (app, key, worker) = (h.app.clone(), h.operator.clone(), worker.clone());
            tokio::spawn(async move { call(app, Method::DELETE, &format!("/v1/sessions/{worker}"), &key, None).await })
        };
        let expiry = {
            let hub = h.hub.clone();
            tokio::spawn(async move { sweep::sweep_once(&hub).await.unwrap() })
        };
        let (resolved, closed, _) = (resolve.await.unwrap(), close.await.unwrap(), expiry.await.unwrap());
        assert_eq!(closed.0, StatusCode::OK, "{}", closed.1);
        // Let the bounce's follow-up land (it runs inside the close), then read the outcome.
        let read = h.get(&h.agent, &id).await.body;
        let status = read["status"].as_str().unwrap().to_owned();
        assert_ne!(status, "open", "round {round}: resolved by someone: {read}");
        let rid = read["response"]["resolution_id"].as_str().unwrap().to_owned();
        match resolved.0 {
            StatusCode::OK => {
                assert_eq!(resolved.1["resolution_id"], rid.as_str(), "round {round}: the winner's id is the one");
                assert_eq!(status, "answered");
            }
            StatusCode::CONFLICT => assert_eq!(resolved.1["error"]["code"], "already_terminal"),
            // The close won before the resolve presented its session: 410, as §8.8 says.
            StatusCode::GONE => {}
            other => panic!("round {round}: resolve answered {other}: {}", resolved.1),
        }
        if round % 2 == 1 {
            assert_eq!(status, "expired", "round {round}: after expires_at only the expiry may win");
        }
        // Every channel carries the one resolution id: the asker's response entry, if any.
        let back = h.call(Method::GET, &format!("/v1/inbox?session={asker}&max=32"), Some(&h.agent), None).await;
        let responses: Vec<&Value> = back.body["messages"]
            .as_array()
            .unwrap()
            .iter()
            .filter(|e| e["response"]["in_reply_to"] == id.as_str())
            .collect();
        assert!(responses.len() <= 1, "round {round}: at most one response entry");
        for e in responses {
            assert_eq!(e["response"]["resolution_id"], rid.as_str());
        }
        // The kill-switch stopped the worker (§16.4.1): lift it for the next round.
        let lifted = h.call(Method::DELETE, "/v1/agents/other/stop", Some(&h.operator), None).await;
        assert_eq!(lifted.status, StatusCode::OK, "{}", lifted.body);
        *outcomes
            .entry(format!("{status}/{}", read["response"]["response"]["actor"].as_str().unwrap_or("-")))
            .or_default() += 1;
    }
    eprintln!("race outcomes: {outcomes:?}");
}

async fn call(app: axum::Router, method: Method, uri: &str, key: &str, body: Option<Value>) -> (StatusCode, Value) {
    use http_body_util::BodyExt;
    use tower::ServiceExt;
    let req = axum::http::Request::builder()
        .method(method)
        .uri(uri)
        .header("authorization", format!("Bearer {key}"))
        .header("content-type", "application/json")
        .body(body.map_or_else(axum::body::Body::empty, |b| axum::body::Body::from(b.to_string())))
        .unwrap();
    let resp = app.oneshot(req).await.unwrap();
    let status = resp.status();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    (status, serde_json::from_slice(&bytes).unwrap_or(Value::Null))
}

//! `POST /v1/messages/{id}/resolve` through the Router (§8.8, §9.1, §5.2 permissions, §7).

mod common;

use axum::http::StatusCode;
use chrono::Duration;
use common::*;
use serde_json::{Value, json};

#[tokio::test]
async fn an_operator_answers_and_the_actor_is_attested_from_the_credential() {
    let t = hub().await;
    let id = t.submit_ok(ask("r1")).await;
    let r =
        t.resolve(&t.operator, &id, json!({"resolution": "answered", "value": "ship", "actor": "human:mallory"})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["id"], json!(id));
    assert_eq!(r.body["status"], "answered");
    assert!(r.body["resolution_id"].as_str().unwrap().starts_with("res_"));
    let read = t.get(&t.agent, &id).await;
    assert_eq!(read.body["response"]["response"]["actor"], "human:alice");
    assert_eq!(read.body["response"]["response"]["edited"], false);
}

#[tokio::test]
async fn values_must_fit_the_request() {
    let t = hub().await;
    let id = t.submit_ok(ask("r2")).await;
    let cases: [(Value, StatusCode, &str); 5] = [
        (json!({"resolution": "answered", "value": "yolo"}), StatusCode::UNPROCESSABLE_ENTITY, "invalid_field"),
        (json!({"resolution": "answered"}), StatusCode::BAD_REQUEST, "validation_error"),
        (json!({"resolution": "declined", "value": "ship"}), StatusCode::BAD_REQUEST, "validation_error"),
        (
            json!({"resolution": "answered", "value": "ship", "checklist": []}),
            StatusCode::BAD_REQUEST,
            "validation_error",
        ),
        (json!({"resolution": "completed"}), StatusCode::UNPROCESSABLE_ENTITY, "invalid_field"),
    ];
    for (body, status, code) in cases {
        let r = t.resolve(&t.operator, &id, body.clone()).await;
        assert_eq!((r.status, r.code()), (status, code), "{body}: {}", r.body);
    }
    let r = t.resolve(&t.operator, &id, json!({"resolution": "cancelled"})).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "cancel is §8.4's verb");
    assert_eq!(t.get(&t.agent, &id).await.body["status"], "open", "nothing was applied");
}

#[tokio::test]
async fn without_allowed_resolvers_only_the_submitting_agent_may_resolve() {
    let t = hub().await;
    let id = t.submit_ok(without(ask("r3"), "/request/allowed_resolvers")).await;
    let r = t.resolve(&t.operator, &id, json!({"resolution": "declined"})).await;
    assert_eq!((r.status, r.code()), (StatusCode::FORBIDDEN, "not_authorized"));
    let r = t.resolve(&t.other_agent, &id, json!({"resolution": "declined"})).await;
    assert_eq!((r.status, r.code()), (StatusCode::NOT_FOUND, "not_found"));
    let r = t.resolve(&t.agent, &id, json!({"resolution": "answered", "value": "hold"})).await;
    assert_eq!(r.status, StatusCode::OK);
    assert_eq!(t.get(&t.agent, &id).await.body["response"]["response"]["actor"], "agent:bot");
}

#[tokio::test]
async fn resolvers_outside_the_list_or_account_are_refused() {
    let t = hub().await;
    let id = t.submit_ok(with(ask("r4"), "/request/allowed_resolvers", json!(["human:bob"]))).await;
    let r = t.resolve(&t.operator, &id, json!({"resolution": "declined"})).await;
    assert_eq!((r.status, r.code()), (StatusCode::FORBIDDEN, "not_authorized"));
    let r = t.resolve(&t.agent, &id, json!({"resolution": "declined"})).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "the submitter is not listed either");
    let r = t.resolve(&t.foreign_agent, &id, json!({"resolution": "declined"})).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    let listed = t.submit_ok(with(ask("r5"), "/request/allowed_resolvers", json!(["agent:other"]))).await;
    assert_eq!(t.resolve(&t.other_agent, &listed, json!({"resolution": "declined"})).await.status, StatusCode::OK);
}

#[tokio::test]
async fn permissions_decide_which_terminals_are_possible() {
    let t = hub().await;
    let no_answer = t.submit_ok(with(ask("p1"), "/request/permissions", json!({"allow_respond": false}))).await;
    let r = t.resolve(&t.operator, &no_answer, json!({"resolution": "answered", "value": "ship"})).await;
    assert_eq!((r.status, r.code()), (StatusCode::UNPROCESSABLE_ENTITY, "invalid_field"));
    assert_eq!(t.resolve(&t.operator, &no_answer, json!({"resolution": "declined"})).await.status, StatusCode::OK);
    let no_ignore = t.submit_ok(with(ask("p2"), "/request/permissions", json!({"allow_ignore": false}))).await;
    let r = t.resolve(&t.operator, &no_ignore, json!({"resolution": "declined"})).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
}

#[tokio::test]
async fn input_answers_are_validated_against_the_flat_schema() {
    let t = hub().await;
    let schema = json!({"type": "object", "properties": {"reason": {"type": "string", "minLength": 3}, "n": {"type": "integer"}}, "required": ["reason"]});
    let env = with(
        without(
            without(with(ask("i1"), "/request/mode", json!("input")), "/request/options"),
            "/request/default_on_expire",
        ),
        "/request/schema",
        schema,
    );
    let id = t.submit_ok(env).await;
    let r = t.resolve(&t.operator, &id, json!({"resolution": "answered", "value": {"reason": "no"}})).await;
    assert_eq!((r.status, r.code()), (StatusCode::UNPROCESSABLE_ENTITY, "invalid_field"));
    assert!(r.message().contains("/reason"), "{}", r.message());
    let r = t.resolve(&t.operator, &id, json!({"resolution": "answered", "value": "text"})).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    let r =
        t.resolve(&t.operator, &id, json!({"resolution": "answered", "value": {"reason": "because", "n": 2}})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(t.get(&t.agent, &id).await.body["response"]["response"]["value"], json!({"reason": "because", "n": 2}));
}

#[tokio::test]
async fn tasks_complete_with_their_checklist() {
    let t = hub().await;
    let id = t.submit_ok(task("t1")).await;
    let r = t.resolve(&t.operator, &id, json!({"resolution": "answered", "value": "x"})).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    let wrong = json!({"resolution": "completed", "checklist": [{"text": "Other", "done": true}]});
    assert_eq!(t.resolve(&t.operator, &id, wrong).await.status, StatusCode::UNPROCESSABLE_ENTITY);
    let done = json!([{"text": "Generate", "done": true}, {"text": "Deploy", "done": true}]);
    let r =
        t.resolve(&t.operator, &id, json!({"resolution": "completed", "checklist": done, "comment": "rotated"})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let read = t.get(&t.agent, &id).await;
    assert_eq!(read.body["status"], "completed");
    assert_eq!(read.body["response"]["response"]["checklist"], done);
    assert!(read.body["response"]["response"].get("value").is_none());
}

#[tokio::test]
async fn a_notify_is_not_resolvable() {
    let t = hub().await;
    let id = t.submit_ok(notify()).await;
    let r = t.resolve(&t.operator, &id, json!({"resolution": "declined"})).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(t.resolve(&t.other_agent, &id, json!({"resolution": "declined"})).await.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn the_first_terminal_wins_and_later_ones_get_409_with_it() {
    let t = hub().await;
    let id = t.submit_ok(ask("w1")).await;
    let first = t.resolve(&t.operator, &id, json!({"resolution": "declined"})).await;
    let second = t.resolve(&t.operator, &id, json!({"resolution": "answered", "value": "ship"})).await;
    assert_eq!((second.status, second.code()), (StatusCode::CONFLICT, "already_terminal"));
    assert_eq!(second.body["status"], "declined");
    assert_eq!(second.body["resolution"], "declined");
    assert_eq!(t.get(&t.agent, &id).await.body["response"]["resolution_id"], first.body["resolution_id"]);
}

#[tokio::test]
async fn an_answer_at_expires_at_beats_the_default_and_one_after_loses() {
    let t = hub().await;
    let exp = start() + Duration::minutes(1);
    let on_time = t.submit_ok(with(ask("e1"), "/expires_at", json!(ts(exp)))).await;
    let late = t.submit_ok(with(ask("e2"), "/expires_at", json!(ts(exp)))).await;
    t.advance(Duration::minutes(1));
    assert_eq!(
        t.resolve(&t.operator, &on_time, json!({"resolution": "answered", "value": "ship"})).await.status,
        StatusCode::OK
    );
    t.advance(Duration::milliseconds(1));
    let r = t.resolve(&t.operator, &late, json!({"resolution": "answered", "value": "ship"})).await;
    assert_eq!((r.status, r.body["status"].as_str()), (StatusCode::CONFLICT, Some("expired")));
    assert_eq!(t.get(&t.agent, &on_time).await.body["response"]["response"]["value"], "ship");
}

#[tokio::test]
async fn concurrent_terminals_produce_exactly_one_winner_and_one_resolution_id() {
    let t = hub().await;
    for trial in 0..20 {
        let id = t.submit_ok(ask(&format!("race-{trial}"))).await;
        let mut tasks = Vec::new();
        for i in 0..8 {
            let (hub, id) = (t.hub.clone(), id.clone());
            let key = if i % 2 == 0 { t.operator.clone() } else { t.agent.clone() };
            tasks.push(tokio::spawn(async move {
                let who = ma2h_core::kernel::auth::authenticate(&hub, Some(&key)).await.unwrap();
                if i % 4 == 1 {
                    ma2h_core::messages::cancel::cancel(&hub, &who, &id)
                        .await
                        .map(|c| c.response.unwrap()["resolution_id"].as_str().unwrap().to_owned())
                } else {
                    ma2h_core::messages::resolve::resolve(&hub, &who, None, &id, br#"{"resolution":"declined"}"#)
                        .await
                        .map(|r| r.resolution_id)
                }
            }));
        }
        let mut winners = std::collections::HashSet::new();
        for task in tasks {
            if let Ok(rid) = task.await.unwrap() {
                winners.insert(rid);
            }
        }
        let stored = t.get(&t.agent, &id).await.body["response"]["resolution_id"].as_str().unwrap().to_owned();
        assert!(winners.len() <= 1 || winners.iter().all(|w| *w == stored));
        assert!(winners.contains(&stored), "trial {trial}: the stored resolution came from a successful call");
    }
}

/// Issue 12 item 3: a 422 names every offending field as a JSON pointer, beside the message.
#[tokio::test]
async fn an_invalid_answer_names_every_offending_field() {
    let t = hub().await;
    let env = with(
        with(
            ask("f1"),
            "/request",
            json!({"mode": "input", "allowed_resolvers": ["human:alice"],
            "schema": {"type":"object","properties":{
                "replicas":{"type":"integer","minimum":1},
                "region":{"type":"string","maxLength":3}}}}),
        ),
        "/title",
        json!("Scale?"),
    );
    let id = t.submit_ok(env).await;
    let r = t
        .resolve(&t.operator, &id, json!({"resolution": "answered", "value": {"replicas": 0, "region": "eu-west"}}))
        .await;
    assert_eq!((r.status, r.code()), (StatusCode::UNPROCESSABLE_ENTITY, "invalid_field"), "{}", r.body);
    let mut pointers: Vec<&str> =
        r.body["error"]["fields"].as_array().unwrap().iter().map(|f| f["pointer"].as_str().unwrap()).collect();
    pointers.sort_unstable();
    assert_eq!(pointers, ["/value/region", "/value/replicas"], "{}", r.body);
    assert!(r.message().starts_with("`/value/"), "{}", r.body);
    // a schema violation lists its fields the same way
    let r = t.submit(&t.agent, with(ask("f2"), "/priority", json!("extreme"))).await;
    assert_eq!(r.body["error"]["fields"][0]["pointer"], "/priority", "{}", r.body);
}

//! `POST /v1/messages/{id}/cancel` through the Router (§8.4, §7).

mod common;

use axum::http::StatusCode;
use chrono::Duration;
use common::*;
use serde_json::json;

#[tokio::test]
async fn the_submitter_cancels_an_open_ask_and_gets_a_cancelled_response() {
    let t = hub().await;
    let id = t.submit_ok(ask("c1")).await;
    let r = t.cancel(&t.agent, &id).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(r.body["id"], json!(id));
    assert_eq!(r.body["status"], "cancelled");
    assert_eq!(r.body["response"]["resolution"], "cancelled");
    assert_eq!(r.body["response"]["response"]["actor"], "agent:bot");
    let again = t.cancel(&t.agent, &id).await;
    assert_eq!(again.status, StatusCode::OK);
    assert_eq!(again.body, r.body, "re-cancel is idempotent");
    let read = t.get(&t.agent, &id).await;
    assert_eq!(read.body["status"], "cancelled");
    assert_eq!(read.body["response"], r.body["response"]);
}

#[tokio::test]
async fn nobody_but_the_submitter_can_cancel() {
    let t = hub().await;
    let id = t.submit_ok(ask("c2")).await;
    for key in [&t.other_agent, &t.foreign_agent, &t.operator] {
        let r = t.cancel(key, &id).await;
        assert_eq!((r.status, r.code()), (StatusCode::NOT_FOUND, "not_found"));
    }
    assert_eq!(t.get(&t.agent, &id).await.body["status"], "open");
}

#[tokio::test]
async fn cancelling_after_another_terminal_is_409_with_the_existing_outcome() {
    let t = hub().await;
    let id = t.submit_ok(ask("c3")).await;
    t.resolve(&t.operator, &id, json!({"resolution": "answered", "value": "ship"})).await;
    let r = t.cancel(&t.agent, &id).await;
    assert_eq!((r.status, r.code()), (StatusCode::CONFLICT, "already_terminal"));
    assert_eq!(r.body["id"], json!(id));
    assert_eq!(r.body["status"], "answered");
    assert_eq!(r.body["resolution"], "answered");
}

#[tokio::test]
async fn tasks_and_notifies_are_not_cancellable() {
    let t = hub().await;
    let task_id = t.submit_ok(task("c4")).await;
    let r = t.cancel(&t.agent, &task_id).await;
    assert_eq!((r.status, r.code()), (StatusCode::BAD_REQUEST, "validation_error"));
    assert_eq!(t.get(&t.agent, &task_id).await.body["status"], "open");
    let n = t.submit_ok(notify()).await;
    assert_eq!(t.cancel(&t.agent, &n).await.status, StatusCode::BAD_REQUEST);
}

#[tokio::test]
async fn a_cancel_strictly_after_expires_at_yields_the_expiry_never_cancelled() {
    let t = hub().await;
    let exp = start() + Duration::minutes(5);
    let late = t.submit_ok(with(ask("c5"), "/expires_at", json!(ts(exp)))).await;
    let on_time = t.submit_ok(with(ask("c6"), "/expires_at", json!(ts(exp)))).await;
    t.advance(Duration::minutes(5));
    // exactly at expires_at the cancel still wins (§7: at-or-before)
    assert_eq!(t.cancel(&t.agent, &on_time).await.body["status"], "cancelled");
    t.advance(Duration::milliseconds(1));
    let r = t.cancel(&t.agent, &late).await;
    assert_eq!((r.status, r.code()), (StatusCode::CONFLICT, "already_terminal"));
    assert_eq!(r.body["status"], "expired");
    let read = t.get(&t.agent, &late).await;
    assert_eq!(read.body["response"]["defaulted"], true);
    assert_eq!(read.body["response"]["response"]["value"], "hold");
}

//! Triage in the inbox (issue 39): answer-and-next walks the messages this operator may answer
//! in inbox order, and a bulk decline is confirmed first, then declines the asks and dismisses
//! the tasks the operator may resolve — and says what it could not.

mod common;

use axum::http::{Method, StatusCode};
use common::*;
use serde_json::json;

fn declinable(key: &str, priority: &str) -> serde_json::Value {
    with(
        with(ask(key), "/priority", json!(priority)),
        "/request/permissions",
        json!({"allow_respond": true, "allow_ignore": true}),
    )
}

#[tokio::test]
async fn answer_and_next_opens_the_next_message_i_may_answer_then_says_when_none_is_left() {
    let t = hub().await;
    let first = t.submit_ok(with(ask("first"), "/priority", json!("urgent"))).await;
    t.submit_ok(with(with(ask("theirs"), "/request/allowed_resolvers", json!(["human:bob"])), "/priority", json!("high")))
        .await;
    let second = t.submit_ok(with(ask("second"), "/priority", json!("low"))).await;
    let cookie = t.ui_login(&t.operator).await;
    let page = t.page(Method::GET, &format!("/inbox/{first}"), Some(&cookie), None).await;
    assert!(page.html.contains(r#"name="then" value="next""#), "{}", page.html);
    let form = [("csrf", page.csrf()), ("act", "answered".into()), ("value", "ship".into()), ("then", "next".into())];
    let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let r = t.page(Method::POST, &format!("/inbox/{first}/resolve"), Some(&cookie), Some(&form)).await;
    assert_eq!((r.status, r.location()), (StatusCode::SEE_OTHER, &*format!("/inbox/next?after={first}")));
    let next = t.page(Method::GET, r.location(), Some(&cookie), None).await;
    // bob's ask is skipped: alice may not answer it
    assert_eq!(next.location(), format!("/inbox/{second}?then=next&answered=1"));
    let shown = t.page(Method::GET, next.location(), Some(&cookie), None).await;
    assert!(shown.html.contains("Next waiting for you") && shown.html.contains("checked"), "{}", shown.html);
    let r = t.page(Method::POST, &format!("/inbox/{second}/resolve"), Some(&cookie), Some(&form)).await;
    let last = t.page(Method::GET, r.location(), Some(&cookie), None).await;
    assert_eq!(last.location(), "/inbox?caught_up=1");
    let inbox = t.page(Method::GET, last.location(), Some(&cookie), None).await;
    assert!(inbox.html.contains("Nothing else is waiting for you"), "{}", inbox.html);
    assert_eq!(t.get(&t.agent, &second).await.body["status"], "answered");
}

#[tokio::test]
async fn a_bulk_decline_is_confirmed_then_declines_what_i_may_and_reports_the_rest() {
    let t = hub().await;
    let a = t.submit_ok(declinable("a", "high")).await;
    let b = t.submit_ok(declinable("b", "normal")).await;
    let task = t.submit_ok(task("t")).await;
    let no_ignore = json!({"allow_respond": true, "allow_ignore": false});
    let locked = t.submit_ok(with(ask("locked"), "/request/permissions", no_ignore)).await; // no checkbox; refused if forced
    let cookie = t.ui_login(&t.operator).await;
    let inbox = t.page(Method::GET, "/inbox", Some(&cookie), None).await;
    for id in [&a, &b, &task] {
        assert!(inbox.html.contains(&format!(r#"name="id" value="{id}""#)), "{id} selectable: {}", inbox.html);
    }
    assert!(!inbox.html.contains(&format!(r#"name="id" value="{locked}""#)), "not declinable, no checkbox");
    let csrf = inbox.csrf();
    let pick = [("csrf", csrf.as_str()), ("act", "decline"), ("id", &a), ("id", &task), ("id", &locked)];
    let refused = t.page(Method::POST, "/inbox/bulk", Some(&cookie), Some(&pick[1..])).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "CSRF");
    let asked = t.page(Method::POST, "/inbox/bulk", Some(&cookie), Some(&pick)).await;
    assert_eq!(asked.status, StatusCode::OK);
    assert!(asked.html.contains("Decline 3 messages?") && asked.html.contains(r#"name="confirmed""#), "{}", asked.html);
    assert_eq!(t.get(&t.agent, &a).await.body["status"], "open", "nothing before the confirmation");
    let mut confirm = pick.to_vec();
    confirm.push(("confirmed", "1"));
    let done = t.page(Method::POST, "/inbox/bulk", Some(&cookie), Some(&confirm)).await;
    assert_eq!(done.status, StatusCode::SEE_OTHER);
    let page = t.page(Method::GET, done.location(), Some(&cookie), None).await;
    assert!(page.html.contains("Declined 2. Not declined: 1"), "{}", page.html);
    assert_eq!(t.get(&t.agent, &a).await.body["status"], "declined");
    assert_eq!(t.get(&t.agent, &task).await.body["status"], "dismissed");
    assert_eq!(t.get(&t.agent, &locked).await.body["status"], "open", "its permissions forbid a decline");
    assert_eq!(t.get(&t.agent, &b).await.body["status"], "open", "not selected");
}

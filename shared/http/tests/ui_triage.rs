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
    t.submit_ok(with(
        with(ask("theirs"), "/request/allowed_resolvers", json!(["human:bob"])),
        "/priority",
        json!("high"),
    ))
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

/// A second operator of the test account (`human:bob`), logged in.
async fn bob(t: &TestHub) -> String {
    let key = ma2h_core::admin::create_operator(&t.hub, "acme", "bob", None).await.unwrap().api_key;
    t.ui_login(&key).await
}

fn form<'a>(csrf: &'a str, pairs: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut f = vec![("csrf", csrf)];
    f.extend_from_slice(pairs);
    f
}

#[tokio::test]
async fn a_claim_is_shown_to_the_other_operators_and_taken_over_only_on_purpose() {
    let t = hub().await;
    let both = json!(["human:alice", "human:bob"]);
    let id = t.submit_ok(with(ask("claimed"), "/request/allowed_resolvers", both)).await;
    let alice = t.ui_login(&t.operator).await;
    let bob = bob(&t).await;
    let page = t.page(Method::GET, &format!("/inbox/{id}"), Some(&alice), None).await;
    assert!(page.html.contains("Nobody has said they are on it"), "{}", page.html);
    let csrf = page.csrf();
    let uri = format!("/inbox/{id}/claim");
    let r = t.page(Method::POST, &uri, Some(&alice), Some(&form(&csrf, &[("claim", "claim")]))).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.html);
    let mine = t.page(Method::GET, "/inbox", Some(&alice), None).await;
    assert!(mine.html.contains("you're on it"), "{}", mine.html);
    let theirs = t.page(Method::GET, "/inbox", Some(&bob), None).await;
    assert!(theirs.html.contains("human:alice is on it"), "bob sees alice's claim: {}", theirs.html);
    // bob's plain claim does not take it; "take over" does
    let bob_page = t.page(Method::GET, &format!("/inbox/{id}"), Some(&bob), None).await;
    assert!(bob_page.html.contains("Take over"), "{}", bob_page.html);
    let bcsrf = bob_page.csrf();
    let held = t.page(Method::POST, &uri, Some(&bob), Some(&form(&bcsrf, &[("claim", "claim")]))).await;
    assert!(held.html.contains("human:alice is already on it"), "{}", held.html);
    let refused = t.page(Method::POST, &uri, Some(&bob), Some(&form(&bcsrf, &[("claim", "release")]))).await;
    assert_eq!(refused.status, StatusCode::UNPROCESSABLE_ENTITY, "only the holder releases: {}", refused.html);
    let took = t.page(Method::POST, &uri, Some(&bob), Some(&form(&bcsrf, &[("claim", "take")]))).await;
    assert_eq!(took.status, StatusCode::SEE_OTHER);
    let now_alice = t.page(Method::GET, "/inbox", Some(&alice), None).await;
    assert!(now_alice.html.contains("human:bob is on it"), "{}", now_alice.html);
    // the timeline tells the story: views, claims
    let page = t.page(Method::GET, &format!("/inbox/{id}"), Some(&alice), None).await;
    let timeline = page.html.split("<h2>Timeline</h2>").nth(1).unwrap_or_default();
    for line in [
        "submitted by agent bot",
        "viewed by human:alice",
        "claimed by human:alice",
        "viewed by human:bob",
        "claimed by human:bob",
    ] {
        assert!(timeline.contains(line), "{line}: {timeline}");
    }
    // a claim is no lock: alice still answers, first terminal wins (§7)
    let r = t.resolve(&t.operator, &id, json!({"resolution": "answered", "value": "ship"})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let claim_closed = t.page(Method::POST, &uri, Some(&alice), Some(&form(&csrf, &[("claim", "claim")]))).await;
    assert_eq!(claim_closed.status, StatusCode::UNPROCESSABLE_ENTITY, "nothing to claim once resolved");
}

#[tokio::test]
async fn a_snooze_hides_the_message_from_my_list_only_until_it_ends() {
    let t = hub().await;
    let both = json!(["human:alice", "human:bob"]);
    let id = t.submit_ok(with(ask("snoozed"), "/request/allowed_resolvers", both)).await;
    let alice = t.ui_login(&t.operator).await;
    let bob = bob(&t).await;
    let csrf = t.page(Method::GET, "/inbox", Some(&alice), None).await.csrf();
    let uri = format!("/inbox/{id}/snooze");
    let bad =
        t.page(Method::POST, &uri, Some(&alice), Some(&form(&csrf, &[("for", "until"), ("until", "soon")]))).await;
    assert_eq!(bad.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", bad.html);
    let r = t.page(Method::POST, &uri, Some(&alice), Some(&form(&csrf, &[("for", "4h")]))).await;
    assert_eq!((r.status, r.location()), (StatusCode::SEE_OTHER, "/inbox?done=Snoozed."));
    let mine = t.page(Method::GET, "/inbox", Some(&alice), None).await;
    assert!(!mine.html.contains(&format!("/inbox/{id}\"")), "hidden from alice: {}", mine.html);
    assert!(mine.html.contains("1 message on this page snoozed by you"), "{}", mine.html);
    let shown = t.page(Method::GET, "/inbox?snoozed=1", Some(&alice), None).await;
    assert!(shown.html.contains(&format!("/inbox/{id}\"")), "{}", shown.html);
    let theirs = t.page(Method::GET, "/inbox", Some(&bob), None).await;
    assert!(theirs.html.contains(&format!("/inbox/{id}\"")), "bob still sees it: {}", theirs.html);
    let pulse: serde_json::Value =
        serde_json::from_str(&t.page(Method::GET, "/inbox/live", Some(&alice), None).await.html).unwrap();
    assert_eq!(pulse["alerts"], json!([]), "a snoozed ask alerts nobody who snoozed it: {pulse}");
    t.advance(chrono::Duration::hours(4) + chrono::Duration::seconds(1));
    let back = t.page(Method::GET, "/inbox", Some(&alice), None).await;
    assert!(back.html.contains(&format!("/inbox/{id}\"")), "the snooze ended: {}", back.html);
}

#[tokio::test]
async fn search_finds_messages_by_their_words_open_and_resolved() {
    let t = hub().await;
    let titled =
        |key: &str, title: &str, body: &str| with(with(ask(key), "/title", json!(title)), "/body", json!(body));
    let open = t.submit_ok(titled("s1", "Drop users_legacy?", "Migration done.")).await;
    t.advance(chrono::Duration::seconds(1));
    let done = t.submit_ok(titled("s2", "Drop the users cache", "Nothing else reads the canary.")).await;
    t.resolve(&t.operator, &done, json!({"resolution": "answered", "value": "ship"})).await;
    t.submit_ok(titled("s3", "Deploy build 412", "All green.")).await;
    let cookie = t.ui_login(&t.operator).await;
    let inbox = t.page(Method::GET, "/inbox", Some(&cookie), None).await;
    assert!(inbox.html.contains(r#"action="/inbox/search""#), "the inbox has the search box");
    let r = t.page(Method::GET, "/inbox/search?q=DROP+%60users%60", Some(&cookie), None).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.html.contains("2 messages found"), "{}", r.html);
    let (first, second) =
        (r.html.find(&format!("/inbox/{done}\"")).unwrap(), r.html.find(&format!("/inbox/{open}\"")).unwrap());
    assert!(first < second, "newest first");
    let body = t.page(Method::GET, "/inbox/search?q=canary", Some(&cookie), None).await;
    if t.hub.messages.full_text_search() {
        assert!(body.html.contains(&format!("/inbox/{done}\"")), "bodies are searched: {}", body.html);
    } else {
        assert!(body.html.contains("titles only") && body.html.contains("Nothing matches"), "{}", body.html);
    }
    let long = format!("/inbox/search?q={}", "a".repeat(201));
    assert_eq!(t.page(Method::GET, &long, Some(&cookie), None).await.status, StatusCode::BAD_REQUEST);
    let none = t.page(Method::GET, "/inbox/search?q=zzz", Some(&cookie), None).await;
    assert!(none.html.contains("Nothing matches “zzz”"), "{}", none.html);
}

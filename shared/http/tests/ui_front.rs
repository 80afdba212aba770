//! The inbox as an operator deciding quickly (issue 17): rows preview the question and say who
//! may answer, notifies have their FYI page, the message page shows what is at stake, a proposed
//! input answer can be accepted as-is or edited (and the Response says which), forms mark every
//! invalid field, and history names the chosen option.

mod common;

use axum::http::{Method, StatusCode};
use common::*;
use serde_json::{Value, json};

fn proposed_ask(key: &str, allow_edit: bool) -> Value {
    with(
        ask(key),
        "/request",
        json!({
            "mode": "input",
            "schema": {"type":"object","required":["replicas"],"properties":{
                "replicas":{"type":"integer","minimum":1,"default":3},
                "region":{"enum":["eu","us"],"default":"eu"}}},
            "permissions": {"allow_accept": true, "allow_edit": allow_edit, "allow_respond": true, "allow_ignore": true},
            "allowed_resolvers": ["human:alice"]
        }),
    )
}

#[tokio::test]
async fn rows_preview_the_question_and_mark_what_this_operator_may_answer() {
    let t = hub().await;
    let cookie = t.ui_login(&t.operator).await;
    t.submit_ok(with(ask("mine"), "/body", json!("Build **412** passed; ship it?"))).await;
    let not_mine = with(ask("theirs"), "/request/allowed_resolvers", json!(["human:bob"]));
    t.submit_ok(with(not_mine, "/title", json!("Rotate keys?"))).await;
    t.submit_ok(task("t1")).await;
    let page = t.page(Method::GET, "/inbox", Some(&cookie), None).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.html.contains("Build 412 passed; ship it?"), "body excerpt as plain text: {}", page.html);
    assert!(page.html.contains(r#"<span class="option">Ship</span>"#), "options preview: {}", page.html);
    assert_eq!(page.html.matches("you can answer").count(), 2, "the ask and the task are mine: {}", page.html);
    assert_eq!(page.html.matches("view only").count(), 1, "{}", page.html);
    assert!(page.html.contains("1 task") && !page.html.contains("1 tasks"), "{}", page.html);
    assert!(page.html.contains("2 asks"), "{}", page.html);
    assert!(page.html.contains(r#"class="item prio-high"#), "urgency is a row class: {}", page.html);
    assert!(page.html.contains(r#"<script src="/inbox/keys.js" defer>"#), "{}", page.html);
}

#[tokio::test]
async fn an_ask_expiring_within_the_hour_is_highlighted() {
    let t = hub().await;
    let cookie = t.ui_login(&t.operator).await;
    let soon = ts(t.clock_now() + chrono::Duration::minutes(20));
    t.submit_ok(with(ask("soon"), "/expires_at", json!(soon))).await;
    let page = t.page(Method::GET, "/inbox", Some(&cookie), None).await;
    assert!(page.html.contains("expires soon"), "{}", page.html);
    assert!(page.html.contains(" due-soon\""), "the row carries the class: {}", page.html);
}

#[tokio::test]
async fn notifies_have_their_fyi_page_with_their_time() {
    let t = hub().await;
    let cookie = t.ui_login(&t.operator).await;
    t.submit_ok(notify()).await;
    t.submit_ok(ask("a1")).await;
    let fyi = t.page(Method::GET, "/inbox/fyi", Some(&cookie), None).await;
    assert_eq!(fyi.status, StatusCode::OK);
    assert!(fyi.html.contains("Nightly build finished") && fyi.html.contains("All green."), "{}", fyi.html);
    assert!(fyi.html.contains("sent ") && fyi.html.contains(" UTC"), "the notify's time: {}", fyi.html);
    assert!(!fyi.html.contains("Ship to prod?"), "asks are not FYI: {}", fyi.html);
    assert!(fyi.html.contains(r#"href="/inbox/fyi""#), "the nav links it");
}

#[tokio::test]
async fn the_message_page_shows_what_is_at_stake() {
    let t = hub().await;
    let cookie = t.ui_login(&t.operator).await;
    let exp = ts(t.clock_now() + chrono::Duration::hours(3));
    let id = t.submit_ok(with(ask("stake"), "/expires_at", json!(exp))).await;
    let page = t.page(Method::GET, &format!("/inbox/{id}"), Some(&cookie), None).await;
    assert!(page.html.contains("At stake"), "{}", page.html);
    assert!(page.html.contains("“Hold” is applied automatically"), "the default's label: {}", page.html);
    assert!(page.html.contains("in 3 h"), "when: {}", page.html);
    assert!(page.html.contains("human:alice, agent:bot"), "who may answer: {}", page.html);
    assert!(page.html.contains("run_1") && page.html.contains("github-actions"), "which run asked: {}", page.html);
    let closed = t.submit_ok(without(ask("nobody"), "/request/allowed_resolvers")).await;
    let page = t.page(Method::GET, &format!("/inbox/{closed}"), Some(&cookie), None).await;
    assert!(page.html.contains("only the submitting agent itself"), "{}", page.html);
}

#[tokio::test]
async fn a_proposal_is_prefilled_and_accepting_it_answers_unedited() {
    let t = hub().await;
    let cookie = t.ui_login(&t.operator).await;
    let id = t.submit_ok(proposed_ask("p1", true)).await;
    let page = t.page(Method::GET, &format!("/inbox/{id}"), Some(&cookie), None).await;
    assert!(page.html.contains(r#"name="field.replicas" value="3""#), "prefilled: {}", page.html);
    assert!(page.html.contains("Accept as proposed") && page.html.contains("Submit edited answer"), "{}", page.html);
    assert!(page.html.contains("replicas = 3, region = eu"), "the stakes name the proposal: {}", page.html);
    let csrf = page.csrf();
    let r = t
        .page(Method::POST, &format!("/inbox/{id}/resolve"), Some(&cookie), Some(&[("csrf", &csrf), ("act", "accept")]))
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.html);
    let got = t.get(&t.agent, &id).await.body;
    assert_eq!(got["response"]["response"]["value"], json!({"replicas": 3, "region": "eu"}));
    assert_eq!(got["response"]["response"]["edited"], false);
}

#[tokio::test]
async fn an_edited_proposal_says_so_and_a_locked_one_cannot_be_edited() {
    let t = hub().await;
    let cookie = t.ui_login(&t.operator).await;
    let id = t.submit_ok(proposed_ask("p2", true)).await;
    let csrf = t.page(Method::GET, &format!("/inbox/{id}"), Some(&cookie), None).await.csrf();
    let form = [("csrf", csrf.as_str()), ("field.replicas", "5"), ("field.region", "eu"), ("act", "answered")];
    let r = t.page(Method::POST, &format!("/inbox/{id}/resolve"), Some(&cookie), Some(&form)).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.html);
    let got = t.get(&t.agent, &id).await.body;
    assert_eq!(got["response"]["response"]["edited"], true, "{got}");
    let page = t.page(Method::GET, &format!("/inbox/{id}"), Some(&cookie), None).await;
    assert!(page.html.contains("the proposal was changed"), "{}", page.html);

    // allow_edit: false → read-only fields, no edited submit; a forged edit is refused
    let locked = t.submit_ok(proposed_ask("p3", false)).await;
    let page = t.page(Method::GET, &format!("/inbox/{locked}"), Some(&cookie), None).await;
    assert!(page.html.contains("readonly") && !page.html.contains("Submit edited answer"), "{}", page.html);
    let csrf = page.csrf();
    let forged = [("csrf", csrf.as_str()), ("field.replicas", "9"), ("field.region", "us"), ("act", "answered")];
    let r = t.page(Method::POST, &format!("/inbox/{locked}/resolve"), Some(&cookie), Some(&forged)).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(r.html.contains("does not allow editing"), "{}", r.html);
    assert_eq!(t.get(&t.agent, &locked).await.body["status"], "open");
    // the API enforces it too (§5.2 allow_edit), so no resolver can edit around the form
    let edited = json!({"resolution": "answered", "value": {"replicas": 9, "region": "eu"}});
    let r = t.resolve(&t.operator, &locked, edited).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{:?}", r.body);
    let as_proposed = json!({"resolution": "answered", "value": {"replicas": 3, "region": "eu"}});
    assert_eq!(t.resolve(&t.operator, &locked, as_proposed).await.status, StatusCode::OK);
    assert_eq!(t.get(&t.agent, &locked).await.body["response"]["response"]["edited"], false);
}

#[tokio::test]
async fn accepting_a_partial_proposal_keeps_what_the_human_filled_in() {
    let t = hub().await;
    let cookie = t.ui_login(&t.operator).await;
    let env = with(
        proposed_ask("partial", true),
        "/request/schema",
        json!({"type":"object","required":["replicas","reason"],"properties":{
            "replicas":{"type":"number","default":3},"reason":{"type":"string"}}}),
    );
    let id = t.submit_ok(env).await;
    let csrf = t.page(Method::GET, &format!("/inbox/{id}"), Some(&cookie), None).await.csrf();
    let form = [("csrf", csrf.as_str()), ("field.replicas", "7"), ("field.reason", "peak"), ("act", "accept")];
    let r = t.page(Method::POST, &format!("/inbox/{id}/resolve"), Some(&cookie), Some(&form)).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.html);
    let got = t.get(&t.agent, &id).await.body;
    assert_eq!(got["response"]["response"]["value"], json!({"replicas": 3, "reason": "peak"}), "{got}");
    assert_eq!(got["response"]["response"]["edited"], false, "filling an open field is not an edit");
}

#[tokio::test]
async fn a_proposal_that_is_not_a_valid_answer_is_refused_at_submit() {
    let t = hub().await;
    let bad = with(proposed_ask("p4", true), "/request/schema/properties/replicas/default", json!(0));
    let r = t.submit(&t.agent, bad).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{:?}", r.body);
    assert!(r.message().contains("proposed `default`"), "{}", r.message());
}

#[tokio::test]
async fn a_select_submitted_without_a_choice_marks_the_group() {
    let t = hub().await;
    let cookie = t.ui_login(&t.operator).await;
    let id = t.submit_ok(ask("none")).await;
    let csrf = t.page(Method::GET, &format!("/inbox/{id}"), Some(&cookie), None).await.csrf();
    let r = t
        .page(
            Method::POST,
            &format!("/inbox/{id}/resolve"),
            Some(&cookie),
            Some(&[("csrf", &csrf), ("act", "answered")]),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(r.html.contains(r#"<fieldset class="invalid" aria-invalid="true""#), "{}", r.html);
    assert!(r.html.contains(r#"id="value-err""#) && r.html.contains("Choose one of the options."), "{}", r.html);
}

#[tokio::test]
async fn conversion_and_rule_errors_are_marked_together() {
    let t = hub().await;
    let cookie = t.ui_login(&t.operator).await;
    let env = with(
        proposed_ask("both", true),
        "/request/schema",
        json!({"type":"object","properties":{"replicas":{"type":"integer"},"region":{"type":"string","maxLength":2}}}),
    );
    let id = t.submit_ok(env).await;
    let csrf = t.page(Method::GET, &format!("/inbox/{id}"), Some(&cookie), None).await.csrf();
    // `replicas` does not convert; `region` converts but breaks a rule: both are marked in one round
    let form = [("csrf", csrf.as_str()), ("field.replicas", "three"), ("field.region", "eu-west"), ("act", "answered")];
    let r = t.page(Method::POST, &format!("/inbox/{id}/resolve"), Some(&cookie), Some(&form)).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(r.html.matches(r#"aria-invalid="true""#).count(), 2, "{}", r.html);
}

#[tokio::test]
async fn history_names_the_chosen_option_and_times_read_the_same_everywhere() {
    let t = hub().await;
    let cookie = t.ui_login(&t.operator).await;
    let id = t.submit_ok(ask("h1")).await;
    let r = t.resolve(&t.operator, &id, json!({"resolution": "answered", "value": "hold", "comment": "wait"})).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    let history = t.page(Method::GET, "/inbox/history", Some(&cookie), None).await;
    assert!(history.html.contains("“Hold” (hold)"), "the label, then the value: {}", history.html);
    assert!(history.html.contains("Comment: “wait”"), "{}", history.html);
    assert!(history.html.contains("resolved ") && history.html.contains(" ago") && history.html.contains(" UTC"));
    let page = t.page(Method::GET, &format!("/inbox/{id}"), Some(&cookie), None).await;
    assert!(page.html.contains("Hold (hold)"), "{}", page.html);
    assert!(page.html.contains(" ago") && page.html.contains(" UTC"), "{}", page.html);
}

#[tokio::test]
async fn the_keyboard_script_is_served_from_the_hub_under_a_self_only_csp() {
    let t = hub().await;
    let r = t.page(Method::GET, "/inbox/keys.js", None, None).await;
    assert_eq!(r.status, StatusCode::OK);
    assert!(r.html.contains("addEventListener('keydown'"), "{}", r.html);
    let script_src: Vec<&str> =
        ma2h_http::ui::CSP.split(';').map(str::trim).filter(|d| d.starts_with("script-src")).collect();
    assert_eq!(script_src, ["script-src 'self'"], "no inline script, no eval, nothing remote");
}

#[tokio::test]
async fn an_agent_to_agent_notify_is_audited_in_fyi_as_such() {
    // issue 39: it was listed as if it were for the human
    let t = hub().await;
    let r = t.call(Method::PATCH, "/v1/operator/inter-agent", Some(&t.operator), Some(json!({"enabled": true}))).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let a2a = json!({"ma2h_version": "0.5", "type": "notify", "created_at": "2026-06-04T12:00:00Z",
                     "agent": {"id": "bot", "run_id": "r", "runtime": "cli"}, "to": "agent:other", "title": "Deploy done"});
    let r = t.submit(&t.agent, a2a).await;
    assert_eq!(r.status, StatusCode::ACCEPTED, "{}", r.body);
    t.submit_ok(notify()).await;
    let cookie = t.ui_login(&t.operator).await;
    let fyi = t.page(Method::GET, "/inbox/fyi", Some(&cookie), None).await;
    let row = fyi.html.split("<li").find(|li| li.contains("Deploy done")).expect("listed for audit");
    assert!(row.contains("agent to agent") && row.contains("agent:other"), "{row}");
    let other = fyi.html.split("<li").find(|li| li.contains("Nightly build finished")).expect("the human's notify");
    assert!(!other.contains("agent to agent"), "{other}");
}

//! The web inbox's human→agent pages: an agent page with presence and a send form, the
//! directive's track with the agent's (escaped) note, CSRF on the send form.

mod common;

use axum::http::{Method, StatusCode};
use common::hub;
use serde_json::json;

#[tokio::test]
async fn an_operator_sends_a_directive_from_the_agent_page_and_sees_its_track() {
    let t = hub().await;
    let cookie = t.ui_login(&t.operator).await;
    let page = t.page(Method::GET, "/inbox/agents/bot", Some(&cookie), None).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.html.contains("Agent bot") && page.html.contains("unknown"), "{}", page.html);
    let csrf = page.csrf();

    let refused =
        t.page(Method::POST, "/inbox/directives", Some(&cookie), Some(&[("to", "agent:bot"), ("title", "x")])).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "no CSRF token, nothing sent");

    let form = [
        ("csrf", csrf.as_str()),
        ("to", "agent:bot"),
        ("title", "Pause deploys"),
        ("body", "**now**"),
        ("priority", "urgent"),
        ("expires_in_minutes", "30"),
    ];
    let sent = t.page(Method::POST, "/inbox/directives", Some(&cookie), Some(&form)).await;
    assert_eq!(sent.status, StatusCode::SEE_OTHER, "{}", sent.html);
    assert!(sent.location().starts_with("/inbox/agents/bot?sent=dir_"), "{}", sent.location());

    // The agent drains, acks with a note that tries to inject markup.
    let drained = t.call(Method::GET, "/v1/inbox", Some(&t.agent), None).await.body;
    let id = drained["messages"][0]["directive"]["id"].as_str().unwrap().to_owned();
    assert_eq!(drained["messages"][0]["directive"]["from"], "human:alice");
    assert_eq!(drained["messages"][0]["directive"]["priority"], "urgent");
    let note = "<script>alert(1)</script> paused";
    t.call(Method::POST, "/v1/inbox/ack", Some(&t.agent), Some(json!({"ids": [id], "note": note}))).await;

    let agent = t.page(Method::GET, &format!("/inbox/agents/bot?sent={id}"), Some(&cookie), None).await;
    assert!(agent.html.contains("online") && agent.html.contains("Pause deploys"), "{}", agent.html);
    assert!(agent.html.contains("acknowledged") && !agent.html.contains("<script>"), "{}", agent.html);
    assert!(agent.html.contains("&lt;script&gt;"), "the note is shown as text");
    let one = t.page(Method::GET, &format!("/inbox/directives/{id}"), Some(&cookie), None).await;
    assert_eq!(one.status, StatusCode::OK);
    assert!(one.html.contains("<strong>now</strong>") && one.html.contains("acknowledged"), "{}", one.html);
    assert!(!one.html.contains("<script>"));
    assert_eq!(
        t.page(Method::GET, "/inbox/directives/dir_nope", Some(&cookie), None).await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn an_unknown_agent_gets_the_form_error_and_nothing_is_sent() {
    let t = hub().await;
    let cookie = t.ui_login(&t.operator).await;
    let page = t.page(Method::GET, "/inbox/agents/ghost", Some(&cookie), None).await;
    let form = [("csrf", page.csrf()), ("to", "agent:ghost".into()), ("title", "Hello".into())];
    let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let r = t.page(Method::POST, "/inbox/directives", Some(&cookie), Some(&form)).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(r.html.contains("unknown destination") && r.html.contains("value=\"Hello\""), "{}", r.html);
    let index = t.page(Method::GET, "/inbox/agents?agent=deploy/web", Some(&cookie), None).await;
    assert_eq!((index.status, index.location()), (StatusCode::SEE_OTHER, "/inbox/agents/deploy/web"));
}

/// Found by a black-box pass (session 19): an expiry of 2e11 minutes overflowed the clock
/// arithmetic and the request panicked.
#[tokio::test]
async fn an_out_of_range_expiry_is_the_form_error_and_nothing_is_sent() {
    let t = hub().await;
    let cookie = t.ui_login(&t.operator).await;
    for minutes in ["200000000000", "9223372036854775807", "5270401", "0", "-3", "1e3"] {
        let page = t.page(Method::GET, "/inbox/agents/bot", Some(&cookie), None).await;
        let form = [("csrf", page.csrf()), ("to", "agent:bot".into()), ("title", "Hello".into())];
        let mut form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
        form.push(("expires_in_minutes", minutes));
        let r = t.page(Method::POST, "/inbox/directives", Some(&cookie), Some(&form)).await;
        assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY, "{minutes}");
        assert!(r.html.contains("from 1 to 5270400 (ten years)"), "{minutes}: {}", r.html);
    }
    let form_max = t.page(Method::GET, "/inbox/agents/bot", Some(&cookie), None).await;
    let form = [("csrf", form_max.csrf()), ("to", "agent:bot".into()), ("title", "Hello".into())];
    let mut form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
    form.push(("expires_in_minutes", "5270400"));
    let r = t.page(Method::POST, "/inbox/directives", Some(&cookie), Some(&form)).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "ten years is accepted: {}", r.html);
    let drained = t.call(Method::GET, "/v1/inbox", Some(&t.agent), None).await.body;
    assert_eq!(drained["messages"].as_array().unwrap().len(), 1, "only the valid one was sent");
}

#[tokio::test]
async fn the_agent_page_lists_sessions_and_its_kill_switch_stops_the_agent_until_lifted() {
    let t = hub().await;
    let reg = t.call(Method::POST, "/v1/sessions", Some(&t.agent), Some(json!({"label": "nightly <b>run</b>"}))).await;
    let id = reg.body["session"]["id"].as_str().unwrap().to_owned();
    let cookie = t.ui_login(&t.operator).await;
    let page = t.page(Method::GET, "/inbox/agents/bot", Some(&cookie), None).await;
    assert!(page.html.contains(&id) && page.html.contains("active"), "{}", page.html);
    assert!(page.html.contains("nightly &lt;b&gt;run&lt;/b&gt;"), "the label is agent text, escaped");
    let csrf = page.csrf();
    let action = format!("/inbox/sessions/{id}/close");
    let refused = t.page(Method::POST, &action, Some(&cookie), Some(&[("agent", "bot")])).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "no CSRF token, nothing closed");

    // Issue 39: the kill-switch asks first; the confirmation page re-posts the same form.
    let asked = t.page(Method::POST, &action, Some(&cookie), Some(&[("csrf", csrf.as_str()), ("agent", "bot")])).await;
    assert_eq!(asked.status, StatusCode::OK, "{}", asked.html);
    assert!(asked.html.contains("Close this session?") && asked.html.contains(r#"name="confirmed" value="1""#));
    let still = t.call(Method::GET, "/v1/sessions", Some(&t.agent), None).await.body;
    assert!(still["sessions"].as_array().unwrap().iter().all(|s| s["state"] == "active"), "not closed yet: {still}");
    let confirm = [("csrf", csrf.as_str()), ("agent", "bot"), ("confirmed", "1")];
    let closed = t.page(Method::POST, &action, Some(&cookie), Some(&confirm)).await;
    assert_eq!(closed.status, StatusCode::SEE_OTHER, "{}", closed.html);
    let after = t.page(Method::GET, closed.location(), Some(&cookie), None).await;
    assert!(after.html.contains("closed by an operator") && after.html.contains("Stopped"), "{}", after.html);
    let r = t.call(Method::POST, "/v1/sessions", Some(&t.agent), Some(json!({}))).await;
    assert_eq!((r.status, r.code()), (StatusCode::FORBIDDEN, "session_closed_by_operator"));

    let form = [("csrf", csrf.as_str()), ("agent", "bot"), ("action", "lift")];
    let lifted = t.page(Method::POST, "/inbox/agent-stop", Some(&cookie), Some(&form)).await;
    assert_eq!(lifted.status, StatusCode::SEE_OTHER, "{}", lifted.html);
    assert_eq!(t.call(Method::POST, "/v1/sessions", Some(&t.agent), Some(json!({}))).await.status, StatusCode::CREATED);
    let form = [("csrf", csrf.as_str()), ("agent", "bot"), ("action", "stop")];
    let asked = t.page(Method::POST, "/inbox/agent-stop", Some(&cookie), Some(&form)).await;
    assert!(asked.status == StatusCode::OK && asked.html.contains("Stop agent bot?"), "{}", asked.html);
    assert_eq!(t.call(Method::POST, "/v1/sessions", Some(&t.agent), Some(json!({}))).await.status, StatusCode::CREATED);
    let form = [("csrf", csrf.as_str()), ("agent", "bot"), ("action", "stop"), ("confirmed", "1")];
    let stopped = t.page(Method::POST, "/inbox/agent-stop", Some(&cookie), Some(&form)).await;
    assert_eq!(stopped.status, StatusCode::SEE_OTHER);
    let list = t.call(Method::GET, "/v1/sessions", Some(&t.agent), None).await.body;
    assert!(list["sessions"].as_array().unwrap().iter().all(|s| s["state"] == "closed"), "{list}");
}

#[tokio::test]
async fn the_operator_opts_in_sets_an_allowlist_and_audits_agent_to_agent_traffic() {
    let t = hub().await;
    let cookie = t.ui_login(&t.operator).await;
    let page = t.page(Method::GET, "/inbox/agents", Some(&cookie), None).await;
    assert!(page.html.contains("Agent-to-agent messaging") && page.html.contains("may not"), "{}", page.html);
    let csrf = page.csrf();
    let refused = t.page(Method::POST, "/inbox/inter-agent", Some(&cookie), Some(&[("enabled", "true")])).await;
    assert_eq!(refused.status, StatusCode::FORBIDDEN, "no CSRF token, nothing changed");
    let on =
        t.page(Method::POST, "/inbox/inter-agent", Some(&cookie), Some(&[("csrf", &csrf), ("enabled", "true")])).await;
    assert_eq!(on.status, StatusCode::SEE_OTHER, "{}", on.html);
    let form = [("csrf", csrf.as_str()), ("destination", "other"), ("senders", "bot, ci/robot")];
    assert_eq!(
        t.page(Method::POST, "/inbox/inter-agent", Some(&cookie), Some(&form)).await.status,
        StatusCode::SEE_OTHER
    );
    // A garbled switch is no decision (it used to read as "turn off").
    let garbled =
        t.page(Method::POST, "/inbox/inter-agent", Some(&cookie), Some(&[("csrf", &csrf), ("enabled", "zzz")])).await;
    assert_eq!(garbled.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", garbled.html);
    let policy = t.call(Method::GET, "/v1/operator/inter-agent", Some(&t.operator), None).await.body;
    assert_eq!(
        (policy["enabled"].as_bool(), &policy["allowlists"]["other"]),
        (Some(true), &json!(["bot", "ci/robot"]))
    );

    // bot asks other; the operator reads who sent what to whom and its track, but may not answer.
    let ask = json!({"ma2h_version": "0.5", "type": "ask", "created_at": "2026-06-04T12:00:00Z",
                     "agent": {"id": "bot", "run_id": "r", "runtime": "cli"}, "to": "agent:other",
                     "title": "Restart the consumer?", "idempotency_key": "ui-a2a", "request": {"mode": "confirm"}});
    let id = t.submit_ok(ask).await;
    let view = t.page(Method::GET, &format!("/inbox/{id}"), Some(&cookie), None).await;
    assert_eq!(view.status, StatusCode::OK);
    for needle in ["Agent to agent", "agent:bot", "agent:other", "queued", "only its addressee may resolve"] {
        assert!(view.html.contains(needle), "{needle}: {}", view.html);
    }
    let off = [("csrf", csrf.as_str()), ("destination", "other"), ("senders", "")];
    t.page(Method::POST, "/inbox/inter-agent", Some(&cookie), Some(&off)).await;
    let policy = t.call(Method::GET, "/v1/operator/inter-agent", Some(&t.operator), None).await.body;
    assert_eq!(policy["allowlists"], json!({}), "an empty sender list removes the restriction");
}

#[tokio::test]
async fn the_agent_page_counts_a_session_renewal_as_seen() {
    // issue 39: the page said "offline, last seen 5 min ago" (the presence record of an old
    // session-less drain) while the agent's session had been renewed seconds before
    let t = hub().await;
    assert_eq!(t.call(Method::GET, "/v1/inbox", Some(&t.agent), None).await.status, StatusCode::OK);
    t.advance(chrono::Duration::minutes(5));
    let cookie = t.ui_login(&t.operator).await;
    let before = t.page(Method::GET, "/inbox/agents/bot", Some(&cookie), None).await;
    assert!(before.html.contains("offline") && before.html.contains("5 min ago"), "{}", before.html);
    let reg = t.call(Method::POST, "/v1/sessions", Some(&t.agent), Some(json!({}))).await;
    assert_eq!(reg.status, StatusCode::CREATED);
    let after = t.page(Method::GET, "/inbox/agents/bot", Some(&cookie), None).await;
    assert!(after.html.contains("badge online") && after.html.contains("under a minute ago"), "{}", after.html);
}

#[tokio::test]
async fn the_agents_page_lists_every_agent_of_the_account_not_only_those_with_open_asks() {
    // issue 39: only agents with open asks were listed
    let t = hub().await;
    t.submit_ok(common::ask("one")).await; // bot has an open ask; `other` has none
    let cookie = t.ui_login(&t.operator).await;
    let page = t.page(Method::GET, "/inbox/agents", Some(&cookie), None).await;
    assert_eq!(page.status, StatusCode::OK);
    for (agent, open) in [("bot", ">1<"), ("other", ">—<")] {
        let row = page.html.split("<tr>").find(|r| r.contains(&format!(">{agent}</a>"))).unwrap_or_else(|| {
            panic!("{agent} listed: {}", page.html);
        });
        assert!(row.contains(open), "{agent}: {row}");
    }
    assert!(!page.html.contains("globex") && page.html.matches("/inbox/agents/").count() == 2, "{}", page.html);
}

//! Issue 20 on every backend (`MA2H_TEST_STORE`): the notification worker driven by the hand-moved
//! clock against a recording sender — announcement, reminder (in the announcement's thread),
//! escalation near `expires_at`, the outcome update after a terminal, retries with backoff up to
//! a visible failure that never touches the message, an orphaned item retired, and a lost
//! wake-up caught at `expires_at`.

mod common;

use std::sync::Arc;

use chrono::Duration;
use common::recording::{Mailbag, Recording};
use common::*;
use ma2h_core::channels::manage;
use ma2h_core::channels::manage::RouteSpec;
use ma2h_core::channels::notify;
use ma2h_core::channels::outbox::{Notification, Step, StepKind, StepStatus};
use ma2h_core::channels::sender::Notifier;
use ma2h_protocol::ids::{AccountId, MessageId};
use serde_json::{Value, json};

async fn setup(remind: Option<u32>, escalate: bool) -> (TestHub, Arc<Recording>, Notifier) {
    let mut settings = settings();
    settings.channels.slack_api_url = "https://slack.test/api".into();
    settings.channels.config_cache = std::time::Duration::ZERO;
    let t = hub_with(settings).await;
    manage::put_slack(&t.hub, "admin", "acme", "ops", "T0TEAM", "C0OPS", "xoxb-1", "signing").await.unwrap();
    manage::put_webhook(&t.hub, "admin", "acme", "pager", "https://pager.test/hook", "whk").await.unwrap();
    manage::put_webhook(&t.hub, "admin", "acme", "oncall", "https://oncall.test/hook", "whk2").await.unwrap();
    let spec = RouteSpec {
        id: "all".into(),
        targets: vec!["ops".into(), "pager".into()],
        remind_after_minutes: remind,
        escalate: if escalate { vec!["oncall".into()] } else { vec![] },
        ..RouteSpec::default()
    };
    manage::put_route(&t.hub, "admin", "acme", spec).await.unwrap();
    let sender = Arc::new(Recording::default());
    let notifier = Notifier::new(sender.clone());
    (t, sender, notifier)
}

fn ask_expiring(key: &str, minutes: i64) -> Value {
    with(ask(key), "/expires_at", json!(ts(start() + Duration::minutes(minutes))))
}

async fn item(t: &TestHub, id: &str) -> Notification {
    let id = MessageId::parse(id).unwrap();
    t.hub.notifications.get_notification(&AccountId::parse("acme").unwrap(), &id).await.unwrap().expect("an item")
}

#[tokio::test]
async fn reminders_and_escalations_fall_due_by_the_clock_and_the_terminal_updates_the_posts() {
    let (t, sent, notifier) = setup(Some(10), true).await;
    let id = t.submit_ok(ask_expiring("n1", 60)).await;
    notify::work_due(&t.hub, &notifier, 10).await.unwrap();
    assert_eq!(sent.to("chat.postMessage").len(), 1, "announced in Slack");
    assert_eq!(sent.to("pager.test/hook")[0]["type"], "message.created");
    assert!(sent.to("oncall.test/hook").is_empty(), "no escalation yet");

    t.advance(Duration::minutes(9));
    notify::work_due(&t.hub, &notifier, 10).await.unwrap();
    assert_eq!(sent.to("chat.postMessage").len(), 1, "nothing before the reminder is due");
    t.advance(Duration::minutes(1));
    notify::work_due(&t.hub, &notifier, 10).await.unwrap();
    let posts = sent.to("chat.postMessage");
    assert_eq!(posts.len(), 2, "the reminder");
    assert_eq!(posts[1]["thread_ts"], "1700000000.000001", "in the announcement's thread");
    assert_eq!(sent.to("pager.test/hook")[1]["type"], "message.reminder");

    // 20 % of 60 minutes left: 48 minutes in
    t.advance(Duration::minutes(37));
    notify::work_due(&t.hub, &notifier, 10).await.unwrap();
    assert!(sent.to("oncall.test/hook").is_empty());
    t.advance(Duration::minutes(1));
    notify::work_due(&t.hub, &notifier, 10).await.unwrap();
    assert_eq!(sent.to("oncall.test/hook")[0]["type"], "message.escalated");

    let r = t.resolve(&t.operator, &id, json!({"resolution": "answered", "value": "ship"})).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    notify::work_due(&t.hub, &notifier, 10).await.unwrap();
    let update = sent.to("chat.update");
    assert_eq!(update.len(), 1, "the announcement is updated in place");
    assert_eq!(update[0]["ts"], "1700000000.000001");
    assert!(update[0].to_string().contains("human:alice"));
    let resolved: Vec<Value> = sent.to("/hook").into_iter().filter(|e| e["type"] == "message.resolved").collect();
    assert_eq!(resolved.len(), 2, "each webhook that heard of it hears the outcome");
    assert!(resolved.iter().all(|e| e["outcome"]["value"] == "ship"));
    assert!(!sent.sent.lock().unwrap().iter().any(|(_, b)| b.to_string().contains("v1.opaque")), "never `state`");

    let done = item(&t, &id).await;
    assert_eq!(done.next_due, None, "nothing left to do");
    assert!(done.retain_until.is_some());
    t.advance(Duration::hours(2));
    let before = sent.sent.lock().unwrap().len();
    notify::work_due(&t.hub, &notifier, 10).await.unwrap();
    assert_eq!(sent.sent.lock().unwrap().len(), before, "finished: never sent again");
}

#[tokio::test]
async fn an_answer_before_the_reminder_cancels_it() {
    let (t, sent, notifier) = setup(Some(10), true).await;
    let id = t.submit_ok(ask_expiring("n2", 60)).await;
    notify::work_due(&t.hub, &notifier, 10).await.unwrap();
    t.resolve(&t.operator, &id, json!({"resolution": "answered", "value": "hold"})).await;
    notify::work_due(&t.hub, &notifier, 10).await.unwrap();
    t.advance(Duration::minutes(50));
    notify::work_due(&t.hub, &notifier, 10).await.unwrap();
    assert_eq!(sent.to("chat.postMessage").len(), 1, "no reminder after the answer");
    assert!(sent.to("oncall.test/hook").is_empty(), "no escalation after the answer");
    let steps = item(&t, &id).await.steps;
    let cancelled = steps.iter().filter(|s| s.status == StepStatus::Cancelled).count();
    assert_eq!(cancelled, 3, "two reminders and one escalation: {steps:?}");
}

#[tokio::test]
async fn a_failing_webhook_is_retried_with_backoff_then_marked_failed_and_the_message_is_untouched() {
    let (t, sent, notifier) = setup(None, false).await;
    *sent.webhook_status.lock().unwrap() = 503;
    let id = t.submit_ok(ask_expiring("n3", 24 * 60)).await;
    let mut gaps = Vec::new();
    for _ in 0..20 {
        notify::work_due(&t.hub, &notifier, 10).await.unwrap();
        let step = item(&t, &id).await.steps.into_iter().find(|s| s.channel == "pager").unwrap();
        if step.status != StepStatus::Pending {
            break;
        }
        let gap = step.due_at - t.clock_now();
        gaps.push(gap);
        t.advance(gap);
    }
    let step = item(&t, &id).await.steps.into_iter().find(|s| s.channel == "pager").unwrap();
    assert_eq!(step.status, StepStatus::Failed);
    assert_eq!(step.attempts, ma2h_core::channels::outbox::MAX_ATTEMPTS);
    assert!(step.last_error.unwrap().contains("503"));
    assert!(gaps.windows(2).all(|w| w[1] >= w[0]), "backoff never shrinks: {gaps:?}");
    assert!(gaps.last().unwrap() > gaps.first().unwrap());
    assert_eq!(sent.to("pager.test/hook").len(), ma2h_core::channels::outbox::MAX_ATTEMPTS as usize);
    assert_eq!(t.get(&t.agent, &id).await.body["status"], "open", "a notification never decides the message");
    assert_eq!(sent.to("chat.postMessage").len(), 1, "the other channel was told once");

    // the failure is visible on the message page
    let cookie = t.ui_login(&t.operator).await;
    let page = t.page(axum::http::Method::GET, &format!("/inbox/{id}"), Some(&cookie), None).await;
    assert_eq!(page.status, axum::http::StatusCode::OK);
    let html = page.html;
    assert!(html.contains("Notifications") && html.contains("pager") && html.contains("failed"), "{html}");
    assert!(html.contains("receiver answered 503"), "the reason is shown");
}

#[tokio::test]
async fn an_item_whose_message_never_committed_is_retired_after_a_grace() {
    let (t, sent, notifier) = setup(None, false).await;
    let account = AccountId::parse("acme").unwrap();
    let ghost = MessageId::from_parts(1, 42);
    let orphan = Notification {
        account: account.clone(),
        message_id: ghost.clone(),
        version: 1,
        created_at: t.clock_now(),
        next_due: Some(t.clock_now()),
        retain_until: None,
        route: "all".into(),
        steps: vec![Step::pending("pager", StepKind::Created, t.clock_now())],
    };
    assert!(t.hub.notifications.create_notification(&orphan).await.unwrap());
    notify::work_due(&t.hub, &notifier, 10).await.unwrap();
    let waiting = t.hub.notifications.get_notification(&account, &ghost).await.unwrap().unwrap();
    assert_eq!(waiting.steps[0].status, StepStatus::Pending, "its message may still be committing");
    t.advance(Duration::minutes(3));
    notify::work_due(&t.hub, &notifier, 10).await.unwrap();
    let retired = t.hub.notifications.get_notification(&account, &ghost).await.unwrap().unwrap();
    assert_eq!(retired.steps[0].status, StepStatus::Cancelled);
    assert_eq!(retired.next_due, None);
    assert!(sent.sent.lock().unwrap().is_empty(), "nothing is ever sent for a message that does not exist");
}

#[tokio::test]
async fn a_lost_wake_up_is_caught_when_the_message_expires() {
    let (t, sent, notifier) = setup(None, false).await;
    let id = t.submit_ok(ask_expiring("n4", 30)).await;
    notify::work_due(&t.hub, &notifier, 10).await.unwrap();
    assert_eq!(item(&t, &id).await.next_due, Some(start() + Duration::minutes(30)), "watched until expires_at");
    // The route goes away, so the terminal below wakes nothing (as if its wake-up were lost).
    manage::remove_route(&t.hub, "admin", "acme", "all").await.unwrap();
    t.resolve(&t.operator, &id, json!({"resolution": "answered", "value": "ship"})).await;
    notify::work_due(&t.hub, &notifier, 10).await.unwrap();
    assert!(sent.to("chat.update").is_empty());
    t.advance(Duration::minutes(30));
    notify::work_due(&t.hub, &notifier, 10).await.unwrap();
    assert_eq!(sent.to("chat.update").len(), 1, "the outcome is shown, late but not lost");
}

/// An email channel `mail` to `recipients`, the only route; and a notifier recording mail.
async fn email_only(t: &TestHub, recipients: &[(&str, &str)]) -> (Notifier, Arc<Mailbag>) {
    let spec = manage::EmailSpec {
        id: "mail".into(),
        smtp_host: "127.0.0.1".into(),
        smtp_port: 2525,
        security: "none".into(),
        from: "Hub <hub@example.com>".into(),
        recipients: recipients.iter().map(|(h, a)| ((*h).to_owned(), (*a).to_owned())).collect(),
        ..Default::default()
    };
    manage::put_email(&t.hub, "admin", "acme", spec).await.unwrap();
    manage::remove_route(&t.hub, "admin", "acme", "all").await.unwrap();
    let route = RouteSpec { id: "mail".into(), targets: vec!["mail".into()], ..RouteSpec::default() };
    manage::put_route(&t.hub, "admin", "acme", route).await.unwrap();
    let bag = Arc::new(Mailbag::default());
    (Notifier::new(Arc::new(Recording::default())).with_mailer(bag.clone()), bag)
}

/// The answer links in a mail's text part, by option label.
fn links(mail: &ma2h_core::ports::Mail) -> Vec<(String, String)> {
    mail.text
        .lines()
        .filter_map(|l| l.strip_prefix("Answer \""))
        .map(|l| {
            let (label, url) = l.split_once("\": ").unwrap();
            (label.to_owned(), url.trim_start_matches("https://hub.test").to_owned())
        })
        .collect()
}

#[tokio::test]
async fn an_email_link_shows_a_confirmation_on_get_and_answers_once_on_post_as_its_recipient() {
    use axum::http::{Method, StatusCode};
    let (t, _, _) = setup(None, false).await;
    let (notifier, bag) = email_only(&t, &[("alice", "alice@example.com"), ("bob", "bob@example.com")]).await;
    let mut ask = ask_expiring("m1", 60);
    ask["body"] = json!("See report\u{202E}fdp.exe"); // shown, not obeyed (`display`)
    let id = t.submit_ok(ask).await;
    notify::work_due(&t.hub, &notifier, 10).await.unwrap();
    let mails = bag.0.lock().unwrap().clone();
    assert_eq!(mails.len(), 2, "one mail per recipient");
    let alice = mails.iter().find(|m| m.to == "alice@example.com").unwrap();
    let bob = mails.iter().find(|m| m.to == "bob@example.com").unwrap();
    assert!(alice.subject.contains("Ship to prod?") && alice.html.contains("Open in inbox"));
    assert!(alice.text.contains("report[U+202E]fdp.exe") && alice.html.contains("report[U+202E]fdp.exe"));
    assert!(!alice.text.contains('\u{202E}') && !alice.html.contains('\u{202E}'));
    assert!(!alice.text.contains("v1.opaque"), "never `state`");
    let alice_links = links(alice);
    assert_eq!(alice_links.iter().map(|(l, _)| l.as_str()).collect::<Vec<_>>(), vec!["Ship", "Hold"]);
    let (ship, hold) = (alice_links[0].1.clone(), alice_links[1].1.clone());

    // GET (a link scanner, or the person) answers nothing, however often
    for _ in 0..2 {
        let page = t.page(Method::GET, &ship, None, None).await;
        assert_eq!(page.status, StatusCode::OK);
        assert!(
            page.html.contains("Ship") && page.html.contains("human:alice") && page.html.contains("<form"),
            "{}",
            page.html
        );
    }
    assert_eq!(t.get(&t.agent, &id).await.body["status"], "open", "a GET never answers");

    // bob's link acts as bob, who may not answer this ask (§9.1)
    let refused = t.page(Method::POST, &links(bob)[0].1, None, None).await;
    assert_eq!(refused.status, StatusCode::CONFLICT);
    assert!(refused.html.contains("Not answered"), "{}", refused.html);
    assert_eq!(t.get(&t.agent, &id).await.body["status"], "open");

    // alice's POST answers, once
    let done = t.page(Method::POST, &ship, None, None).await;
    assert_eq!(done.status, StatusCode::OK, "{}", done.html);
    let read = t.get(&t.agent, &id).await.body;
    assert_eq!(
        (read["status"].as_str(), read["response"]["response"]["actor"].as_str()),
        (Some("answered"), Some("human:alice"))
    );
    assert_eq!(read["response"]["response"]["value"], "ship");
    let again = t.page(Method::POST, &ship, None, None).await;
    assert_eq!(again.status, StatusCode::CONFLICT);
    assert!(again.html.contains("already used"));
    let other = t.page(Method::POST, &hold, None, None).await;
    assert_eq!(other.status, StatusCode::CONFLICT, "first terminal wins");
    assert_eq!(t.get(&t.agent, &id).await.body["response"]["response"]["value"], "ship");

    // forged or expired links
    let mut forged = ship.clone();
    forged.push('A');
    assert_eq!(t.page(Method::GET, &forged, None, None).await.status, StatusCode::NOT_FOUND);
    assert_eq!(t.page(Method::POST, "/a/not-a-token", None, None).await.status, StatusCode::NOT_FOUND);
    t.advance(Duration::minutes(61));
    assert_eq!(t.page(Method::GET, &hold, None, None).await.status, StatusCode::GONE, "past the ask's expiry");
}

#[tokio::test]
async fn the_channels_page_shows_no_credential_and_lets_an_operator_edit_routes_and_link_only_themself() {
    use axum::http::{Method, StatusCode};
    let (t, _, _) = setup(Some(10), true).await;
    let cookie = t.ui_login(&t.operator).await;
    let page = t.page(Method::GET, "/inbox/channels", Some(&cookie), None).await;
    assert_eq!(page.status, StatusCode::OK);
    for shown in ["ops", "pager", "oncall", "T0TEAM", "C0OPS", "after 10 min", "20 % left"] {
        assert!(page.html.contains(shown), "{shown}: {}", page.html);
    }
    for secret in ["xoxb-1", "signing", "whk2"] {
        assert!(!page.html.contains(secret), "{secret} must never be shown");
    }
    let csrf = page.csrf();
    let post = |form: Vec<(&'static str, String)>| {
        let (t, cookie) = (&t, cookie.clone());
        async move {
            let pairs: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
            t.page(Method::POST, "/inbox/channels", Some(&cookie), Some(&pairs)).await
        }
    };
    // without the CSRF token: refused
    let r = post(vec![("action", "link-slack".into()), ("team", "T0TEAM".into()), ("user", "U0ME".into())]).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    // link my own Slack user: it acts as me
    let r = post(vec![
        ("csrf", csrf.clone()),
        ("action", "link-slack".into()),
        ("team", "T0TEAM".into()),
        ("user", "U0ME".into()),
    ])
    .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.html);
    let shown = manage::show(&t.hub, "acme").await.unwrap();
    assert_eq!(shown["slack_links"], json!([{"slack": "T0TEAM:U0ME", "human": "human:alice"}]));
    // a route naming an unknown channel is refused; a good one is added
    let r =
        post(vec![("csrf", csrf.clone()), ("action", "route".into()), ("id", "x".into()), ("targets", "nope".into())])
            .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    let r = post(vec![
        ("csrf", csrf.clone()),
        ("action", "route".into()),
        ("id", "urgent".into()),
        ("targets", "pager".into()),
        ("min_priority", "urgent".into()),
        ("remind_after", "5".into()),
    ])
    .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.html);
    let r = post(vec![("csrf", csrf.clone()), ("action", "remove-route".into()), ("id", "all".into())]).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    let shown = manage::show(&t.hub, "acme").await.unwrap();
    let routes: Vec<&str> = shown["routes"].as_array().unwrap().iter().map(|r| r["id"].as_str().unwrap()).collect();
    assert_eq!(routes, vec!["urgent"]);
    assert_eq!(shown["routes"][0]["remind_after_minutes"], 5);
    // another operator's link cannot be removed from here
    manage::link_slack(&t.hub, "admin", "acme", "T0TEAM", "U0BOB", Some("bob")).await.unwrap();
    let r = post(vec![
        ("csrf", csrf.clone()),
        ("action", "unlink-slack".into()),
        ("team", "T0TEAM".into()),
        ("user", "U0BOB".into()),
    ])
    .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = post(vec![
        ("csrf", csrf.clone()),
        ("action", "link-slack".into()),
        ("team", "T0TEAM".into()),
        ("user", "U0BOB".into()),
    ])
    .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "nobody takes over another operator's Slack user");
    let r = post(vec![
        ("csrf", csrf),
        ("action", "unlink-slack".into()),
        ("team", "T0TEAM".into()),
        ("user", "U0ME".into()),
    ])
    .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    assert_eq!(manage::show(&t.hub, "acme").await.unwrap()["slack_links"].as_array().unwrap().len(), 1);
}

#[tokio::test]
async fn a_replayed_submit_leaves_one_due_item_and_announces_once() {
    let (t, sent, notifier) = setup(None, false).await;
    let first = t.submit_ok(ask_expiring("r1", 60)).await;
    let again = t.submit(&t.agent, ask_expiring("r1", 60)).await;
    assert_eq!(again.body["id"], first.as_str(), "a replay returns the original");
    let due = t.hub.notifications.due_notifications(t.clock_now(), 10).await.unwrap();
    assert_eq!(due.len(), 1, "the replay's item was retired at once: {due:?}");
    assert_eq!(due[0].1.as_str(), first);
    notify::work_due(&t.hub, &notifier, 10).await.unwrap();
    t.advance(Duration::minutes(3));
    notify::work_due(&t.hub, &notifier, 10).await.unwrap();
    assert_eq!(sent.to("chat.postMessage").len(), 1, "announced once");
}

#[tokio::test]
async fn an_announcement_still_retrying_when_the_ask_is_answered_is_never_sent() {
    let (t, sent, notifier) = setup(None, false).await;
    *sent.webhook_status.lock().unwrap() = 503;
    let id = t.submit_ok(ask_expiring("p1", 60)).await;
    notify::work_due(&t.hub, &notifier, 10).await.unwrap();
    assert_eq!(sent.to("pager.test/hook").len(), 1, "first attempt failed");
    t.resolve(&t.operator, &id, json!({"resolution": "answered", "value": "ship"})).await;
    *sent.webhook_status.lock().unwrap() = 200;
    t.advance(Duration::minutes(5));
    notify::work_due(&t.hub, &notifier, 10).await.unwrap();
    let events: Vec<String> =
        sent.to("pager.test/hook").iter().map(|e| e["type"].as_str().unwrap().to_owned()).collect();
    assert_eq!(events, vec!["message.created"], "no late announcement of a decided ask, and nothing to resolve");
    let steps = item(&t, &id).await.steps;
    let pager = steps.iter().find(|s| s.channel == "pager" && s.kind == StepKind::Created).unwrap();
    assert_eq!(pager.status, StepStatus::Cancelled);
    assert_eq!(sent.to("chat.update").len(), 1, "the Slack post that did go out is updated");
}

#[tokio::test]
async fn a_revoked_operator_can_no_longer_answer_from_an_email_link() {
    use axum::http::{Method, StatusCode};
    let (t, _, _) = setup(None, false).await;
    let (notifier, bag) = email_only(&t, &[("alice", "alice@example.com")]).await;
    let id = t.submit_ok(ask_expiring("rv1", 60)).await;
    notify::work_due(&t.hub, &notifier, 10).await.unwrap();
    let link = links(&bag.0.lock().unwrap()[0])[0].1.clone();
    // alice's only credential is revoked: her links stop working with it
    for c in ma2h_core::admin::list(&t.hub).await.unwrap() {
        if c.principal == "human:alice" {
            ma2h_core::admin::revoke(&t.hub, &c.credential_id).await.unwrap();
        }
    }
    let r = t.page(Method::POST, &link, None, None).await;
    assert_eq!(r.status, StatusCode::CONFLICT);
    assert!(r.html.contains("can no longer answer"), "{}", r.html);
    assert_eq!(t.get(&t.agent, &id).await.body["status"], "open");
}

#[tokio::test]
async fn webhook_urls_are_shown_without_their_path_or_query() {
    let (t, _, _) = setup(None, false).await;
    manage::put_webhook(
        &t.hub,
        "admin",
        "acme",
        "hook2",
        "https://hooks.example.com/services/T1/B2/s3cr3tpath?token=q",
        "k",
    )
    .await
    .unwrap();
    let shown = manage::show(&t.hub, "acme").await.unwrap();
    assert_eq!(shown["channels"]["hook2"]["url"], "https://hooks.example.com/…");
    assert!(!shown.to_string().contains("s3cr3tpath") && !shown.to_string().contains("token=q"));
}

#[tokio::test]
async fn a_repeated_account_parameter_on_slack_interactions_is_judged_like_any_unsigned_press() {
    use axum::http::{Method, StatusCode};
    let t = hub().await;
    let uri = "/v1/integrations/slack/interactions?account=acme&account=globex";
    let r = t.call_raw(Method::POST, uri, None, Some(b"payload=%7B%7D".to_vec())).await;
    assert_eq!((r.status, r.code()), (StatusCode::UNAUTHORIZED, "unauthenticated"), "{}", r.body);
}

/// Found by a black-box pass (session 19): an over-size body got axum's plain-text 413 here,
/// before any signature check; every other `/v1` POST answers the §8.6 envelope.
#[tokio::test]
async fn an_over_size_slack_press_is_the_envelope_not_plain_text() {
    use axum::http::{Method, StatusCode};
    let t = hub().await;
    let uri = "/v1/integrations/slack/interactions?account=acme";
    let r = t.call_raw(Method::POST, uri, None, Some(vec![b'a'; 2_200_000])).await;
    assert_eq!((r.status, r.code()), (StatusCode::UNPROCESSABLE_ENTITY, "invalid_field"), "{}", r.body);
}

#[tokio::test]
async fn a_webhook_with_a_standard_webhooks_secret_sends_the_three_headers_and_a_bad_one_is_refused() {
    use ma2h_protocol::standard_webhooks::WebhookSecret;
    let (t, sent, notifier) = setup(None, false).await;
    let hook_requests = || -> Vec<ma2h_core::ports::PushRequest> {
        sent.raw.lock().unwrap().iter().filter(|r| r.url.ends_with("pager.test/hook")).cloned().collect()
    };
    // a plain secret: the MA2H signature only
    t.submit_ok(ask_expiring("sw0", 60)).await;
    notify::work_due(&t.hub, &notifier, 10).await.unwrap();
    let plain = hook_requests();
    assert_eq!(plain.len(), 1);
    assert!(plain[0].headers.iter().all(|(k, _)| !k.starts_with("webhook-")), "{:?}", plain[0].headers);

    // issue 43: the specification's example secret (standard-webhooks/standard-webhooks, spec)
    let secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    let shown = manage::put_webhook(&t.hub, "admin", "acme", "pager", "https://pager.test/hook", secret).await.unwrap();
    assert_eq!(shown["channels"]["pager"]["standard_webhooks"], true, "{shown}");
    assert!(!shown.to_string().contains("MfKQ9r8G"), "the secret is never shown back");
    let refused = manage::put_webhook(&t.hub, "admin", "acme", "bad", "https://pager.test/hook", "whsec_short").await;
    assert!(refused.is_err(), "a malformed whsec_ secret is refused");

    let id = t.submit_ok(ask_expiring("sw1", 60)).await;
    notify::work_due(&t.hub, &notifier, 10).await.unwrap();
    let hook = hook_requests().pop().unwrap();
    let header = |name: &str| hook.headers.iter().find(|(k, _)| k == name).map(|(_, v)| v.clone()).unwrap();
    let (wid, ts, sig) = (header("webhook-id"), header("webhook-timestamp"), header("webhook-signature"));
    let body: Value = serde_json::from_slice(&hook.body).unwrap();
    assert_eq!(wid, body["event_id"].as_str().unwrap(), "webhook-id is the event id");
    assert!(wid.starts_with(&id), "{wid}");
    let now = t.clock_now().timestamp();
    let key = WebhookSecret::parse(secret).unwrap();
    key.verify(&wid, &ts, &sig, &hook.body, now, 300).expect("it verifies");
    assert!(key.verify(&wid, &ts, &sig, b"{}", now, 300).is_err(), "bound to the body");
    assert!(hook.headers.iter().any(|(k, _)| k == "MA2H-Signature"), "the MA2H signature is still sent");
}

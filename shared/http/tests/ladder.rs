//! Issue 40 deliverable 4 on every backend (`MA2H_TEST_STORE`): operator presence — recorded
//! from an operator's own API calls and inbox pages, never from a live tab's background reads —
//! and the on-call ladder it drives: an offline rung is skipped, an away operator's delegate is
//! reached instead, each rung climbs to the next after `ladder_minutes` of silence, the last is
//! always reached, and an answer ends the ladder.

mod common;

use std::sync::Arc;

use axum::http::{Method, StatusCode};
use chrono::Duration;
use common::recording::{Mailbag, Recording};
use common::*;
use ma2h_core::admin;
use ma2h_core::channels::manage::{self, EmailSpec, RouteSpec};
use ma2h_core::channels::notify;
use ma2h_core::channels::outbox::{Notification, StepKind, StepStatus};
use ma2h_core::channels::sender::Notifier;
use ma2h_protocol::ids::{AccountId, MessageId};
use serde_json::{Value, json};

struct Team {
    t: TestHub,
    sent: Arc<Recording>,
    mail: Arc<Mailbag>,
    notifier: Notifier,
    bob: String,
    carol: String,
}

/// Account `acme`: operators alice (the harness's), bob, carol and dave; a Slack channel `ops`
/// linking bob and carol; an email channel `mail` listing carol and dave; the route `all`
/// announcing to `ops` with the ladder `ladder`, 10 minutes a rung, offline after 30.
async fn team(ladder: &[&str]) -> Team {
    let mut settings = settings();
    settings.channels.slack_api_url = "https://slack.test/api".into();
    settings.channels.config_cache = std::time::Duration::ZERO;
    let t = hub_with(settings).await;
    let bob = admin::create_operator(&t.hub, "acme", "bob", None).await.unwrap().api_key;
    let carol = admin::create_operator(&t.hub, "acme", "carol", None).await.unwrap().api_key;
    admin::create_operator(&t.hub, "acme", "dave", None).await.unwrap();
    manage::put_slack(&t.hub, "admin", "acme", "ops", "T0TEAM", "C0OPS", "xoxb-1", "signing").await.unwrap();
    manage::link_slack(&t.hub, "admin", "acme", "T0TEAM", "UBOB", Some("bob")).await.unwrap();
    manage::link_slack(&t.hub, "admin", "acme", "T0TEAM", "UCAROL", Some("carol")).await.unwrap();
    let mail = EmailSpec {
        id: "mail".into(),
        smtp_host: "127.0.0.1".into(),
        smtp_port: 2525,
        security: "none".into(),
        from: "Hub <hub@example.com>".into(),
        recipients: vec![("carol".into(), "carol@example.com".into()), ("dave".into(), "dave@example.com".into())],
        ..Default::default()
    };
    manage::put_email(&t.hub, "admin", "acme", mail).await.unwrap();
    let route = RouteSpec {
        id: "all".into(),
        targets: vec!["ops".into()],
        ladder: ladder.iter().map(|h| (*h).to_owned()).collect(),
        ladder_minutes: Some(10),
        offline_minutes: Some(30),
        ..RouteSpec::default()
    };
    manage::put_route(&t.hub, "admin", "acme", route).await.unwrap();
    let sent = Arc::new(Recording::default());
    let mail = Arc::new(Mailbag::default());
    let notifier = Notifier::new(sent.clone()).with_mailer(mail.clone());
    Team { t, sent, mail, notifier, bob, carol }
}

/// An ask the four operators may answer, open for two hours.
fn open_ask(key: &str) -> Value {
    let a =
        with(ask(key), "/request/allowed_resolvers", json!(["human:alice", "human:bob", "human:carol", "human:dave"]));
    with(a, "/expires_at", json!(ts(start() + Duration::hours(2))))
}

impl Team {
    async fn work(&self) {
        notify::work_due(&self.t.hub, &self.notifier, 10).await.unwrap();
    }
    /// The Slack thread replies that mention someone, by mentioned user.
    fn mentions(&self) -> Vec<String> {
        self.sent
            .to("chat.postMessage")
            .iter()
            .filter_map(|b| {
                b["text"].as_str().and_then(|t| t.split("<@").nth(1)).map(|r| r[..r.find('>').unwrap()].to_owned())
            })
            .collect()
    }
    fn mailed(&self) -> Vec<String> {
        self.mail.0.lock().unwrap().iter().map(|m| format!("{} {}", m.to, m.subject)).collect()
    }
    async fn item(&self, id: &str) -> Notification {
        let (account, id) = (AccountId::parse("acme").unwrap(), MessageId::parse(id).unwrap());
        self.t.hub.notifications.get_notification(&account, &id).await.unwrap().expect("an item")
    }
}

fn rung(item: &Notification, n: u8) -> (StepStatus, Option<String>) {
    let s =
        item.steps.iter().find(|s| s.kind == StepKind::Ladder && s.channel.is_empty() && s.rung == Some(n)).unwrap();
    (s.status, s.last_error.clone())
}

#[tokio::test]
async fn the_ladder_skips_the_offline_reaches_the_active_and_climbs_while_nobody_answers() {
    let team = team(&["alice", "bob", "carol"]).await;
    let t = &team.t;
    // bob uses the operator API: he is active; alice and carol were never seen
    let r = t.call(Method::GET, "/v1/operator/presence", Some(&team.bob), None).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    t.advance(Duration::minutes(1));

    let id = t.submit_ok(open_ask("l1")).await;
    team.work().await;
    assert_eq!(team.mentions(), ["UBOB"], "alice (offline) skipped, bob reached at once");
    let mention = team.sent.to("chat.postMessage")[1].clone();
    assert_eq!(mention["thread_ts"], "1700000000.000001", "in the announcement's thread");
    let item = team.item(&id).await;
    let (status, why) = rung(&item, 0);
    assert_eq!(status, StepStatus::Cancelled);
    assert!(why.unwrap().contains("human:alice is offline (never seen)"));
    assert_eq!(rung(&item, 1).0, StepStatus::Sent);

    // bob is silent: carol's rung falls due 10 minutes after his, not before
    t.advance(Duration::minutes(9));
    team.work().await;
    assert_eq!(team.mentions(), ["UBOB"]);
    t.advance(Duration::minutes(1));
    team.work().await;
    assert_eq!(team.mentions(), ["UBOB", "UCAROL"], "carol is offline but the last rung is always reached");
    assert_eq!(team.mailed(), ["carol@example.com [high] On call: Ship to prod?"]);

    // carol answers from the API; nothing further, and the posts are left as they are
    let r = t.resolve(&team.carol, &id, json!({"resolution": "answered", "value": "ship"})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    team.work().await;
    let item = team.item(&id).await;
    assert!(item.steps.iter().all(|s| s.status != StepStatus::Pending), "{:?}", item.steps);
    assert_eq!(team.sent.to("chat.update").len(), 1, "the announcement shows the outcome; mentions are not edited");
    let page_cookie = t.ui_login(&t.operator).await;
    let page = t.page(Method::GET, &format!("/inbox/{id}"), Some(&page_cookie), None).await;
    assert!(page.html.contains("on-call ladder: skipped: human:alice is offline"), "the timeline says why");
    assert!(page.html.contains("on call: reached on channel ops to bob"));
}

#[tokio::test]
async fn an_away_operators_delegate_is_reached_and_an_answer_ends_the_ladder() {
    let team = team(&["alice", "bob"]).await;
    let t = &team.t;
    let until = ts(start() + Duration::days(1));
    let r = t
        .call(Method::PUT, "/v1/operator/away", Some(&t.operator), Some(json!({"delegate": "dave", "until": until})))
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let id = t.submit_ok(open_ask("l2")).await;
    team.work().await;
    assert_eq!(team.mailed(), ["dave@example.com [high] On call: Ship to prod?"], "alice's delegate, by mail");
    assert!(team.mentions().is_empty(), "dave has no Slack link");
    let (status, why) = rung(&team.item(&id).await, 0);
    assert_eq!(status, StepStatus::Sent);
    assert_eq!(why.as_deref(), Some("human:alice is away: reached their delegate human:dave"));

    // bob answers before his rung: it is never sent
    t.advance(Duration::minutes(5));
    let r = t.resolve(&team.bob, &id, json!({"resolution": "answered", "value": "hold"})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    t.advance(Duration::minutes(10));
    team.work().await;
    assert!(team.mentions().is_empty(), "bob was not paged after answering");
    assert_eq!(rung(&team.item(&id).await, 1).0, StepStatus::Cancelled);
}

#[tokio::test]
async fn presence_counts_an_operators_own_requests_and_not_a_live_tabs_background_reads() {
    let team = team(&["carol"]).await;
    let t = &team.t;
    let presence = |key: String| async move {
        let r = t.call(Method::GET, "/v1/operator/presence", Some(&key), None).await;
        assert_eq!(r.status, StatusCode::OK, "{}", r.body);
        r.body["operators"].as_array().unwrap().clone()
    };
    let cookie = t.ui_login(&team.bob).await;
    t.advance(Duration::minutes(2));
    // a live tab's reads: the pulse, the event stream's pulse, and live.js's page refresh
    let live = t.page(Method::GET, "/inbox/live", Some(&cookie), None).await;
    assert_eq!(live.status, StatusCode::OK);
    let ops = presence(t.operator.clone()).await;
    let who: Vec<_> = ops.iter().map(|o| (o["human"].as_str().unwrap(), o["state"].as_str().unwrap())).collect();
    assert_eq!(
        who,
        [("human:alice", "online"), ("human:carol", "unknown")],
        "bob's tab is not activity; carol is on a ladder"
    );

    let page = t.page(Method::GET, "/inbox", Some(&cookie), None).await;
    assert_eq!(page.status, StatusCode::OK);
    let ops = presence(t.operator.clone()).await;
    let bob = ops.iter().find(|o| o["human"] == "human:bob").expect("bob opened a page");
    assert_eq!(bob["state"], "online");
    assert_eq!(bob["last_seen"].as_str().and_then(ma2h_protocol::time::parse), Some(t.clock_now()));

    // 20 minutes on: offline in the listing (online means within 15)
    t.advance(Duration::minutes(20));
    let ops = presence(t.operator.clone()).await;
    assert_eq!(ops.iter().find(|o| o["human"] == "human:bob").unwrap()["state"], "offline");
    let r = t.call(Method::GET, "/v1/operator/presence", Some(&t.agent), None).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "operators only");

    let policies = t.page(Method::GET, "/inbox/policies", Some(&cookie), None).await;
    assert!(
        policies.html.contains("Team") && policies.html.contains("human:carol"),
        "the Policies page lists the team"
    );
}

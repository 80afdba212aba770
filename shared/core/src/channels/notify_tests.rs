use super::*;
use crate::channels::config::{Channel, ChannelsConfig, Route, Sealed, WebhookChannel};
use crate::channels::schedule::plan;
use serde_json::json;

fn config(route: serde_json::Value) -> ChannelsConfig {
    let key = crate::kernel::secrets::MasterKey::from_bytes([1; 32]);
    let hook = |id: &str| {
        let secret = Sealed::seal(&key, &crate::kernel::clock::OsRandom, id, "s");
        (
            id.to_owned(),
            Channel::Webhook(WebhookChannel { url: "https://x.test/h".into(), secret, standard_webhooks: false }),
        )
    };
    ChannelsConfig {
        channels: [hook("a"), hook("b")].into_iter().collect(),
        routes: vec![serde_json::from_value::<Route>(route).unwrap()],
        ..Default::default()
    }
}

fn ask(expires: Option<&str>) -> Envelope {
    let mut v = json!({"ma2h_version":"0.5","type":"ask","title":"t","agent":{"id":"ci","run_id":"r","runtime":"cli"},"created_at":"2026-06-04T12:00:00Z","idempotency_key":"k",
        "request":{"mode":"confirm"}});
    if let Some(e) = expires {
        v["expires_at"] = json!(e);
    }
    Envelope::from_value(v).unwrap()
}

fn now() -> Timestamp {
    ma2h_protocol::time::parse("2026-06-04T12:00:00Z").unwrap()
}

#[test]
fn a_plan_announces_reminds_and_escalates_at_the_share_of_the_lifetime_left() {
    let c = config(
        json!({"id":"r","targets":["a","gone"],"remind_after_minutes":10,"escalate":["b"],"escalate_percent_left":25}),
    );
    let (route, steps) = plan(&c, &ask(Some("2026-06-04T13:00:00Z")), now()).unwrap();
    assert_eq!(route, "r");
    let kinds: Vec<(&str, StepKind, i64)> =
        steps.iter().map(|s| (s.channel.as_str(), s.kind, (s.due_at - now()).num_minutes())).collect();
    // an unknown channel id is skipped; 25 % of 60 minutes left = 45 minutes in
    assert_eq!(kinds, vec![("a", StepKind::Created, 0), ("a", StepKind::Reminder, 10), ("b", StepKind::Escalated, 45)]);
}

#[test]
fn no_reminder_after_expiry_and_no_escalation_without_an_expiry() {
    let c = config(json!({"id":"r","targets":["a"],"remind_after_minutes":90,"escalate":["b"]}));
    let (_, steps) = plan(&c, &ask(Some("2026-06-04T13:00:00Z")), now()).unwrap();
    assert!(steps.iter().all(|s| s.kind != StepKind::Reminder), "a reminder after expires_at is pointless");
    let (_, steps) = plan(&c, &ask(None), now()).unwrap();
    assert!(steps.iter().all(|s| s.kind != StepKind::Escalated), "nothing to escalate against");
    let none = config(json!({"id":"r","targets":["gone"]}));
    assert!(plan(&none, &ask(None), now()).is_none(), "no known channel: no item");
}

#[test]
fn outcomes_are_owed_once_per_slack_post_and_once_per_webhook() {
    let c = config(json!({"id":"r","targets":["a"]}));
    let mut item = Notification {
        account: AccountId::parse("acme").unwrap(),
        message_id: MessageId::from_parts(1, 1),
        version: 1,
        created_at: now(),
        next_due: None,
        retain_until: None,
        route: "r".into(),
        steps: vec![Step::pending("a", StepKind::Created, now()), Step::pending("a", StepKind::Reminder, now())],
    };
    item.steps[0].status = StepStatus::Sent;
    item.steps[1].status = StepStatus::Sent;
    close_out(&mut item, &c, now());
    close_out(&mut item, &c, now());
    let outcomes = item.steps.iter().filter(|s| s.kind == StepKind::Outcome).count();
    assert_eq!(outcomes, 1, "one event for the webhook, however often it is judged");
}

#[test]
fn backoff_grows_and_is_capped() {
    assert_eq!(backoff(1).num_seconds(), 5);
    assert_eq!(backoff(2).num_seconds(), 10);
    assert_eq!(backoff(30).num_seconds(), 600);
}

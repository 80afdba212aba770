use super::*;
use crate::decisions::policy::Away;
use ma2h_protocol::ids::{AccountId, MessageId};
use serde_json::json;

fn at(minutes: i64) -> Timestamp {
    time::from_millis(1_800_000_000_000) + Duration::minutes(minutes)
}

fn h(s: &str) -> HumanId {
    HumanId::parse(s).unwrap()
}

/// An account with a Slack channel `ops` (alice and bob linked), a webhook `pager`, an email
/// channel `mail` listing bob and dave, and the route `r` laddering `ladder`.
fn policy(ladder: &[&str]) -> AccountPolicy {
    let channels = serde_json::from_value(json!({
        "channels": {
            "ops": {"kind": "slack", "team_id": "T1", "channel": "C1", "bot_token": "x", "signing_secret": "y"},
            "pager": {"kind": "webhook", "url": "https://pager.test/", "secret": "z"},
            "other": {"kind": "webhook", "url": "https://other.test/", "secret": "z"},
            "mail": {"kind": "email", "smtp_host": "h", "smtp_port": 25, "security": "none", "from": "hub@x",
                     "recipients": {"bob": "bob@x", "dave": "dave@x"}}
        },
        "routes": [{"id": "r", "targets": ["ops", "pager"], "ladder": ladder, "ladder_minutes": 10}],
        "slack_links": {"T1:UALICE": "alice", "T1:UBOB": "bob", "T9:UCAROL": "carol"}
    }))
    .unwrap();
    AccountPolicy { channels, ..AccountPolicy::default() }
}

fn item(p: &AccountPolicy, expires: Option<Timestamp>) -> Notification {
    Notification {
        account: AccountId::parse("acme").unwrap(),
        message_id: MessageId::from_parts(1, 2),
        version: 1,
        created_at: at(0),
        next_due: Some(at(0)),
        retain_until: None,
        route: "r".into(),
        steps: plan(&p.channels.routes[0], at(0), expires),
    }
}

/// (rung, channel, recipient, status) of every ladder step, in order.
fn ladder(item: &Notification) -> Vec<(u8, String, String, StepStatus)> {
    item.steps
        .iter()
        .filter(|s| s.kind == StepKind::Ladder)
        .map(|s| (s.rung.unwrap(), s.channel.clone(), s.recipient.clone().unwrap(), s.status))
        .collect()
}

#[test]
fn rungs_fall_due_one_interval_apart_and_none_after_the_expiry() {
    let p = policy(&["alice", "bob", "carol"]);
    let due: Vec<_> = item(&p, None).steps.iter().map(|s| (s.rung, s.due_at)).collect();
    assert_eq!(due, vec![(Some(0), at(0)), (Some(1), at(10)), (Some(2), at(20))]);
    let short = item(&p, Some(at(15)));
    assert_eq!(short.steps.len(), 2, "the third rung would fall due after the expiry");
}

#[test]
fn an_available_operator_is_reached_on_each_channel_that_reaches_them() {
    let p = policy(&["bob", "alice"]);
    let mut it = item(&p, None);
    let seen = [(h("bob"), at(-5)), (h("alice"), at(-1))];
    open_rungs(&mut it, &p, &seen, at(0));
    let sent = |s: &str| (0, s.to_owned(), "bob".to_owned(), StepStatus::Pending);
    assert_eq!(
        ladder(&it),
        vec![
            (0, String::new(), "bob".into(), StepStatus::Sent),
            (1, String::new(), "alice".into(), StepStatus::Pending),
            sent("mail"),
            sent("ops"),
            sent("pager"),
        ],
        "the route's Slack (linked) and webhook, and every email channel listing bob — not `other`"
    );
    assert!(!has_due(&it, at(9)), "alice's rung waits its interval");
    assert!(has_due(&it, at(10)));
}

#[test]
fn an_offline_operator_is_skipped_and_the_next_rung_falls_due_at_once_keeping_the_spacing() {
    let p = policy(&["alice", "bob", "dave"]);
    let mut it = item(&p, None);
    let seen = [(h("alice"), at(-61)), (h("bob"), at(-2))];
    open_rungs(&mut it, &p, &seen, at(0));
    let rung = |r: u8| it.steps.iter().find(|s| s.rung == Some(r) && s.channel.is_empty()).unwrap().clone();
    assert_eq!(rung(0).status, StepStatus::Cancelled);
    assert!(rung(0).last_error.unwrap().contains("offline (last seen"), "says why");
    assert_eq!(rung(1).status, StepStatus::Sent, "bob at once, not 10 minutes later");
    assert_eq!(rung(2).due_at, at(10), "dave one interval after bob was reached");
    assert!(it.steps.iter().any(|s| s.channel == "mail" && s.recipient.as_deref() == Some("bob")));
}

#[test]
fn the_last_rung_is_reached_even_when_everyone_is_offline() {
    let p = policy(&["alice", "bob"]);
    let mut it = item(&p, None);
    open_rungs(&mut it, &p, &[], at(0));
    let reached: Vec<_> = ladder(&it).into_iter().filter(|l| !l.1.is_empty()).collect();
    assert!(!reached.is_empty() && reached.iter().all(|l| l.2 == "bob"), "{reached:?}");
    let last = it.steps.iter().find(|s| s.rung == Some(1) && s.channel.is_empty()).unwrap();
    assert!(last.last_error.as_deref().unwrap().contains("always reached"));
}

#[test]
fn an_away_operator_is_replaced_by_their_delegate() {
    let mut p = policy(&["alice", "bob"]);
    p.away.insert("alice".into(), Away { delegate: "dave".into(), since: at(-60), until: at(60) });
    let mut it = item(&p, None);
    open_rungs(&mut it, &p, &[(h("alice"), at(0))], at(0));
    let reached: Vec<_> = ladder(&it).into_iter().filter(|l| !l.1.is_empty()).collect();
    let pending = |c: &str| (0, c.to_owned(), "dave".to_owned(), StepStatus::Pending);
    assert_eq!(reached, vec![pending("mail"), pending("pager")], "dave's mail and the route's webhook; no Slack link");
    assert!(it.steps[0].last_error.as_deref().unwrap().contains("delegate human:dave"));
}

#[test]
fn a_rung_no_channel_reaches_fails_and_the_next_falls_due() {
    let p = policy(&["carol", "bob"]); // carol is linked in another workspace only
    let mut it = item(&p, None);
    let seen = [(h("carol"), at(0)), (h("bob"), at(0))];
    let mut route_less = p.clone();
    route_less.channels.routes[0].targets = vec!["ops".into()];
    open_rungs(&mut it, &route_less, &seen, at(0));
    assert_eq!(it.steps[0].status, StepStatus::Failed);
    assert_eq!(it.steps[0].last_error.as_deref(), Some("no channel reaches human:carol"));
    assert_eq!(it.steps[1].status, StepStatus::Sent, "bob at once");
}

#[test]
fn the_slack_user_is_found_per_workspace() {
    let p = policy(&[]);
    assert_eq!(slack_user(&p.channels, "T1", "bob"), Some("UBOB"));
    assert_eq!(slack_user(&p.channels, "T1", "carol"), None);
    assert_eq!(slack_user(&p.channels, "T9", "carol"), Some("UCAROL"));
}

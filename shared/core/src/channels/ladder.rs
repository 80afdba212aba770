//! On-call ladders (issue 40): a route may name operators to reach one after another while its
//! message stays open — "Alice first; if she is away, offline or silent for 15 minutes, Bob;
//! then Carol". Each rung is one outbox step without a channel, due `ladder_minutes` after the
//! one before. When it falls due the worker decides, from presence
//! ([`crate::decisions::presence`]):
//! - **away** (a running absence): the delegate is reached in their place — they may answer on
//!   the absent operator's behalf;
//! - **offline** (no activity within the route's `offline_minutes`): the rung is skipped and the
//!   next falls due at once — except the last rung, which is always reached (someone must hear);
//! - otherwise the operator is reached on every channel that can reach them: a mail on each
//!   email channel listing them, a mention in the announcement's thread on each of the route's
//!   Slack channels whose workspace links them, a `message.ladder` event on each of the route's
//!   webhooks. A rung nothing can reach is marked failed and the next falls due at once.
//!
//! An answer, cancel or expiry ends the ladder: its pending rungs are cancelled like reminders.

use chrono::Duration;
use ma2h_protocol::ids::HumanId;
use ma2h_protocol::time::{self, Timestamp};

use crate::channels::config::{Channel, ChannelsConfig, Route};
use crate::channels::outbox::{Notification, Step, StepKind, StepStatus};
use crate::decisions::presence::{Standing, standing};
use crate::inter_agent::policy::AccountPolicy;

/// The rungs of `route` for a message submitted at `now`: rung `i` due `i × ladder_minutes`
/// later; none at or after `expires_at` (the first always).
pub fn plan(route: &Route, now: Timestamp, expires_at: Option<Timestamp>) -> Vec<Step> {
    let every = Duration::minutes(i64::from(route.rung_minutes()));
    route
        .ladder
        .iter()
        .enumerate()
        .map(|(i, human)| {
            let mut step = Step::pending("", StepKind::Ladder, now + every * i32::try_from(i).unwrap_or(i32::MAX));
            step.recipient = Some(human.clone());
            step.rung = u8::try_from(i).ok();
            step
        })
        .filter(|s| s.rung == Some(0) || expires_at.is_none_or(|e| s.due_at < e))
        .collect()
}

/// A rung step not yet turned into channel steps.
fn is_rung(step: &Step) -> bool {
    step.kind == StepKind::Ladder && step.channel.is_empty()
}

/// Whether a rung of `item` is due (and presence must be read).
pub fn has_due(item: &Notification, now: Timestamp) -> bool {
    item.steps.iter().any(|s| is_rung(s) && s.status == StepStatus::Pending && s.due_at <= now)
}

/// Turn every due rung of `item` into the channel steps that reach its operator (due now), or
/// skip it and bring the next rung forward — see the module docs.
pub fn open_rungs(item: &mut Notification, policy: &AccountPolicy, seen: &[(HumanId, Timestamp)], now: Timestamp) {
    let config = &policy.channels;
    let route = config.routes.iter().find(|r| r.id == item.route);
    let window = Duration::minutes(i64::from(route.map_or(60, Route::offline_after)));
    loop {
        let Some(i) = (0..item.steps.len())
            .filter(|&i| is_rung(&item.steps[i]) && item.steps[i].status == StepStatus::Pending)
            .min_by_key(|&i| item.steps[i].rung)
            .filter(|&i| item.steps[i].due_at <= now)
        else {
            return;
        };
        let human = item.steps[i].recipient.clone().unwrap_or_default();
        let rung = item.steps[i].rung;
        let last = !item.steps.iter().any(|s| is_rung(s) && s.status == StepStatus::Pending && s.rung > rung);
        let (target, note) = match standing(policy, seen, &human, window, now) {
            Standing::Away { delegate, .. } => {
                let note = format!("human:{human} is away: reached their delegate human:{delegate}");
                (delegate, Some(note))
            }
            Standing::Offline { last_seen } => {
                let when =
                    last_seen.map_or_else(|| "never seen".to_owned(), |t| format!("last seen {}", time::format(t)));
                if !last {
                    let why = format!("skipped: human:{human} is offline ({when})");
                    settle(item, i, StepStatus::Cancelled, now, Some(why));
                    bring_forward(item, rung, now);
                    continue;
                }
                (human.clone(), Some(format!("human:{human} is offline ({when}); the last rung is always reached")))
            }
            Standing::Available => (human.clone(), None),
        };
        let reached = reach(config, route, &target);
        if reached.is_empty() {
            settle(item, i, StepStatus::Failed, now, Some(format!("no channel reaches human:{target}")));
            bring_forward(item, rung, now);
            continue;
        }
        settle(item, i, StepStatus::Sent, now, note);
        item.steps.extend(reached.into_iter().map(|channel| {
            let mut step = Step::pending(&channel, StepKind::Ladder, now);
            step.recipient = Some(target.clone());
            step.rung = rung;
            step
        }));
    }
}

fn settle(item: &mut Notification, i: usize, status: StepStatus, now: Timestamp, note: Option<String>) {
    let step = &mut item.steps[i];
    step.status = status;
    step.done_at = Some(now);
    step.last_error = note;
}

/// After rung `after` was skipped at `now`: the next pending rung falls due now, and the ones
/// after it keep their spacing.
fn bring_forward(item: &mut Notification, after: Option<u8>, now: Timestamp) {
    let later = |s: &Step| is_rung(s) && s.status == StepStatus::Pending && s.rung > after;
    let Some(next) = item.steps.iter().filter(|s| later(s)).min_by_key(|s| s.rung).map(|s| s.due_at) else { return };
    let early = next - now;
    if early > Duration::zero() {
        for step in item.steps.iter_mut().filter(|s| later(s)) {
            step.due_at -= early;
        }
    }
}

/// The channels that reach `human`: every email and Web Push channel listing them; the route's Slack
/// channels whose workspace links a user to them; the route's webhooks.
pub fn reach(config: &ChannelsConfig, route: Option<&Route>, human: &str) -> Vec<String> {
    let on_route = |id: &String| route.is_some_and(|r| r.targets.contains(id) || r.escalate.contains(id));
    config
        .channels
        .iter()
        .filter(|(id, channel)| match channel {
            Channel::Email(mail) => mail.recipients.contains_key(human),
            Channel::Webpush(push) => push.recipients.iter().any(|h| h == human),
            Channel::Slack(slack) => on_route(id) && slack_user(config, &slack.team_id, human).is_some(),
            Channel::Webhook(_) => on_route(id),
        })
        .map(|(id, _)| id.clone())
        .collect()
}

/// The Slack user of workspace `team` linked to `human`, if any.
pub fn slack_user<'a>(config: &'a ChannelsConfig, team: &str, human: &str) -> Option<&'a str> {
    config.slack_links.iter().find_map(|(link, h)| {
        let (t, user) = link.split_once(':')?;
        (t == team && h == human).then_some(user)
    })
}

#[cfg(test)]
#[path = "ladder_tests.rs"]
mod tests;

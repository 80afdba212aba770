//! Channel notifications (issue 20): the outbox item written with a routed ask/task, the worker
//! that sends its steps, and the wake-up a terminal gives it. See [`crate::channels::outbox`] for
//! why an item can be neither lost nor sent for a message that never committed.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt as _;
use ma2h_protocol::envelope::Envelope;
use ma2h_protocol::ids::{AccountId, MessageId};
use ma2h_protocol::time::Timestamp;

use crate::channels::config::{Channel, ChannelsConfig};
use crate::channels::outbox::{MAX_ATTEMPTS, Notification, ORPHAN_GRACE, Step, StepKind, StepStatus, WATCH_RECHECK};
use crate::channels::schedule::{announce, config, retire};
use crate::channels::sender::{Failure, Notifier};
use crate::messages::records::{Lookup, MessageRecord};
use crate::{Hub, HubError};

/// How long a claimed item is leased to its worker (every step's send is bounded far below).
pub const LEASE: chrono::Duration = chrono::Duration::minutes(2);
/// No step of an item starts later than this into its round (each send is itself bounded: HTTP
/// 10 s, SMTP 15 s), so a round ends well inside the lease and the `deliver` function's 30 s.
const SEND_BUDGET: std::time::Duration = std::time::Duration::from_secs(10);
/// Steps of one item sent at once (an email channel has a step per recipient).
const SEND_CONCURRENCY: usize = 8;
/// How long an item waits before it is looked at again while its message has not committed.
const ORPHAN_RECHECK: chrono::Duration = chrono::Duration::seconds(5);

impl Notifier {
    /// Apply a Slack interaction the HTTP function verified and queued (AWS), and tell the
    /// pressing user the outcome. `Err` only for a store failure (the queue retries it).
    pub async fn apply_slack(&self, hub: &Hub, account: &AccountId, payload: &str) -> Result<(), HubError> {
        let Ok(payload) = serde_json::from_str::<serde_json::Value>(payload) else {
            tracing::warn!("dropping a malformed slack job");
            return Ok(());
        };
        let (outcome, response_url) = crate::channels::slack::apply_payload(hub, account, &payload).await?;
        if let (Some(text), Some(url)) = (outcome.reply(), response_url) {
            crate::channels::slack::reply_via(self.sender.as_ref(), &url, &text).await;
        }
        Ok(())
    }

    /// Work one item if it is due: claim it, send its due steps, record what happened. While
    /// the item is still due afterwards (a terminal woke it during the sends, or sends were left
    /// for the next round), work it again — a few rounds, then hand it to the queue.
    pub async fn process(&self, hub: &Hub, account: &AccountId, id: &MessageId) -> Result<(), HubError> {
        for _ in 0..3 {
            let now = hub.clock.now();
            let Some(item) = hub.notifications.claim_notification(account, id, now, now + LEASE).await? else {
                return Ok(());
            };
            let next_due = self.work_claimed(hub, item, now).await?;
            if next_due.is_none_or(|d| d > hub.clock.now()) {
                return Ok(());
            }
        }
        announce(hub, account, id).await;
        Ok(())
    }

    /// Work a claimed item and save it; the item's next due time as saved.
    async fn work_claimed(
        &self,
        hub: &Hub,
        mut item: Notification,
        now: Timestamp,
    ) -> Result<Option<Timestamp>, HubError> {
        let (account, id) = (item.account.clone(), item.message_id.clone());
        let expected = item.version;
        if let Err(e) = self.work(hub, &mut item, now).await {
            // Counted like a failed send, so an item that cannot be worked (an unreadable
            // configuration or record) ends `failed` instead of being leased again forever.
            tracing::error!(message_id = %id, error = %e, "notification item could not be worked");
            for step in item.steps.iter_mut().filter(|s| s.status == StepStatus::Pending && s.due_at <= now) {
                step.attempts += 1;
                if step.attempts >= MAX_ATTEMPTS {
                    fail(step, now, "the Hub could not work this step".into());
                } else {
                    step.due_at = now + backoff(step.attempts);
                    step.last_error = Some("the Hub could not work this step; retrying".into());
                }
            }
            item.next_due = item.earliest_pending();
            item.retain_until = item.next_due.is_none().then(|| now + hub.retention());
        }
        item.version = expected + 1;
        if hub.notifications.save_notification(&item, expected).await? {
            return Ok(item.next_due);
        }
        // A terminal's wake-up bumped the version while we held the lease (a wake-up never ends
        // a lease, so no other worker touched the steps): keep ours and the earlier due time.
        let Some(stored) = hub.notifications.get_notification(&account, &id).await? else { return Ok(None) };
        item.next_due = match (item.next_due, stored.next_due) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        };
        item.retain_until = item.retain_until.filter(|_| item.next_due.is_none());
        item.version = stored.version + 1;
        if !hub.notifications.save_notification(&item, stored.version).await? {
            tracing::warn!(message_id = %id, "notification item changed twice under its lease; left as stored");
        }
        Ok(item.next_due)
    }

    async fn work(&self, hub: &Hub, item: &mut Notification, now: Timestamp) -> Result<(), HubError> {
        let record = match hub.lookup(&item.account, &item.message_id).await? {
            Lookup::Found(rec) => crate::messages::lifecycle::settle(hub, rec).await?,
            Lookup::Missing if now - item.created_at < ORPHAN_GRACE => {
                item.next_due = Some(now + ORPHAN_RECHECK);
                return Ok(());
            }
            // Never committed (an orphan), or purged: nothing is owed any more.
            Lookup::Missing | Lookup::Gone { .. } => {
                retire(hub, item, now, "the message is gone");
                return Ok(());
            }
        };
        let policy = config(hub, &item.account).await?;
        let channels = &policy.channels;
        if !record.status.is_open() {
            close_out(item, channels, now);
        } else if crate::channels::ladder::has_due(item, now) {
            // Presence is read only when a rung falls due.
            let seen = hub.credentials.operators_seen(&item.account).await?;
            crate::channels::ladder::open_rungs(item, &policy, &seen, now);
        }
        let envelope = record.envelope()?;
        // A Slack ladder mention waits for its channel's announcement, so that it lands in its
        // thread (the next round, at once).
        let announcing = |s: &Step| {
            s.kind == StepKind::Ladder
                && matches!(channels.channels.get(&s.channel), Some(Channel::Slack(_)))
                && item
                    .steps
                    .iter()
                    .any(|a| a.kind == StepKind::Created && a.channel == s.channel && a.status == StepStatus::Pending)
        };
        let due: Vec<usize> = (0..item.steps.len())
            .filter(|&i| {
                let s = &item.steps[i];
                s.status == StepStatus::Pending && s.due_at <= now && !announcing(s)
            })
            .collect();
        // The due steps go out concurrently (a few at a time), and none starts after the budget,
        // so one item never holds its lease — or a `deliver` invocation — for long; what is left
        // stays due for the next round.
        let started = std::time::Instant::now();
        let steps = &item.steps;
        let sends = due.into_iter().map(|i| {
            let step = &steps[i];
            // A reminder is a reply in the thread of the channel's announcement.
            let parent = steps
                .iter()
                .find(|s| s.channel == step.channel && s.kind == StepKind::Created && s.status == StepStatus::Sent)
                .and_then(|s| s.external_ref.clone());
            let (record, envelope) = (&record, &envelope);
            async move {
                let Some(channel) = channels.channels.get(&step.channel) else {
                    return (i, None, Some(Err(Failure::Permanent("the channel is no longer configured".into()))));
                };
                if started.elapsed() > SEND_BUDGET {
                    return (i, Some(channel.kind()), None);
                }
                let sent =
                    self.send(hub, channels, channel, &step.channel, step, parent.as_deref(), record, envelope).await;
                (i, Some(channel.kind()), Some(sent))
            }
        });
        let results: Vec<_> = futures_util::stream::iter(sends).buffer_unordered(SEND_CONCURRENCY).collect().await;
        for (i, kind, sent) in results {
            let Some(sent) = sent else { continue };
            let step = &mut item.steps[i];
            step.attempts += 1;
            match sent {
                Ok(external_ref) => {
                    step.status = StepStatus::Sent;
                    step.done_at = Some(now);
                    step.last_error = None;
                    if external_ref.is_some() {
                        step.external_ref = external_ref;
                    }
                }
                Err(Failure::Retry(reason)) if step.attempts < MAX_ATTEMPTS => {
                    step.due_at = now + backoff(step.attempts);
                    step.last_error = Some(reason);
                }
                Err(Failure::Retry(reason) | Failure::Permanent(reason)) => fail(step, now, reason),
            }
            crate::kernel::metrics::notification(
                kind.unwrap_or("unknown"),
                step.kind.as_str(),
                step_label(step.status),
            );
            tracing::info!(
                message_id = %record.id,
                channel = %step.channel,
                step = step.kind.as_str(),
                attempt = step.attempts,
                status = step_label(step.status),
                "notification step"
            );
        }
        item.next_due = item.earliest_pending();
        if record.status.is_open() {
            // While a post may need its outcome, look again no later than the expiry: a lost
            // wake-up delays an update, never loses it.
            let watching = item.steps.iter().any(|s| s.status == StepStatus::Sent && s.kind != StepKind::Outcome);
            if watching {
                let watch = record.expires_at.unwrap_or(now + WATCH_RECHECK).max(now + chrono::Duration::seconds(1));
                item.next_due = Some(item.next_due.map_or(watch, |d| d.min(watch)));
            }
        } else {
            hub.changes.publish(&record.id);
        }
        item.retain_until = item.next_due.is_none().then(|| now + hub.retention());
        Ok(())
    }

    #[allow(clippy::too_many_arguments)]
    async fn send(
        &self,
        hub: &Hub,
        channels: &ChannelsConfig,
        channel: &Channel,
        channel_id: &str,
        step: &Step,
        parent: Option<&str>,
        record: &MessageRecord,
        envelope: &Envelope,
    ) -> Result<Option<String>, Failure> {
        // issue 43: one `channel.send` span per send (built only when traces are exported)
        let span = tracing::debug_span!(
            "channel.send",
            channel = channel_id,
            kind = channel.kind(),
            step = step.kind.as_str(),
            message_id = %record.id
        );
        let send = async move {
            match channel {
                Channel::Slack(slack) => {
                    // A ladder step mentions the Slack user linked to its operator.
                    let mention = step
                        .recipient
                        .as_deref()
                        .filter(|_| step.kind == StepKind::Ladder)
                        .and_then(|human| crate::channels::ladder::slack_user(channels, &slack.team_id, human));
                    let post = crate::channels::slack::Post { parent, mention };
                    crate::channels::slack::send(self, hub, slack, channel_id, step, post, record, envelope).await
                }
                Channel::Webhook(hook) => {
                    crate::channels::webhook_event::send(self, hub, hook, channel_id, step, record, envelope)
                        .await
                        .map(|()| None)
                }
                Channel::Email(mail) => {
                    crate::channels::email::send(self, hub, mail, channel_id, step, record, envelope)
                        .await
                        .map(|()| None)
                }
                Channel::Webpush(_) => {
                    crate::channels::webpush::send(self, hub, step, record, envelope).await.map(|()| None)
                }
            }
        };
        tracing::Instrument::instrument(send, span).await
    }
}

/// A terminal message: nothing not yet sent is announced any more (an announcement, reminder or
/// escalation still pending is cancelled), and each post that went out owes its update — Slack
/// edits each announcement or escalation post in place; a webhook gets one `message.resolved`.
fn close_out(item: &mut Notification, channels: &ChannelsConfig, now: Timestamp) {
    for step in &mut item.steps {
        if step.status == StepStatus::Pending && step.kind != StepKind::Outcome {
            step.status = StepStatus::Cancelled;
            step.done_at = Some(now);
        }
    }
    let mut owed = Vec::new();
    for step in item.steps.iter().filter(|s| s.status == StepStatus::Sent && s.kind != StepKind::Outcome) {
        // a Web Push outcome is per recipient (it replaces their notification); others per post
        let who = match channels.channels.get(&step.channel) {
            Some(Channel::Webpush(_)) => step.recipient.clone(),
            _ => None,
        };
        let already = |r: &Option<String>| {
            let same = |o: &Step| o.channel == step.channel && &o.external_ref == r && o.recipient == who;
            item.steps.iter().any(|o| o.kind == StepKind::Outcome && same(o)) || owed.iter().any(same)
        };
        let outcome_ref = match channels.channels.get(&step.channel) {
            // one update per post (a reminder or a ladder mention is a reply without buttons)
            Some(Channel::Slack(_))
                if step.external_ref.is_some() && !matches!(step.kind, StepKind::Reminder | StepKind::Ladder) =>
            {
                step.external_ref.clone()
            }
            // one event per webhook; one notification per Web Push recipient (it replaces theirs)
            Some(Channel::Webhook(_) | Channel::Webpush(_)) => None,
            _ => continue,
        };
        if !already(&outcome_ref) {
            let mut o = Step::pending(&step.channel, StepKind::Outcome, now);
            o.external_ref = outcome_ref;
            o.recipient = who;
            owed.push(o);
        }
    }
    item.steps.extend(owed);
}

fn fail(step: &mut Step, now: Timestamp, reason: String) {
    step.status = StepStatus::Failed;
    step.done_at = Some(now);
    step.last_error = Some(reason);
}

fn step_label(status: StepStatus) -> &'static str {
    match status {
        StepStatus::Pending => "retry",
        StepStatus::Sent => "sent",
        StepStatus::Failed => "failed",
        StepStatus::Cancelled => "cancelled",
    }
}

/// 5 s · 2^(n-1), at most 10 minutes.
fn backoff(attempts: u32) -> chrono::Duration {
    chrono::Duration::seconds((5i64 << attempts.saturating_sub(1).min(7)).min(600))
}

/// The local worker: keeps up to `MA2H_PUSH_MAX_IN_FLIGHT` due items being worked, and at most
/// `MA2H_PUSH_PER_ACCOUNT` of one account's, refilling as each ends — never "a batch, then wait
/// for the whole batch". So one account's receiver that stalls for its whole timeout holds only
/// that account's share, and another account's notification starts at once (issue 36).
pub async fn run_worker(hub: Hub, notifier: Arc<Notifier>) {
    let max = hub.settings.push.max_in_flight.max(1);
    let per_account = hub.settings.push.per_account.max(1);
    let mut in_flight = tokio::task::JoinSet::new();
    // each task's item, by task id: a task that panics still frees its account's share
    let mut working: HashMap<tokio::task::Id, (AccountId, MessageId)> = HashMap::new();
    let mut per: HashMap<AccountId, usize> = HashMap::new();
    loop {
        if in_flight.len() < max {
            match hub.notifications.due_notifications(hub.clock.now(), max).await {
                Ok(due) => {
                    for key in due {
                        let busy = per.get(&key.0).copied().unwrap_or(0);
                        if in_flight.len() >= max || busy >= per_account || working.values().any(|k| *k == key) {
                            continue; // still due: taken on a later turn
                        }
                        *per.entry(key.0.clone()).or_default() += 1;
                        let (hub, notifier, (account, id)) = (hub.clone(), notifier.clone(), key.clone());
                        let task = in_flight.spawn(async move { notifier.process(&hub, &account, &id).await });
                        working.insert(task.id(), key);
                    }
                }
                Err(e) => tracing::error!(error = %e, "claiming due notifications failed"),
            }
        }
        tokio::select! {
            Some(joined) = in_flight.join_next_with_id(), if !in_flight.is_empty() => {
                let task = match joined {
                    Ok((task, Ok(()))) => task,
                    Ok((task, Err(e))) => {
                        tracing::error!(error = %e, "notification item failed");
                        task
                    }
                    Err(e) => {
                        tracing::error!(error = %e, "notification task panicked");
                        e.id()
                    }
                };
                if let Some((account, _)) = working.remove(&task)
                    && let Some(n) = per.get_mut(&account)
                {
                    *n -= 1;
                    if *n == 0 {
                        per.remove(&account);
                    }
                }
            }
            () = tokio::time::sleep(Duration::from_millis(250)) => {}
        }
    }
}

/// Work up to `limit` due items (the local worker's tick).
pub async fn work_due(hub: &Hub, notifier: &Notifier, limit: usize) -> Result<usize, HubError> {
    let due = hub.notifications.due_notifications(hub.clock.now(), limit).await?;
    let n = due.len();
    let runs = due.iter().map(|(account, id)| notifier.process(hub, account, id));
    for result in futures_util::future::join_all(runs).await {
        if let Err(e) = result {
            tracing::error!(error = %e, "notification item failed");
        }
    }
    Ok(n)
}

/// For a Hub driven by an external queue (AWS): announce the items that are due (reminders,
/// escalations, retries, lost announcements). The consumer claims each, so an item announced
/// twice is worked once.
pub async fn requeue_due(hub: &Hub, limit: usize) -> Result<usize, HubError> {
    let mut n = 0;
    for (account, id) in hub.notifications.due_notifications(hub.clock.now(), limit).await? {
        match hub.push_queue.enqueue_notification(&account, &id).await {
            Ok(()) => n += 1,
            Err(e) => tracing::warn!(message_id = %id, error = %e, "notification re-enqueue failed"),
        }
    }
    Ok(n)
}

#[cfg(test)]
#[path = "notify_tests.rs"]
mod tests;

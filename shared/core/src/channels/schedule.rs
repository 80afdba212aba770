//! The message side of channel notifications (issue 20): the outbox item a routed ask/task is
//! written with, the announcement after its submit, and the wake-up a terminal gives it. The
//! worker that sends the item's steps is [`crate::channels::notify`].

use std::sync::Arc;

use ma2h_protocol::envelope::Envelope;
use ma2h_protocol::ids::{AccountId, MessageId};
use ma2h_protocol::time::Timestamp;

use crate::channels::config::{Channel, ChannelsConfig};
use crate::channels::outbox::{Notification, Step, StepKind, StepStatus};
use crate::inter_agent::policy::AccountPolicy;
use crate::{Hub, HubError};
use std::sync::PoisonError;
use std::time::Instant;

/// The account's channels configuration, through the cache.
pub async fn config(hub: &Hub, account: &AccountId) -> Result<Arc<AccountPolicy>, HubError> {
    let ttl = hub.settings.channels.config_cache;
    if let Some((p, at)) = hub.policy_cache.0.lock().unwrap_or_else(PoisonError::into_inner).get(account)
        && at.elapsed() < ttl
    {
        return Ok(p.clone());
    }
    let policy = Arc::new(hub.credentials.get_account_policy(account).await?.unwrap_or_default());
    if !ttl.is_zero() {
        let mut cache = hub.policy_cache.0.lock().unwrap_or_else(PoisonError::into_inner);
        if cache.len() > 4096 {
            cache.retain(|_, (_, at)| at.elapsed() < ttl);
            if cache.len() > 4096 {
                cache.clear();
            }
        }
        cache.insert(account.clone(), (policy.clone(), Instant::now()));
    }
    Ok(policy)
}

/// The steps a routed message owes, or `None` when no route matches.
pub fn plan(config: &ChannelsConfig, envelope: &Envelope, now: Timestamp) -> Option<(String, Vec<Step>)> {
    let route = config.route_for(envelope)?;
    // One step per channel — per recipient for email and Web Push (each mail's links and each
    // notification's buttons act as its recipient);
    // an id no longer configured is skipped.
    let steps_for = |ids: &[String], kind: StepKind, at: Timestamp| -> Vec<Step> {
        ids.iter()
            .flat_map(|id| match config.channels.get(id) {
                Some(Channel::Email(mail)) => mail
                    .recipients
                    .keys()
                    .map(|human| Step { recipient: Some(human.clone()), ..Step::pending(id, kind, at) })
                    .collect(),
                Some(Channel::Webpush(push)) => push
                    .recipients
                    .iter()
                    .map(|human| Step { recipient: Some(human.clone()), ..Step::pending(id, kind, at) })
                    .collect(),
                Some(_) => vec![Step::pending(id, kind, at)],
                None => vec![],
            })
            .collect()
    };
    let mut steps = steps_for(&route.targets, StepKind::Created, now);
    if let Some(minutes) = route.remind_after_minutes.filter(|m| *m > 0) {
        let at = now + chrono::Duration::minutes(i64::from(minutes));
        if envelope.expires_at.is_none_or(|e| at < e) {
            steps.extend(steps_for(&route.targets, StepKind::Reminder, at));
        }
    }
    if let Some(expires) = envelope.expires_at.filter(|_| !route.escalate.is_empty()) {
        let lifetime = expires - now;
        let left = lifetime * i32::from(route.escalate_percent_left.min(100)) / 100;
        let at = expires - left;
        if at > now {
            steps.extend(steps_for(&route.escalate, StepKind::Escalated, at));
        }
    }
    steps.extend(crate::channels::ladder::plan(route, now, envelope.expires_at));
    (!steps.is_empty()).then(|| (route.id.clone(), steps))
}

/// Write the outbox item of a routed ask/task — before the message itself (see the module docs).
/// A failure is logged and the submit goes on: a notification never decides a message's fate.
/// Returns the item written, if any.
pub async fn schedule(hub: &Hub, account: &AccountId, id: &MessageId, envelope: &Envelope) -> Option<Notification> {
    let now = hub.clock.now();
    let planned = match config(hub, account).await {
        Ok(policy) => plan(&policy.channels, envelope, now),
        Err(e) => {
            tracing::warn!(message_id = %id, error = %e, "channels configuration unreadable; not announced");
            return None;
        }
    };
    let (route, steps) = planned?;
    let item = Notification {
        account: account.clone(),
        message_id: id.clone(),
        version: 1,
        created_at: now,
        next_due: Some(now),
        retain_until: None,
        route,
        steps,
    };
    match hub.notifications.create_notification(&item).await {
        Ok(_) => Some(item),
        Err(e) => {
            tracing::warn!(message_id = %id, error = %e, "notification outbox write failed; not announced");
            None
        }
    }
}

/// The submit turned out to be a replay (its key was claimed): the item written for the id that
/// was never used is retired at once instead of waiting out [`ORPHAN_GRACE`](crate::channels::outbox::ORPHAN_GRACE). Best effort.
pub async fn discard(hub: &Hub, mut item: Notification) {
    let now = hub.clock.now();
    retire(hub, &mut item, now, "a replay: the message was never created");
    let expected = item.version;
    item.version += 1;
    if let Err(e) = hub.notifications.save_notification(&item, expected).await {
        tracing::warn!(message_id = %item.message_id, error = %e, "orphan notification item left to the worker");
    }
}

/// After a committed submit: hand the item to the worker at once (SQS on AWS; the local worker
/// polls its index). Best effort: the item is due in the store either way.
pub async fn announce(hub: &Hub, account: &AccountId, id: &MessageId) {
    if let Err(e) = hub.push_queue.enqueue_notification(account, id).await {
        tracing::warn!(message_id = %id, error = %e, "notification enqueue failed; the sweeper will find it");
    }
}

/// Whether a terminal of `envelope` should wake an outbox item: an ask/task for the human in an
/// account that has routes (any route — one narrowed or changed since the submit must not leave
/// a post unupdated). Reads the cached configuration; an unreadable one answers `true` (a wake-up
/// of nothing costs one conditional write). An account without routes pays nothing; a route
/// removed altogether is caught by the item's watch time.
pub async fn routed(hub: &Hub, account: &AccountId, envelope: &Envelope) -> bool {
    if envelope.to.is_some() || envelope.kind() == ma2h_protocol::envelope::MessageType::Notify {
        return false;
    }
    match config(hub, account).await {
        Ok(policy) => !policy.channels.routes.is_empty(),
        Err(_) => true,
    }
}

/// After a committed terminal: make the message's item (if any) due now, so its posts show the
/// outcome. Best effort: a lost wake-up is caught by the item's watch time (module docs).
pub async fn wake(hub: &Hub, account: &AccountId, id: &MessageId) {
    let now = hub.clock.now();
    if let Err(e) = hub.notifications.wake_notification(account, id, now).await {
        tracing::warn!(message_id = %id, error = %e, "notification wake-up failed; its watch time covers it");
        return;
    }
    announce(hub, account, id).await;
}

pub(crate) fn retire(hub: &Hub, item: &mut Notification, now: Timestamp, why: &str) {
    for step in item.steps.iter_mut().filter(|s| s.status == StepStatus::Pending) {
        step.status = StepStatus::Cancelled;
        step.done_at = Some(now);
        step.last_error = Some(why.into());
    }
    item.next_due = None;
    item.retain_until = Some(now + hub.retention());
}

/// The item of a message as the inbox's message page shows it.
pub async fn for_message(hub: &Hub, account: &AccountId, id: &MessageId) -> Result<Option<Notification>, HubError> {
    Ok(hub.notifications.get_notification(account, id).await?)
}

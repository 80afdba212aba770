//! `POST /v1/messages` (§8.1): authenticate, limit, validate, deduplicate, store, ack.

use chrono::{Duration, Timelike};
use ma2h_protocol::envelope::{Envelope, MessageType};
use ma2h_protocol::lifecycle::{self, Status};
use ma2h_protocol::rules;

use crate::messages::lifecycle::settle;

use crate::kernel::auth::Principal;
use crate::kernel::credentials::PrincipalId;
use crate::messages::records::{IdempotencyRecord, Inserted, Lookup, MessageRecord};
use crate::{Hub, HubError};

/// The 202 body (closed: exactly the submit-ack schema's fields).
pub use ma2h_protocol::wire::SubmitAck;

/// §8.1 submit: admit, parse, validate, claim the key and store the message in one write.
///
/// The paths most submits never take (sessions, addressed messages, replays, channel routes)
/// are awaited boxed: inline, each would add its whole state to this future, which every layer
/// above moves by copying.
pub async fn submit(hub: &Hub, principal: &Principal, body: &[u8]) -> Result<SubmitAck, HubError> {
    let PrincipalId::Agent(agent_id) = &principal.id else {
        return Err(HubError::NotAuthorized("only agent credentials submit messages".into()));
    };
    let parsed = parse(hub, body);
    // §8.6: every request counts against the per-agent budget, valid or not; a valid ask/task
    // is counted towards the inbox depth in the same store write.
    let depth = u64::from(hub.settings.inbox_depth);
    // Every ask/task is counted whenever a limit is on — also while the depth limit is off — so a
    // store's upper bound (docs/dynamodb.md) stays one if the limit is switched on later.
    let counting = depth > 0 || hub.settings.requests_per_minute > 0;
    let opens = counting && parsed.as_ref().is_ok_and(|e| e.kind() != MessageType::Notify && &e.agent.id == agent_id);
    let admission = admit(hub, principal, agent_id, opens).await?;

    let mut envelope = parsed?;
    if &envelope.agent.id != agent_id {
        return Err(HubError::AgentIdMismatch { envelope: envelope.agent.id.to_string() });
    }
    let now = hub.clock.now();
    rules::check_submit(&envelope, now, &hub.settings.limits)?;
    let sender = || crate::mailbox::model::Mailbox { account: principal.account.clone(), agent: agent_id.clone() };
    let sender_session = match &envelope.agent.session {
        // §4.1: own live session → renewed (§16.2); otherwise 422 / 410.
        Some(session) => Some(Box::pin(crate::sessions::lease::named_in_submit(hub, &sender(), session)).await?),
        None => None,
    };
    // §4: an addressed message goes to the destination's mailbox, validated now.
    let route = match &envelope.to {
        Some(to) => match Box::pin(crate::mailbox::addressed::route(hub, &sender(), sender_session.as_ref(), to)).await
        {
            Ok(route) => Some(route),
            // §8.1: a replay recovers the original outcome even when its destination has gone
            // since (a crashed sender retrying after the addressee's session ended).
            Err(e) => match &envelope.idempotency_key {
                Some(key) => match hub.messages.get_claim(&principal.account, agent_id, key, now).await? {
                    Some(claim) => return Box::pin(replay(hub, &claim, &envelope.idempotency_fingerprint())).await,
                    None => return Err(e),
                },
                None => return Err(e),
            },
        },
        None => None,
    };
    crate::push::deliver::validate_callback(hub, &principal.account, &envelope).await?;

    // §8.1: only a keyed submit has an identity to compare (taken before any normalization).
    let mut fingerprint = envelope.idempotency_key.is_some().then(|| envelope.idempotency_fingerprint());
    // §8.1 replays need no separate read: the insert below claims the key atomically and hands
    // back the existing claim. Only a submit that would be refused for inbox depth first checks
    // for a claim, because a replay is answered even when the inbox is full.
    if let Some(bound) = admission.filter(|_| opens && depth > 0).map(|a| a.open_before)
        && bound >= depth
    {
        // The store's count may be an upper bound (docs/dynamodb.md): at the limit, count exactly.
        let open = hub.messages.recount_open(&principal.account, agent_id, bound + 1).await?;
        if open >= depth {
            if let (Some(key), Some(fingerprint)) = (&envelope.idempotency_key, &fingerprint)
                && let Some(claim) = hub.messages.get_claim(&principal.account, agent_id, key, now).await?
            {
                return Box::pin(replay(hub, &claim, fingerprint)).await;
            }
            return Err(HubError::RateLimited {
                message: format!("inbox depth limit reached: {open} open asks/tasks for this agent"),
                retry_after_secs: 60,
            });
        }
    }

    envelope.synthesize_confirm_options();
    let id = hub.new_message_id();
    let status = lifecycle::initial_status(envelope.kind());
    // An addressed notify's lifecycle is its mailbox track (§5.1): stored as terminal-on-accept
    // (never open), read through the track.
    let state_text = envelope.raw.get("state").and_then(|s| ma2h_protocol::verbatim::lossy_state_text(body, s));
    let record = MessageRecord {
        id: id.clone(),
        account: principal.account.clone(),
        agent_id: agent_id.clone(),
        kind: envelope.kind(),
        status,
        priority: envelope.priority,
        title: envelope.title.clone(),
        // the accepted envelope moves into the record; the typed fields stay for what follows
        envelope: serde_json::Value::Object(std::mem::take(&mut envelope.raw)),
        state_text,
        created_at: now,
        expires_at: envelope.expires_at.filter(|_| envelope.kind() != MessageType::Notify),
        updated_at: now,
        response: None,
        resolution_id: None,
        // A delivered notify is terminal at once; asks/tasks are retained from resolution.
        retain_until: (status == Status::Delivered).then(|| now + hub.retention()),
        push: None,
        delivered_at: None,
        ack: None,
    };
    let claim = envelope.idempotency_key.as_ref().zip(fingerprint.take()).map(|(key, fingerprint)| IdempotencyRecord {
        account: principal.account.clone(),
        agent_id: agent_id.clone(),
        key: key.clone(),
        message_id: id.clone(),
        fingerprint,
        expires_at: now + Duration::hours(i64::from(hub.settings.idempotency_ttl_hours)),
    });
    let entry = route.as_ref().map(|r| crate::mailbox::addressed::entry(hub, r, &record, &envelope));
    let depth = hub.settings.mailbox.depth;
    // Issue 20: a routed ask/task's channel notifications, written before the message (module
    // docs of `crate::channels::outbox`: an item whose message never commits is retired).
    let announced = match entry.is_none() && record.kind != MessageType::Notify {
        true => crate::channels::schedule::schedule(hub, &principal.account, &id, &envelope).await,
        false => None,
    };
    // Issue 42: recorded in the insert's own write (an idempotent replay writes none).
    let event = crate::audit::Event::new("message.submitted", principal.actor())
        .target(&id)
        .digest_of(&record.envelope)
        .detail("type", record.kind.as_str());
    let insert = hub.messages.insert_message(&record, claim.as_ref(), entry.as_ref().map(|e| (e, depth)), now);
    let inserted = crate::audit::within(hub, &principal.account, vec![event], insert).await;
    // A replay: this id was never used, so its item is retired now. (After a store error the
    // message may still have committed: the worker decides once the orphan grace is over.)
    if let (Some(item), Ok(Inserted::Existing(_))) = (&announced, &inserted) {
        Box::pin(crate::channels::schedule::discard(hub, item.clone())).await;
    }
    match inserted? {
        Inserted::New => {
            if announced.is_some() {
                Box::pin(crate::channels::schedule::announce(hub, &principal.account, &id)).await;
            }
            tracing::info!(message_id = %id, agent_id = %agent_id, kind = envelope.kind().as_str(), "message accepted");
            crate::kernel::metrics::submitted(envelope.kind().as_str());
            if let Some(entry) = &entry {
                hub.changes.publish_mailbox(&entry.mailbox);
            }
            hub.changes.publish_account(&principal.account);
            let mut out = ack(hub, &record, entry.as_ref());
            out.destination = route.map(|r| r.destination);
            // Issue 40: a standing grant answers a keyed ask at once (the ack still says `open`,
            // §8.1: the first accept is open; the GET reads the answer).
            if record.kind == MessageType::Ask && entry.is_none() {
                Box::pin(crate::decisions::grants::auto_answer(hub, &record)).await;
            }
            Ok(out)
        }
        // The key is claimed: an earlier submit (or a concurrent one that won the race).
        Inserted::Existing(existing) => match &claim {
            Some(ours) => Box::pin(replay(hub, &existing, &ours.fingerprint)).await,
            // a store reports an existing claim only for a submit that made one
            None => Err(HubError::Internal(format!("store reported claim {} for an unkeyed submit", existing.key))),
        },
        // §8.6: the addressee's mailbox is full of other agents' mail (its directives unaffected).
        Inserted::MailboxFull => Err(HubError::RateLimited {
            message: "the destination's mailbox is full: it holds its limit of undelivered agent messages".into(),
            retry_after_secs: 60,
        }),
    }
}

/// §8.1 replay: same payload → the original ack with the current status; otherwise 409.
async fn replay(hub: &Hub, claim: &IdempotencyRecord, fingerprint: &str) -> Result<SubmitAck, HubError> {
    if claim.fingerprint != fingerprint {
        return Err(HubError::IdempotencyConflict { key: claim.key.clone() });
    }
    match hub.lookup(&claim.account, &claim.message_id).await? {
        Lookup::Found(rec) => {
            let rec = settle(hub, rec).await?;
            let outbound = crate::mailbox::undeliverable::outbound(hub, &rec).await?;
            let mut out = ack(hub, &rec, outbound.as_ref());
            if crate::mailbox::undeliverable::is_addressed(&rec) {
                // §8.1: every addressed ack carries the snapshot. A replay re-derives it for the
                // original destination, gated by the same visibility rule.
                out.destination = Some(crate::mailbox::addressed::replay_snapshot(hub, &rec).await?);
            }
            Ok(out)
        }
        Lookup::Gone { .. } => Err(HubError::Gone),
        Lookup::Missing => Err(HubError::Internal(format!("idempotency claim points at missing {}", claim.message_id))),
    }
}

fn ack(hub: &Hub, rec: &MessageRecord, outbound: Option<&crate::mailbox::model::MailboxEntry>) -> SubmitAck {
    SubmitAck {
        id: rec.id.to_string(),
        status: crate::mailbox::addressed::status(rec, outbound, hub.clock.now()),
        poll_url: hub.poll_url(&rec.id),
        review_url: Some(hub.review_url(&rec.id)),
        destination: None,
    }
}

/// The body's size check and parse, as one result (counted by [`admit`] whatever it is).
fn parse(hub: &Hub, body: &[u8]) -> Result<Envelope, HubError> {
    rules::check_envelope_size(body.len(), &hub.settings.limits)?;
    Ok(Envelope::parse(body)?)
}

/// §8.6 fixed one-minute window per agent, counted with an atomic store increment — together
/// with the inbox-depth count when `opens`. `None` when neither limit is set.
async fn admit(
    hub: &Hub,
    principal: &Principal,
    agent: &ma2h_protocol::ids::AgentId,
    opens: bool,
) -> Result<Option<crate::messages::store::Admission>, HubError> {
    let limit = hub.settings.requests_per_minute;
    if limit == 0 && !opens {
        return Ok(None);
    }
    let now = hub.clock.now();
    let minute = now.timestamp().div_euclid(60);
    let window_end = now + Duration::seconds(60 - i64::from(now.second()));
    let a = hub.messages.admit(&principal.account, agent, minute, window_end, opens, now).await?;
    if limit > 0 && a.requests > u64::from(limit) {
        return Err(HubError::RateLimited {
            message: format!("more than {limit} requests per minute for this agent"),
            retry_after_secs: u64::try_from((window_end - now).num_seconds().max(1)).unwrap_or(1),
        });
    }
    Ok(Some(a))
}

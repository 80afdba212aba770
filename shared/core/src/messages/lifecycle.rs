//! The one path every terminal transition takes: build the §6 Response, CAS it into the store,
//! wake long-polls. Lazy expiry (§7) is applied here on every read and transition.

use ma2h_protocol::envelope::{Envelope, MessageType};
use ma2h_protocol::ids::{AccountId, MessageId, SessionId};
use ma2h_protocol::lifecycle::{self, Status};
use ma2h_protocol::response::{Subject, Terminal};

use crate::mailbox::model::{Audience, EntryKind, Mailbox, MailboxEntry};
use crate::messages::records::{Completion, Lookup, MessageRecord, TerminalWrite};
use crate::{Hub, HubError};

/// Apply `terminal` iff the message is still open. Returns the store's verdict.
pub(crate) async fn apply_terminal(
    hub: &Hub,
    record: &MessageRecord,
    envelope: &Envelope,
    terminal: Terminal,
) -> Result<Completion, HubError> {
    let version = envelope.raw.get("ma2h_version").and_then(|v| v.as_str()).unwrap_or("0.5");
    let subject = Subject {
        version,
        id: &record.id,
        kind: record.kind,
        agent_id: record.agent_id.as_str(),
        run_id: &envelope.agent.run_id,
        state: envelope.state(),
    };
    let write = TerminalWrite {
        status: terminal.resolution.status(),
        response: terminal.response(subject),
        resolution_id: terminal.resolution_id.clone(),
        resolved_at: terminal.resolved_at,
        retain_until: terminal.resolved_at + hub.retention(),
        is_expiry: terminal.resolution == ma2h_protocol::lifecycle::Resolution::Expired,
        // §8.3: every terminal of a push-mode ask/task owes a push (any resolution, §10 parity).
        push: envelope.callback().is_some_and(|c| c.mode == ma2h_protocol::envelope::CallbackMode::Push),
        announced: false,
        seen: Some(Box::new(record.clone())),
        entry: None,
    };
    let entry = response_entry(hub, record, envelope, &write).await?.map(Box::new);
    // §3.1 on a durable queue: the job is queued before the terminal commits, so no committed
    // push obligation can lose its announcement (the consumer drops a job whose terminal lost
    // the CAS or never committed). Otherwise the job is enqueued after the commit, and a lost
    // one is found by the sweeper through the store's index of pending pushes.
    let announced = write.push
        && match hub.push_queue.announce(&record.account, &record.id, &write.resolution_id, hub.clock.now()).await {
            Ok(taken) => taken,
            Err(e) => {
                tracing::warn!(message_id = %record.id, error = %e, "push announcement failed; enqueued after the commit");
                false
            }
        };
    let write = TerminalWrite { entry, announced, ..write };
    let events = terminal_events(record, envelope, &terminal, &write);
    let complete = hub.messages.complete(&record.account, &record.id, &write);
    let outcome = match crate::audit::within(hub, &record.account, events, complete).await? {
        // Refused while still open: the resolve/cancel landed after `expires_at` (§7), so the
        // expiry wins and the caller sees it as the terminal that beat them.
        Completion::AlreadyTerminal(rec) if rec.status == Status::Open && !write.is_expiry => {
            return Ok(Completion::AlreadyTerminal(Box::pin(settle(hub, rec)).await?));
        }
        other => other,
    };
    if let Completion::Applied(rec) = &outcome {
        hub.changes.publish(&rec.id);
        hub.changes.publish_account(&rec.account);
        if let Some(entry) = &write.entry {
            hub.changes.publish_mailbox(&entry.mailbox);
        }
        if write.push
            && !write.announced
            && let Err(e) = hub.push_queue.enqueue(&rec.account, &rec.id).await
        {
            // Not lost: the obligation is committed; the worker / sweeper finds it when due.
            tracing::warn!(message_id = %rec.id, error = %e, "push enqueue failed; the sweeper will retry");
        }
        // Issue 20: the channels that announced it show the outcome (only where a route could
        // have written an item: the account's routes match this message).
        if crate::channels::schedule::routed(hub, &rec.account, envelope).await {
            crate::channels::schedule::wake(hub, &rec.account, &rec.id).await;
        }
        // time to answer: a person's or an agent's decision, not an expiry or a withdrawal
        let decided = !matches!(
            terminal.resolution,
            ma2h_protocol::lifecycle::Resolution::Expired | ma2h_protocol::lifecycle::Resolution::Cancelled
        );
        let waited = (terminal.resolved_at - record.created_at).num_milliseconds() as f64 / 1000.0;
        crate::kernel::metrics::resolved(record.kind.as_str(), terminal.resolution.as_str(), decided.then_some(waited));
        tracing::info!(
            message_id = %rec.id,
            agent_id = %rec.agent_id,
            resolution = terminal.resolution.as_str(),
            resolution_id = %terminal.resolution_id,
            actor = %terminal.actor,
            "message resolved"
        );
    }
    Ok(outcome)
}

/// Issue 42: the ledger's record of a terminal, written in the CAS's own write (a lost CAS
/// records nothing) — with the use of the standing grant that answered it, if one did. No digest
/// of a sensitive message's Response (§9.6).
fn terminal_events(
    record: &MessageRecord,
    envelope: &Envelope,
    terminal: &Terminal,
    write: &TerminalWrite,
) -> Vec<crate::audit::Event> {
    use ma2h_protocol::lifecycle::Resolution;
    let kind = match terminal.resolution {
        Resolution::Expired => "message.expired",
        Resolution::Cancelled => "message.cancelled",
        _ => "message.resolved",
    };
    let event = crate::audit::Event::new(kind, &terminal.actor)
        .target(&record.id)
        .detail("resolution", terminal.resolution.as_str())
        .detail("resolution_id", write.resolution_id.to_string());
    let event = if terminal.defaulted { event.detail("defaulted", true) } else { event };
    let event = match envelope.sensitive {
        true => event,
        false => event.digest_of(&write.response),
    };
    let used = terminal.ext.grant_id.as_ref().map(|grant| {
        crate::audit::Event::new("grant.used", &terminal.actor).target(grant).detail("message", record.id.to_string())
    });
    std::iter::once(event).chain(used).collect()
}

/// §6/§8.7.1: an ask/task submitted with a session that is still live at resolution owes that
/// session a `response` entry (ack key: the resolution id). A dead session gets none — the
/// Response stays pullable and pushable, and nothing bounces (§14.2).
async fn response_entry(
    hub: &Hub,
    record: &MessageRecord,
    envelope: &Envelope,
    write: &TerminalWrite,
) -> Result<Option<MailboxEntry>, HubError> {
    let Some(id) = envelope.agent.session.as_deref().and_then(SessionId::parse) else { return Ok(None) };
    if record.kind == MessageType::Notify {
        return Ok(None);
    }
    let live = match hub.sessions.get_session(&record.account, &id).await? {
        Some(s) => s.agent == record.agent_id && s.is_live(write.resolved_at),
        None => false,
    };
    if !live {
        return Ok(None);
    }
    let deadline = write.resolved_at + chrono::Duration::days(i64::from(hub.settings.mailbox.retention_days));
    Ok(Some(MailboxEntry::new(
        Mailbox { account: record.account.clone(), agent: record.agent_id.clone() },
        write.resolution_id.to_string(),
        EntryKind::Response,
        Audience::Session(id),
        write.response.clone(),
        "system:hub".into(),
        write.resolved_at,
        deadline,
    )))
}

/// §7 lazy expiry: an open message read strictly after `expires_at` is expired now (with its
/// default) before anyone sees it. An open addressed ask/task whose delivery track is already
/// undeliverable is auto-resolved here too, so the sender's pull is honest even if the sweep
/// that bounced it stopped before resolving. Returns the record as it stands afterwards.
pub(crate) async fn settle(hub: &Hub, record: MessageRecord) -> Result<MessageRecord, HubError> {
    let now = hub.clock.now();
    if record.status != Status::Open {
        return Ok(record);
    }
    let undeliverable = match crate::mailbox::undeliverable::outbound(hub, &record).await? {
        Some(entry) => crate::mailbox::undeliverable::undeliverable_terminal(&record, &entry, hub),
        None => None,
    };
    let terminal = match undeliverable {
        // Expiry wins once `expires_at` has passed (§7: first terminal wins, judged now).
        Some(t) if !lifecycle::is_overdue(record.expires_at, t.resolved_at) => t,
        _ if !lifecycle::is_overdue(record.expires_at, now) => return Ok(record),
        _ => Terminal::expiry(record.envelope()?.request(), now, hub.new_resolution_id()),
    };
    let envelope = record.envelope()?;
    match apply_terminal(hub, &record, &envelope, terminal).await? {
        Completion::Applied(rec) | Completion::AlreadyTerminal(rec) => Ok(rec),
        Completion::Missing => Err(HubError::NotFound),
    }
}

/// Load a message for its submitting agent: anything else — another account, another agent,
/// a malformed id — is the unknown-id 404 (§9.1 id-enumeration guard).
pub(crate) async fn load_owned(
    hub: &Hub,
    account: &AccountId,
    agent: &ma2h_protocol::ids::AgentId,
    id: &str,
) -> Result<MessageRecord, HubError> {
    let id = MessageId::parse(id).ok_or(HubError::NotFound)?;
    match hub.lookup(account, &id).await? {
        Lookup::Found(rec) if &rec.agent_id == agent => settle(hub, rec).await,
        Lookup::Gone { agent_id } if &agent_id == agent => Err(HubError::Gone),
        _ => Err(HubError::NotFound),
    }
}

/// The 409 `already_terminal` for a record that is no longer open.
pub(crate) fn already_terminal(record: &MessageRecord) -> HubError {
    HubError::AlreadyTerminal { id: record.id.clone(), status: record.status, resolution: record.status.resolution() }
}

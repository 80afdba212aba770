//! Mail nobody can drain (§14.2, §8.7.1): an addressed message's outbound entry and its repair,
//! the bounce of an ended session's entries, and what follows an entry that went undeliverable —
//! its ask/task auto-resolved (§7) and a `receipt` to the sender's live session.
//!
//! Message settlement ([`crate::messages::lifecycle::settle`]) reads an outbound entry here, and an
//! undeliverable entry settles its message there: the two files call each other, nothing else
//! joins that loop.

use ma2h_protocol::envelope::MessageType;
use ma2h_protocol::ids::{MessageId, SessionId};
use ma2h_protocol::response::Terminal;
use ma2h_protocol::time;

use crate::mailbox::model::{Audience, EntryKind, Mailbox, MailboxEntry, Track};
use crate::messages::lifecycle::settle;
use crate::messages::records::{Lookup, MessageRecord};
use crate::sessions::model::{EndKind, SessionRecord};
use crate::{Hub, HubError};
use ma2h_protocol::inter_agent::bounce_receipt;
use ma2h_protocol::time::Timestamp;

/// Is this an addressed message (its accepted envelope carries `to`)?
pub(crate) fn is_addressed(record: &MessageRecord) -> bool {
    record.envelope.get("to").is_some()
}

/// The outbound `message` entry of an addressed message (until it is purged).
///
/// §14.2 repair: an entry still open for a session that has ended was written after — or, on a
/// lagging index, missed by — that session's bounce. It is bounced now (the session's bounce is
/// idempotent), so the sender never reads "queued" for mail nobody can ever drain.
pub(crate) async fn outbound(hub: &Hub, record: &MessageRecord) -> Result<Option<MailboxEntry>, HubError> {
    if !is_addressed(record) {
        return Ok(None);
    }
    let read = || async {
        Ok::<_, HubError>(
            hub.mailbox.get_entry(&record.account, record.id.as_str()).await?.filter(|e| e.kind == EntryKind::Message),
        )
    };
    let entry = read().await?;
    if let Some(e) = &entry
        && e.closed.is_none()
        && let Some(sid) = e.audience.session()
        && let Some(s) = hub.sessions.get_session(&e.mailbox.account, sid).await?
        && s.agent == e.mailbox.agent
        && s.end.is_some()
    {
        Box::pin(crate::mailbox::undeliverable::bounce(hub, &s)).await?;
        return read().await;
    }
    Ok(entry)
}

/// §7: an addressed ask/task whose delivery track reached `bounced` or `expired` auto-resolves
/// `cancelled`/`dismissed` by `system:undeliverable` (a no-op when anything else won first).
pub(crate) fn undeliverable_terminal(record: &MessageRecord, entry: &MailboxEntry, hub: &Hub) -> Option<Terminal> {
    if !record.status.is_open() || record.kind == MessageType::Notify {
        return None;
    }
    // Resolved now (the Hub clock at the transition, so `?since=` cursors see it); if the ask's
    // own `expires_at` has passed by then, the §7 expiry wins instead.
    let now = hub.clock.now();
    if !matches!(entry.track(now), Track::Bounced { .. } | Track::Expired) {
        return None;
    }
    let actor = ma2h_protocol::ids::Actor::System(UNDELIVERABLE.to_owned());
    Some(Terminal::undeliverable(record.kind, actor, now, hub.new_resolution_id()))
}

/// The address of the live session an addressed message's sender submitted with, if any.
pub(crate) fn sender_session(record: &MessageRecord) -> Option<SessionId> {
    record.envelope.get("agent")?.get("session")?.as_str().and_then(SessionId::parse)
}

/// §14.2: bounce every open entry addressed to the ended session, then clear its outbox flag.
pub(crate) async fn bounce(hub: &Hub, session: &SessionRecord) -> Result<usize, HubError> {
    const BATCH: usize = 500;
    let Some(end) = session.end else { return Ok(0) };
    let retain_until = crate::mailbox::undeliverable::retain_after(hub, hub.clock.now());
    let mailbox = session.mailbox();
    let mut total = 0;
    loop {
        let bounced = hub.mailbox.bounce_entries(&mailbox, &session.id, end.at, retain_until, BATCH).await?;
        if bounced.is_empty() {
            break;
        }
        total += bounced.len();
        // §7/§8.7.1: undeliverable asks resolve and senders' live sessions get a receipt.
        crate::mailbox::undeliverable::after_closed(hub, &bounced).await;
    }
    let done = hub.sessions.bounce_done(&session.account, &session.id);
    match end.kind {
        // Issue 42: a lapsed lease (§16.3) is made durable by a bulk sweep write; its ledger entry
        // rides the write that completes that session's outbox — which changes the flag once, so
        // two sweepers racing here record it once.
        EndKind::Expired => {
            let event = crate::audit::Event::new("session.expired", LEASE_ACTOR)
                .target(&session.id)
                .detail("agent", session.agent.to_string())
                .detail("lapsed_at", time::format(end.at));
            crate::audit::within(hub, &session.account, vec![event], done).await?;
        }
        _ => done.await?,
    }
    Ok(total)
}

/// Who the ledger names for a session's lease lapsing: nobody acted; the Hub's clock did.
pub(crate) const LEASE_ACTOR: &str = "system:lease";

/// After entries closed (a session's bounce, or the sweep's deadline), for each addressed
/// `message` entry that went undeliverable: auto-resolve its ask/task (§7) and, on a bounce, tell
/// the sender's live session with a `receipt` (§8.7.1; expiry emits none, §14.2). Best-effort
/// per entry: a failure is logged, and the sender's pull repairs the resolution (lazy settle).
pub(crate) async fn after_closed(hub: &Hub, entries: &[MailboxEntry]) -> usize {
    let mut receipts = 0;
    for entry in entries.iter().filter(|e| e.kind == EntryKind::Message) {
        match honour(hub, entry).await {
            Ok(sent) => receipts += usize::from(sent),
            Err(e) => tracing::warn!(message_id = %entry.key, error = %e, "undeliverable follow-up deferred"),
        }
    }
    receipts
}

async fn honour(hub: &Hub, entry: &MailboxEntry) -> Result<bool, HubError> {
    let now = hub.clock.now();
    let track = entry.track(now);
    if !matches!(track, Track::Bounced { .. } | Track::Expired) {
        return Ok(false);
    }
    let Some(id) = MessageId::parse(&entry.key) else { return Ok(false) };
    let Lookup::Found(record) = hub.lookup(&entry.mailbox.account, &id).await? else { return Ok(false) };
    let record = settle(hub, record).await?;
    let (Track::Bounced { at, .. }, Some(sender_sess)) =
        (&track, crate::mailbox::undeliverable::sender_session(&record))
    else {
        return Ok(false);
    };
    // §8.7.1: receipts go only to a live session of the sender.
    let live = hub
        .sessions
        .get_session(&record.account, &sender_sess)
        .await?
        .is_some_and(|s| s.agent == record.agent_id && s.is_live(now));
    // The terminal destination session: the addressed one, or the orphan's last claimant.
    let dest_session = entry.audience.session().or(entry.claimant.as_ref());
    let (true, Some(dest_session)) = (live, dest_session) else { return Ok(false) };
    let receipt_id = hub.new_receipt_id();
    let to = ma2h_protocol::entries::session_address(record.agent_id.as_str(), sender_sess.as_str());
    let prior = track.prior().unwrap_or(ma2h_protocol::wire::TrackState::Queued);
    let payload =
        bounce_receipt(receipt_id.as_str(), entry.key.as_str(), prior, &time::format(*at), dest_session.as_str(), &to);
    let retention = chrono::Duration::days(i64::from(hub.settings.mailbox.retention_days));
    let receipt = MailboxEntry::new(
        Mailbox { account: record.account.clone(), agent: record.agent_id.clone() },
        receipt_id.to_string(),
        EntryKind::Receipt,
        Audience::Session(sender_sess.clone()),
        payload,
        "system:hub".into(),
        now,
        now + retention,
    );
    // Best-effort (§8.7.1): a full mailbox drops the receipt; the pull stays authoritative.
    let queued = hub.mailbox.enqueue(&receipt, hub.settings.mailbox.depth).await?;
    if queued == crate::mailbox::model::Enqueued::New {
        hub.changes.publish_mailbox(&receipt.mailbox);
    }
    Ok(queued == crate::mailbox::model::Enqueued::New)
}

/// Closed entries stay readable to operators this long (the inbound retention).
pub fn retain_after(hub: &Hub, now: Timestamp) -> Timestamp {
    now + chrono::Duration::days(i64::from(hub.settings.mailbox.retention_days))
}

/// The actor attested on an undeliverable auto-resolution (§7).
pub const UNDELIVERABLE: &str = "undeliverable";

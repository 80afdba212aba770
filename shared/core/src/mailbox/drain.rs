//! §8.7 the agent side of the mailbox: drain (with long-poll) and consume/ack.
//!
//! The credential selects the mailbox — no parameter can name another agent's. A drained entry
//! is hidden for the visibility window, then redelivered (at-least-once); every delivery is signed
//! afresh (§9.7: new `t` and `jti`, same bound members).

use std::time::Duration;

use ma2h_protocol::entries::ResponseEntryContext;
use ma2h_protocol::ids::{DirectiveId, MessageId, ReceiptId, ResolutionId};
use ma2h_protocol::inbound::InboundContext;
use ma2h_protocol::inter_agent::{MessageEntryContext, ReceiptEntryContext};
use ma2h_protocol::signature::{self, SigningKey};
use ma2h_protocol::time::Timestamp;
use serde_json::Value;

use crate::kernel::auth::Principal;
use crate::kernel::credentials::PrincipalId;
use crate::mailbox::model::{AckRecord, Audience, Claimer, EntryKind, Mailbox, MailboxEntry};
use crate::mailbox::undeliverable::retain_after;
use crate::sessions::model::SessionRecord;
use crate::{Hub, HubError};

/// Most ids one ack may carry.
pub const MAX_ACK_IDS: usize = 100;
/// Longest ack note, in characters.
pub const MAX_NOTE_CHARS: usize = 2000;

/// One delivered entry: `{"<kind>": payload, "signature": "MA2H-Signature: t=…,jti=…,v1=…"}`.
pub use ma2h_protocol::wire::MailboxItem as Delivery;

/// The agent's own mailbox, or 403 for an operator credential.
pub fn own_mailbox(principal: &Principal) -> Result<Mailbox, HubError> {
    match &principal.id {
        PrincipalId::Agent(agent) => Ok(Mailbox { account: principal.account.clone(), agent: agent.clone() }),
        PrincipalId::Operator(_) => Err(HubError::NotAuthorized("only an agent credential has a mailbox".into())),
    }
}

/// Drain up to `max` entries (clamped to `max_batch`), long-polling up to `wait` (clamped to the
/// §8.2 maximum) for the first one. An empty list on timeout is the normal answer.
///
/// With `session` (§8.7.1) the caller's own live session is renewed and its session-addressed
/// entries join the principal's; without one the drain sees exactly the v0.4 shape.
pub async fn drain(
    hub: &Hub,
    principal: &Principal,
    session: Option<&str>,
    max: Option<u32>,
    wait: Duration,
) -> Result<Vec<Delivery>, HubError> {
    let mailbox = own_mailbox(principal)?;
    let session = match session {
        Some(raw) => Some(crate::sessions::lease::present(hub, principal, raw).await?),
        None => None,
    };
    let settings = &hub.settings.mailbox;
    let max = max.unwrap_or(settings.max_batch).min(settings.max_batch) as usize;
    let wait = wait.min(Duration::from_secs(u64::from(hub.settings.long_poll_max_seconds)));
    if session.is_none() {
        // A drain presenting a session renewed it, and the renewal stamped the session's
        // `last_seen`, which presence reads too (`presence::read`): no second write (issue 38).
        crate::mailbox::presence::seen(hub, &mailbox).await;
    }
    let give_up = tokio::time::Instant::now() + wait;
    loop {
        // Subscribe before claiming: an enqueue between the claim and the wait still wakes us.
        let subscription = hub.changes.subscribe_mailbox(&mailbox);
        let now = hub.clock.now();
        let (entries, next_visible_at) = claim_signed(hub, &mailbox, session.as_ref(), max, true).await?;
        if !entries.is_empty() {
            return Ok(entries);
        }
        let left = give_up.saturating_duration_since(tokio::time::Instant::now());
        if left.is_zero() || hub.changes.closing() {
            return Ok(Vec::new());
        }
        // A lapsing visibility window makes an entry claimable without any announcement.
        let until_visible =
            next_visible_at.and_then(|t| (t - now).to_std().ok()).map_or(left, |d| d.max(Duration::from_millis(1)));
        subscription.wait(left.min(until_visible)).await;
    }
}

/// One claim for `session`'s drain (or stream), signed for this delivery. `evidence`: a drain
/// (client-requested) stamps `delivered` tracks; a stream push does not (§8.7.2). Returns the
/// deliveries and when the next hidden entry becomes visible.
pub(crate) async fn claim_signed(
    hub: &Hub,
    mailbox: &Mailbox,
    session: Option<&SessionRecord>,
    max: usize,
    evidence: bool,
) -> Result<(Vec<Delivery>, Option<Timestamp>), HubError> {
    let now = hub.clock.now();
    let window =
        chrono::Duration::from_std(hub.settings.mailbox.visibility_timeout).unwrap_or(chrono::Duration::seconds(60));
    let audiences = Audience::for_drain(session.map(|s| &s.id));
    let by = Claimer { session: session.map(|s| s.id.clone()), evidence };
    // Issue 36: one drain holds at most `drain_max_bytes` of entries, so a reader that never
    // reads cannot make one response pin more. An entry is at most `max_envelope_bytes` (plus the
    // Hub's members and its signature): each claim asks for only as many as surely fit in what is
    // left, and claiming stops when a claim comes back short. What is not claimed stays queued,
    // untouched, for the next drain (no delivery is counted or stamped for it).
    let per_entry = hub.settings.limits.max_envelope_bytes + ENTRY_HEADROOM;
    let mut left = hub.settings.mailbox.drain_max_bytes;
    let mut entries = Vec::new();
    let mut next_visible_at = None;
    loop {
        let room = (left / per_entry).max(usize::from(entries.is_empty()));
        let ask = (max - entries.len()).min(room);
        if ask == 0 {
            break;
        }
        let claim = hub.mailbox.claim(mailbox, &audiences, &by, now, now + window, ask).await?;
        next_visible_at = claim.next_visible_at;
        let full = claim.entries.len() == ask;
        // sizes matter only if another claim may follow (most drains end at their first)
        if full {
            left = left.saturating_sub(claim.entries.iter().map(entry_bytes).sum());
        }
        entries.extend(claim.entries);
        if !full {
            break;
        }
    }
    if entries.is_empty() {
        return Ok((Vec::new(), next_visible_at));
    }
    if evidence {
        stamp_responses(hub, mailbox, &entries, now).await;
    }
    Ok((sign_all(hub, mailbox, session, entries).await?, next_visible_at))
}

/// Room for what a delivery adds to an entry's own bytes: the Hub's members, the §9.7 signature.
const ENTRY_HEADROOM: usize = 16 << 10;

/// An entry's size as delivered (its payload's JSON, plus the headroom).
fn entry_bytes(entry: &MailboxEntry) -> usize {
    serde_json::to_vec(&entry.payload).map_or(0, |v| v.len()) + ENTRY_HEADROOM
}

/// §14.2: a drain response is client-originated delivery evidence, so each drained `response`
/// entry stamps its message `delivered-to-agent` (a failed stamp is logged; the next read
/// stamps it).
async fn stamp_responses(hub: &Hub, mailbox: &Mailbox, entries: &[MailboxEntry], now: Timestamp) {
    for entry in entries.iter().filter(|e| e.kind == EntryKind::Response) {
        let Some(id) = entry.payload.get("in_reply_to").and_then(Value::as_str).and_then(MessageId::parse) else {
            continue;
        };
        if let Err(e) = hub.messages.mark_delivered(&mailbox.account, &id, now).await {
            tracing::warn!(message_id = %id, error = %e, "delivered-to-agent stamp failed");
        }
    }
}

/// Sign each claimed entry for this delivery (§9.7, §9.8), with the agent's configured key.
async fn sign_all(
    hub: &Hub,
    mailbox: &Mailbox,
    session: Option<&SessionRecord>,
    entries: Vec<MailboxEntry>,
) -> Result<Vec<Delivery>, HubError> {
    let key = signing_key(hub, mailbox).await?;
    let t = hub.clock.now().timestamp().to_string();
    entries
        .into_iter()
        .map(|entry| {
            let jti = hub.new_jti();
            let lacks = |m: &str| HubError::Internal(format!("stored entry {} lacks `{m}`", entry.key));
            let canonical = match (entry.kind, session) {
                (EntryKind::Response, Some(s)) => {
                    ResponseEntryContext::for_response(&entry.payload, &s.address(), &jti, &t)
                        .map_err(lacks)?
                        .to_canonical()
                }
                // §9.8: a message binds its own `from`/`id`/`to`; a receipt the drain's session.
                (EntryKind::Message, Some(_)) => {
                    MessageEntryContext::for_entry(&entry.payload, &jti, &t).map_err(lacks)?.to_canonical()
                }
                (EntryKind::Receipt, Some(s)) => {
                    ReceiptEntryContext::for_receipt(&entry.payload, &s.address(), &jti, &t)
                        .map_err(lacks)?
                        .to_canonical()
                }
                (EntryKind::Directive, _) => {
                    InboundContext::for_directive(&entry.payload, &jti, &t).map_err(lacks)?.to_canonical()
                }
                (kind, _) => {
                    return Err(HubError::Internal(format!(
                        "entry {} of kind {} is not drainable here",
                        entry.key,
                        kind.as_str()
                    )));
                }
            };
            let v1 = signature::sign_canonical(&canonical, &key);
            Ok(Delivery { kind: entry.kind, payload: entry.payload, signature: signature::header_line(&t, &jti, &v1) })
        })
        .collect()
}

async fn signing_key(hub: &Hub, mailbox: &Mailbox) -> Result<SigningKey, HubError> {
    crate::push::deliver::agent_signing_key(hub, &mailbox.account, &mailbox.agent)
        .await
        .map_err(|reason| HubError::Internal(format!("cannot sign for agent {}: {reason}", mailbox.agent)))
}

/// Consume entries (§8.7, §14.3): returns how many this call acknowledged. Ids that are unknown,
/// another mailbox's, never delivered, already acked or expired change nothing and are not
/// counted — identically, so an ack reveals nothing about other mailboxes. A presented session
/// is renewed (lease attribution only, §8.7); it never widens what the credential may ack.
pub async fn ack(
    hub: &Hub,
    principal: &Principal,
    session: Option<&str>,
    ids: &[String],
    note: Option<String>,
) -> Result<usize, HubError> {
    let mailbox = own_mailbox(principal)?;
    if let Some(raw) = session {
        crate::sessions::lease::present(hub, principal, raw).await?;
    }
    // §8.7.1 ack keys: a directive's `dir_` id, a message entry's `msg_` id, a response entry's
    // `res_` resolution id, a receipt's `rcpt_` id.
    let mut keys: Vec<String> = ids
        .iter()
        .filter(|id| {
            DirectiveId::parse(id).is_some()
                || MessageId::parse(id).is_some()
                || ResolutionId::parse(id).is_some()
                || ReceiptId::parse(id).is_some()
        })
        .cloned()
        .collect();
    keys.sort();
    keys.dedup();
    if keys.is_empty() {
        return Ok(0);
    }
    let now = hub.clock.now();
    let by = format!("agent:{}", mailbox.agent);
    let ack = AckRecord { by, acked_at: now, note };
    let retain_until = retain_after(hub, now);
    // Issue 42: a directive's ack is recorded in the write that acks it — one write per
    // directive (rare: operators send them), so an entry exists iff that directive was acked.
    let (directives, others): (Vec<String>, Vec<String>) =
        keys.into_iter().partition(|k| DirectiveId::parse(k).is_some());
    let mut acked = match others.is_empty() {
        true => Vec::new(),
        false => hub.mailbox.ack_entries(&mailbox, &others, &ack, retain_until).await?,
    };
    for key in directives {
        let event = crate::audit::Event::new("directive.acked", &ack.by).target(&key);
        let one = hub.mailbox.ack_entries(&mailbox, std::slice::from_ref(&key), &ack, retain_until);
        acked.extend(crate::audit::within(hub, &mailbox.account, vec![event], one).await?);
    }
    // §8.7.1: acking a response entry is a note-less response ack; first ack wins on both paths.
    let response_ack = AckRecord { note: None, ..ack };
    for entry in acked.iter().filter(|e| e.kind == EntryKind::Response) {
        if let Some(id) = entry.payload.get("in_reply_to").and_then(Value::as_str).and_then(MessageId::parse) {
            // A stream-pushed entry was never stamped (§8.7.2); its ack is the evidence. The
            // entry is consumed already: a failure here is logged, and the agent's own
            // `POST /v1/messages/{id}/ack` (or a repeated read + ack) still completes the track.
            let followed = async {
                if entry.delivered_at.is_none() {
                    hub.messages.mark_delivered(&mailbox.account, &id, now).await?;
                }
                hub.messages.ack_response(&mailbox.account, &id, &response_ack).await
            };
            if let Err(e) = followed.await {
                tracing::warn!(message_id = %id, error = %e, "response-entry ack: the Response's ack was not recorded");
            }
        }
    }
    Ok(acked.len())
}

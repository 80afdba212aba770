//! §8.7 the agent side of the mailbox: drain (with long-poll) and consume/ack.
//!
//! The credential selects the mailbox — no parameter can name another agent's. A drained entry
//! is hidden for the visibility window, then redelivered (at-least-once); every delivery is signed
//! afresh (§9.7: new `t` and `jti`, same bound members).

use std::time::Duration;

use ma2h_protocol::ids::DirectiveId;
use ma2h_protocol::inbound::InboundContext;
use ma2h_protocol::signature::{self, SigningKey};
use ma2h_protocol::time::Timestamp;
use serde_json::Value;

use crate::auth::Principal;
use crate::mailbox::{AckRecord, EntryKind, Mailbox, MailboxEntry};
use crate::records::PrincipalId;
use crate::{Hub, HubError};

/// Most ids one ack may carry.
pub const MAX_ACK_IDS: usize = 100;
/// Longest ack note, in characters.
pub const MAX_NOTE_CHARS: usize = 2000;

/// One delivered entry: `{"<kind>": payload, "signature": "MA2H-Signature: t=…,jti=…,v1=…"}`.
#[derive(Debug, Clone, PartialEq)]
pub struct Delivery {
    pub kind: EntryKind,
    pub payload: Value,
    pub signature: String,
}

/// The agent's own mailbox, or 403 for an operator credential.
pub fn own_mailbox(principal: &Principal) -> Result<Mailbox, HubError> {
    match &principal.id {
        PrincipalId::Agent(agent) => Ok(Mailbox { account: principal.account.clone(), agent: agent.clone() }),
        PrincipalId::Operator(_) => Err(HubError::NotAuthorized("only an agent credential has a mailbox".into())),
    }
}

/// Drain up to `max` entries (clamped to `max_batch`), long-polling up to `wait` (clamped to the
/// §8.2 maximum) for the first one. An empty list on timeout is the normal answer.
pub async fn drain(
    hub: &Hub,
    principal: &Principal,
    max: Option<u32>,
    wait: Duration,
) -> Result<Vec<Delivery>, HubError> {
    let mailbox = own_mailbox(principal)?;
    let settings = &hub.settings.mailbox;
    let max = max.unwrap_or(settings.max_batch).min(settings.max_batch) as usize;
    let wait = wait.min(Duration::from_secs(u64::from(hub.settings.long_poll_max_seconds)));
    crate::presence::seen(hub, &mailbox).await;
    let give_up = tokio::time::Instant::now() + wait;
    loop {
        // Subscribe before claiming: an enqueue between the claim and the wait still wakes us.
        let subscription = hub.changes.subscribe_mailbox(&mailbox);
        let now = hub.clock.now();
        let window = chrono::Duration::from_std(settings.visibility_timeout).unwrap_or(chrono::Duration::seconds(60));
        let claim = hub.mailbox.claim(&mailbox, now, now + window, max).await?;
        if !claim.entries.is_empty() {
            return sign_all(hub, &mailbox, claim.entries).await;
        }
        let left = give_up.saturating_duration_since(tokio::time::Instant::now());
        if left.is_zero() || hub.changes.closing() {
            return Ok(Vec::new());
        }
        // A lapsing visibility window makes an entry claimable without any announcement.
        let until_visible = claim
            .next_visible_at
            .and_then(|t| (t - now).to_std().ok())
            .map_or(left, |d| d.max(Duration::from_millis(1)));
        subscription.wait(left.min(until_visible)).await;
    }
}

/// Sign each claimed entry for this delivery (§9.7), with the agent's configured key.
async fn sign_all(hub: &Hub, mailbox: &Mailbox, entries: Vec<MailboxEntry>) -> Result<Vec<Delivery>, HubError> {
    let key = signing_key(hub, mailbox).await?;
    let t = hub.clock.now().timestamp().to_string();
    entries
        .into_iter()
        .map(|entry| {
            let jti = hub.new_jti();
            let ctx = InboundContext::for_directive(&entry.payload, &jti, &t)
                .map_err(|m| HubError::Internal(format!("stored entry {} lacks `{m}`", entry.key)))?;
            let v1 = signature::sign_canonical(&ctx.to_canonical(), &key);
            Ok(Delivery { kind: entry.kind, payload: entry.payload, signature: signature::header_line(&t, &jti, &v1) })
        })
        .collect()
}

async fn signing_key(hub: &Hub, mailbox: &Mailbox) -> Result<SigningKey, HubError> {
    crate::push::agent_signing_key(hub, &mailbox.account, &mailbox.agent)
        .await
        .map_err(|reason| HubError::Internal(format!("cannot sign for agent {}: {reason}", mailbox.agent)))
}

/// Consume entries (§8.7, §14.3): returns how many this call acknowledged. Ids that are unknown,
/// another mailbox's, never delivered, already acked or expired change nothing and are not
/// counted — identically, so an ack reveals nothing about other mailboxes.
pub async fn ack(hub: &Hub, principal: &Principal, ids: &[String], note: Option<String>) -> Result<usize, HubError> {
    let mailbox = own_mailbox(principal)?;
    let mut keys: Vec<String> = ids.iter().filter(|id| DirectiveId::parse(id).is_some()).cloned().collect();
    keys.sort();
    keys.dedup();
    if keys.is_empty() {
        return Ok(0);
    }
    let now = hub.clock.now();
    let by = format!("agent:{}", mailbox.agent);
    let ack = AckRecord { by, acked_at: now, note };
    let retain_until = retain_after(hub, now);
    let acked = hub.mailbox.ack_entries(&mailbox, &keys, &ack, retain_until).await?;
    Ok(acked.len())
}

/// Closed entries stay readable to operators this long (the inbound retention).
pub fn retain_after(hub: &Hub, now: Timestamp) -> Timestamp {
    now + chrono::Duration::days(i64::from(hub.settings.mailbox.retention_days))
}

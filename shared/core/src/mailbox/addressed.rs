//! The v0.5 inter-agent leg (§4 `to`, §8.1, §8.7.1, §14.2, §7): routing an addressed submit, the
//! sender's view of its outbound mailbox track, and the undeliverable auto-resolution.
//!
//! An addressed message is one [`MessageRecord`] (owned by the sender, resolved through the same
//! §7 CAS as every message) plus one `message` entry in the destination mailbox, keyed by the
//! message id and written in the same atomic insert. The entry IS the §14.2 delivery track:
//! `delivered_at` (first drain), its ack, a bounce with `prior`, or expiry.

use ma2h_protocol::entries::session_address;
use ma2h_protocol::envelope::{Envelope, MessageType};
use ma2h_protocol::ids::{AgentId, SessionId};
use ma2h_protocol::inter_agent::{Destination, delivered_message};
use ma2h_protocol::lifecycle::Status;
use ma2h_protocol::time::Timestamp;
use ma2h_protocol::wire::{MailboxTrack, Reach, Reachability};
use serde_json::Value;

use crate::mailbox::directives::unknown_destination;
use crate::mailbox::model::{Audience, EntryKind, Mailbox, MailboxEntry, Track};
use crate::mailbox::undeliverable::is_addressed;
use crate::messages::records::MessageRecord;
use crate::sessions::model::SessionRecord;
use crate::{Hub, HubError};

/// Where an accepted addressed message goes, and what the sender is told at send time.
#[derive(Debug, Clone)]
pub(crate) struct Route {
    pub mailbox: Mailbox,
    pub audience: Audience,
    /// The Hub-attested `from` (§8.7.1).
    pub from: String,
    /// The §8.1 reachability snapshot.
    pub destination: Reachability,
}

/// §4 submit-time validation of `to` within the sender's account. Unknown agent, another
/// account's agent, an allowlist refusal and — for a sender without session visibility — a
/// terminal session all give the one identical 422 (no oracle); the sender's own terminal
/// session gives 410 `destination_gone`.
pub(crate) async fn route(
    hub: &Hub,
    sender: &Mailbox,
    sender_session: Option<&SessionRecord>,
    to: &str,
) -> Result<Route, HubError> {
    let policy = hub.credentials.get_account_policy(&sender.account).await?.unwrap_or_default();
    if !(hub.settings.inter_agent.enabled && policy.inter_agent) {
        // §8.0: the leg is account-opt-in; this is the sender's own account, so no oracle.
        return Err(HubError::UnknownDestination(
            "`/to`: the inter-agent leg is not enabled for this account (an operator enables it)".into(),
        ));
    }
    check_rate(hub, sender).await?;
    let dest = Destination::parse(to).ok_or_else(unknown_destination)?;
    if !policy.allows(&sender.agent, &dest.agent) {
        return Err(unknown_destination());
    }
    // "Known" = the agent has a signing secret in this account (every agent credential creates it).
    let secret =
        hub.credentials.get_secret(&sender.account, &dest.agent, crate::kernel::secrets::SIGNING_SECRET_NAME).await?;
    if secret.is_none() {
        return Err(unknown_destination());
    }
    let mailbox = Mailbox { account: sender.account.clone(), agent: dest.agent.clone() };
    // §16.4: with `agent_list_visibility: false`, an agent sees only its own sessions.
    let visible = sender.agent == dest.agent;
    let now = hub.clock.now();
    let (audience, session) = match &dest.session {
        None => (Audience::Sessions, None),
        Some(raw) => {
            let id = SessionId::parse(raw).ok_or_else(unknown_destination)?;
            match hub.sessions.get_session(&mailbox.account, &id).await? {
                Some(s) if s.agent == mailbox.agent && s.is_live(now) => (Audience::Session(id), Some(s)),
                Some(s) if s.agent == mailbox.agent && visible => {
                    return Err(HubError::DestinationGone("`/to`: that session has ended".into()));
                }
                _ => return Err(unknown_destination()),
            }
        }
    };
    let destination =
        if visible { reachability(hub, &mailbox, session.as_ref(), now).await? } else { Reachability::unknown() };
    let from = match sender_session {
        Some(s) => session_address(sender.agent.as_str(), s.id.as_str()),
        None => format!("agent:{}", sender.agent),
    };
    Ok(Route { mailbox, audience, from, destination })
}

/// §15.1 session-bearing reachability: the addressed session's `last_seen`, or the freshest of
/// the principal's live sessions. A destination never seen by a session reads `unknown`.
async fn reachability(
    hub: &Hub,
    mailbox: &Mailbox,
    session: Option<&SessionRecord>,
    now: Timestamp,
) -> Result<Reachability, HubError> {
    let last_seen = match session {
        // An ended session is nobody's address any more: `offline` since it was last seen.
        Some(s) if !s.is_live(now) => {
            return Ok(s
                .last_seen
                .map_or_else(Reachability::unknown, |t| Reachability { state: Reach::Offline, last_seen: Some(t) }));
        }
        Some(s) => s.last_seen,
        None => hub
            .sessions
            .list_sessions(&mailbox.account, Some(&mailbox.agent), 64)
            .await?
            .iter()
            .filter(|s| s.is_live(now))
            .filter_map(|s| s.last_seen)
            .max(),
    };
    let Some(seen) = last_seen else { return Ok(Reachability::unknown()) };
    let fresh = chrono::Duration::from_std(hub.settings.mailbox.presence_freshness).unwrap_or_default();
    let state = if now - seen <= fresh { Reach::Online } else { Reach::Offline };
    Ok(Reachability { state, last_seen: Some(seen) })
}

/// §8.6 per-sender budget for addressed submits (`rate_limit.inter_agent_requests_per_minute`).
async fn check_rate(hub: &Hub, sender: &Mailbox) -> Result<(), HubError> {
    let limit = hub.settings.inter_agent.requests_per_minute;
    crate::kernel::rate::per_minute(
        hub,
        &format!("ia/{}", sender.key()),
        limit,
        "addressed messages per minute from this agent",
    )
    .await
}

/// The `message` entry for an accepted addressed message: the delivered form, deadline at the
/// earlier of its `expires_at` and the inbound retention (§9.8: never delivered after it).
pub(crate) fn entry(hub: &Hub, route: &Route, record: &MessageRecord, envelope: &Envelope) -> MailboxEntry {
    let now = record.created_at;
    let retention = chrono::Duration::days(i64::from(hub.settings.mailbox.retention_days));
    let deadline = envelope.expires_at.map_or(now + retention, |e| e.min(now + retention));
    let raw = match &record.envelope {
        Value::Object(m) => m.clone(),
        _ => serde_json::Map::new(),
    };
    MailboxEntry::new(
        route.mailbox.clone(),
        record.id.to_string(),
        EntryKind::Message,
        route.audience.clone(),
        delivered_message(&raw, record.id.as_str(), &route.from),
        route.from.clone(),
        now,
        deadline,
    )
}

/// The status a sender reads: an addressed notify mirrors its mailbox track (§5.1, §8.2).
pub(crate) fn status(record: &MessageRecord, outbound: Option<&MailboxEntry>, now: Timestamp) -> Status {
    match outbound {
        Some(entry) if record.kind == MessageType::Notify => match entry.track(now) {
            Track::Queued => Status::Queued,
            Track::Delivered { .. } => Status::Delivered,
            Track::Acknowledged { .. } => Status::Acknowledged,
            Track::Bounced { .. } => Status::Bounced,
            Track::Expired => Status::Expired,
        },
        // Purged entry of an addressed notify: its last word is unknowable; the record says
        // delivered-on-accept only for human-inbox notifies, so say `expired` rather than lie.
        None if record.kind == MessageType::Notify && is_addressed(record) => Status::Expired,
        _ => record.status,
    }
}

/// The §8.2 `mailbox` object: `{state, delivered_at?, acknowledged_at?, prior?}`.
pub(crate) fn mailbox_track(entry: &MailboxEntry, now: Timestamp) -> MailboxTrack {
    let track = entry.track(now);
    MailboxTrack {
        state: track.state(),
        delivered_at: entry.delivered_at,
        acknowledged_at: match &track {
            Track::Acknowledged { ack, .. } => Some(ack.acked_at),
            _ => None,
        },
        prior: track.prior(),
    }
}

/// Does `agent` own this addressed message's destination? (§9.1 addressee default.)
pub(crate) fn addressee(envelope: &Envelope) -> Option<AgentId> {
    envelope.to.as_deref().and_then(Destination::parse).map(|d| d.agent)
}

/// The §8.1 snapshot for a replayed addressed ack: re-derived for the original destination under
/// the same visibility rule as the first ack.
pub(crate) async fn replay_snapshot(hub: &Hub, record: &MessageRecord) -> Result<Reachability, HubError> {
    let Some(dest) = record.envelope.get("to").and_then(Value::as_str).and_then(Destination::parse) else {
        return Ok(Reachability::unknown());
    };
    if dest.agent != record.agent_id {
        return Ok(Reachability::unknown());
    }
    let mailbox = Mailbox { account: record.account.clone(), agent: dest.agent };
    let now = hub.clock.now();
    let session = match dest.session.as_deref().and_then(SessionId::parse) {
        Some(id) => hub.sessions.get_session(&record.account, &id).await?.filter(|s| s.agent == mailbox.agent),
        None => None,
    };
    reachability(hub, &mailbox, session.as_ref(), now).await
}

//! `GET /v1/messages/{id}` (§8.2): submitter-bound read with `?wait=` long-poll and `?since=`.

use std::time::Duration;

use ma2h_protocol::time::Timestamp;
use ma2h_protocol::verbatim;
use ma2h_protocol::wire::{DeliveryState, MailboxTrack, MessageTracks, ResponseDelivery, TrackState};
use serde_json::Value;

use crate::kernel::auth::Principal;
use crate::kernel::credentials::PrincipalId;
use crate::mailbox::model::MailboxEntry;
use crate::messages::lifecycle::load_owned;
use crate::messages::records::{MessageRecord, PushStatus};
use crate::{Hub, HubError};

/// What the read produced.
#[derive(Debug, Clone, PartialEq)]
pub enum Read {
    /// 200 with the §8.2 body, serialized (`state` exactly as submitted).
    Body(Vec<u8>),
    /// 304: nothing changed after `since`.
    NotModified,
}

#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ReadOptions {
    /// Requested long-poll, in seconds (clamped to the advertised maximum).
    pub wait_seconds: Option<u32>,
    /// Only report a change after this instant (§8.2 cursor).
    pub since: Option<Timestamp>,
    /// A `HEAD` request: the same status and headers, but no body reaches the agent, so the read
    /// is no §14.2 delivery evidence.
    pub head: bool,
}

pub async fn get(hub: &Hub, principal: &Principal, id: &str, opts: ReadOptions) -> Result<Read, HubError> {
    let PrincipalId::Agent(agent) = &principal.id else {
        return Err(HubError::NotFound);
    };
    let wait = Duration::from_secs(u64::from(opts.wait_seconds.unwrap_or(0).min(hub.settings.long_poll_max_seconds)));
    let deadline = tokio::time::Instant::now() + wait;
    if !wait.is_zero() {
        // §15.1: a response long-poll is the agent's own activity.
        let mailbox = crate::mailbox::model::Mailbox { account: principal.account.clone(), agent: agent.clone() };
        crate::mailbox::presence::seen(hub, &mailbox).await;
    }
    loop {
        // Subscribe before reading, so a resolve landing in between still wakes us.
        let subscription = (!wait.is_zero())
            .then(|| ma2h_protocol::ids::MessageId::parse(id).map(|mid| hub.changes.subscribe(&mid)))
            .flatten();
        let record = load_owned(hub, &principal.account, agent, id).await?;
        let changed = opts.since.is_none_or(|since| record.updated_at > since);
        // Hold while the message is open (or unchanged since the cursor) and time remains.
        // On shutdown a parked long-poll answers with what it has (§8.2: the agent re-polls).
        let settled = (!record.status.is_open() && changed) || hub.changes.closing();
        let remaining = deadline.saturating_duration_since(tokio::time::Instant::now());
        match subscription {
            Some(sub) if !settled && !remaining.is_zero() => {
                // Wake no later than expiry, so the default lands on time.
                let until_expiry = record
                    .expires_at
                    .and_then(|e| (e - hub.clock.now()).to_std().ok())
                    .map(|d| d + Duration::from_millis(5));
                sub.wait(until_expiry.map_or(remaining, |e| e.min(remaining))).await;
            }
            _ if !changed => return Ok(Read::NotModified),
            _ => {
                // §14.2: the submitter's read of a terminal Response is delivery evidence — when
                // the Response is actually sent (a HEAD answers headers only).
                let record = if opts.head { record } else { crate::messages::receipt::stamp_read(hub, record).await? };
                let outbound = crate::mailbox::undeliverable::outbound(hub, &record).await?;
                let text = record.state_text.as_deref();
                let body = body(&record, outbound.as_ref(), hub.clock.now());
                return Ok(Read::Body(verbatim::to_vec_with_state(&body, text, verbatim::GET_BODY_STATE)));
            }
        }
    }
}

/// The §8.2 body: the message as submitted, its Hub id and status, and once terminal the
/// embedded Response (byte-identical on every read). An addressed message adds its outbound
/// `mailbox` track (`outbound`, its `message` entry), which an addressed notify's status mirrors.
pub fn body(record: &MessageRecord, outbound: Option<&MailboxEntry>, now: Timestamp) -> Value {
    let mut out = match &record.envelope {
        Value::Object(m) => m.clone(),
        _ => serde_json::Map::new(),
    };
    let tracks = MessageTracks {
        id: record.id.to_string(),
        status: crate::mailbox::addressed::status(record, outbound, now),
        // §8.2: the sender's authoritative view of the outbound track (purged → `expired`).
        mailbox: crate::mailbox::undeliverable::is_addressed(record).then(|| match outbound {
            Some(e) => crate::mailbox::addressed::mailbox_track(e, now),
            None => MailboxTrack { state: TrackState::Expired, delivered_at: None, acknowledged_at: None, prior: None },
        }),
        response: record.response.clone(),
        // A push that failed for good, and why (unbound host, refused address, receiver errors),
        // so the agent that owns it learns it without asking an operator. Only the final
        // failure: a terminal body reads the same on every GET (§8.2), and a delivered push is
        // already the `delivery` track. The schema admits the extra member (§10).
        push: record.push.as_ref().filter(|p| p.status == PushStatus::Failed).map(|t| t.view()),
        // §14.2 response track: a 2xx push or the submitter's first read is delivery evidence;
        // the agent's ack closes it.
        delivery: record.delivered_to_agent().map(|at| match &record.ack {
            Some(ack) => ResponseDelivery {
                state: DeliveryState::Acknowledged,
                delivered_at: at,
                acknowledged_at: Some(ack.acked_at),
                ack: Some(ack.envelope(record.id.as_str(), record.resolution_id.as_ref().map(|r| r.as_str()))),
            },
            None => ResponseDelivery {
                state: DeliveryState::DeliveredToAgent,
                delivered_at: at,
                acknowledged_at: None,
                ack: None,
            },
        }),
    };
    tracks.merge_into(&mut out);
    Value::Object(out)
}

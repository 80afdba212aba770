//! The live inbox's pulse (issue 39): what an operator's open tab needs to stay current without
//! reloading — the account's open counts (the tab title), a version that changes whenever a
//! listed page would (so the page refetches only then), and the urgent/high asks and tasks this
//! operator may answer (desktop notifications). The local server pushes a pulse the moment a
//! change commits ([`crate::kernel::changes::ChangeFeed::subscribe_account`]); elsewhere the
//! browser re-reads it every few seconds.

use ma2h_protocol::envelope::{MessageType, Priority};
use ma2h_protocol::ids::MessageId;
use sha2::{Digest, Sha256};

use crate::kernel::auth::Principal;
use crate::mailbox::inbox::{Allowed, glance};
use crate::messages::list::{ListParams, list};
use crate::messages::listing::{ListFilter, MessageSummary, OpenCounts};
use crate::{Hub, HubError};

/// Rows of the open listing a pulse reads: the urgent/high ones sort first, so these cover every
/// alert an operator could act on at a glance.
const OPEN_ROWS: usize = 20;
/// Rows of the resolved listing (history and FYI pages change when one lands).
const RESOLVED_ROWS: usize = 5;
/// Alerts carried at most (the newest urgent/high first-page rows).
const MAX_ALERTS: usize = 10;

/// An urgent or high ask/task the operator may answer: a desktop notification's content. The
/// title is the agent's words (shown as plain text); the body is never carried (§9.6).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Alert {
    pub id: MessageId,
    pub title: String,
    pub priority: Priority,
    pub kind: MessageType,
    pub agent: String,
}

/// One reading of the operator's inbox.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pulse {
    pub counts: OpenCounts,
    /// Changes whenever the first open page, the newest resolutions or the counts do.
    pub version: String,
    pub alerts: Vec<Alert>,
}

/// Read the pulse of `principal`'s account (an operator: the listing refuses anyone else).
pub async fn pulse(hub: &Hub, principal: &Principal) -> Result<Pulse, HubError> {
    let open =
        list(hub, principal, ListParams { limit: Some(OPEN_ROWS), counts: true, ..ListParams::default() }).await?;
    let done = list(
        hub,
        principal,
        ListParams {
            resolved: true,
            limit: Some(RESOLVED_ROWS),
            filter: ListFilter::default(),
            ..ListParams::default()
        },
    )
    .await?;
    let counts = open.counts.unwrap_or_default();
    // claims and snoozes change what the rows show, so they are part of the version too
    let open_ids: Vec<MessageId> = open.page.items.iter().map(|s| s.id.clone()).collect();
    let triage = crate::messages::triage::read(hub, principal, &open_ids).await?;
    let now = hub.clock.now();
    let me = match &principal.id {
        crate::kernel::credentials::PrincipalId::Operator(h) => Some(h),
        crate::kernel::credentials::PrincipalId::Agent(_) => None,
    };
    let snoozed = |id: &MessageId| {
        open_ids
            .iter()
            .position(|i| i == id)
            .and_then(|at| triage.get(at))
            .and_then(Option::as_ref)
            .zip(me)
            .is_some_and(|(t, h)| t.snoozed_by(h, now).is_some())
    };
    let mut version = version(&counts, &open.page.items, &done.page.items);
    let marks: String = triage
        .iter()
        .flatten()
        // a snooze that ended changes the list without a write: its state is in the version
        .map(|t| format!("{}:{}:{}", t.message_id, t.version, snoozed(&t.message_id)))
        .collect::<Vec<_>>()
        .join(",");
    if !marks.is_empty() {
        version = hex::encode(&Sha256::digest(format!("{version}|{marks}"))[..8]);
    }
    let urgent: Vec<&MessageSummary> = open
        .page
        .items
        .iter()
        // issue 39: nothing this operator snoozed alerts them
        .filter(|s| matches!(s.priority, Priority::Urgent | Priority::High) && s.kind != MessageType::Notify)
        .filter(|s| !snoozed(&s.id))
        .take(MAX_ALERTS)
        .collect();
    let ids: Vec<MessageId> = urgent.iter().map(|s| s.id.clone()).collect();
    let glances = glance(hub, principal, &ids).await?;
    let alerts = urgent
        .into_iter()
        .zip(glances)
        .filter(|(_, g)| g.as_ref().is_some_and(|g| matches!(g.allowed, Allowed::Resolve(_))))
        .map(|(s, _)| Alert {
            id: s.id.clone(),
            title: s.title.clone(),
            priority: s.priority,
            kind: s.kind,
            agent: s.agent_id.to_string(),
        })
        .collect();
    Ok(Pulse { counts, version, alerts })
}

/// A short digest of what the pages show: ids, their last change and push state, and the counts.
fn version(counts: &OpenCounts, open: &[MessageSummary], done: &[MessageSummary]) -> String {
    let mut h = Sha256::new();
    h.update(format!("{counts:?}"));
    for s in open.iter().chain(done) {
        let push = s.push.as_ref().map(|p| format!("{:?}{}", p.status, p.attempts)).unwrap_or_default();
        h.update(format!("|{}:{}:{}:{push}", s.id, s.status.as_str(), s.updated_at.timestamp_micros()));
    }
    hex::encode(&h.finalize()[..8])
}

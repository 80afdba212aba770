//! Triage (issue 39): an operator's claim on an open message ("I'm on it", shown to every
//! operator of the account), per-operator snoozes, and the message's triage events (each
//! operator's first view, claims, releases, snoozes) for its timeline. One [`TriageRecord`] per
//! message, beside it in the store, written by compare-and-set on its version and retained as
//! long as an open message can reasonably need it ([`TriageRecord::retain_until`]).
//!
//! Nothing here changes the message or its §7 lifecycle: a claim does not stop another operator
//! from answering (first terminal still wins); it tells them someone is on it.

use chrono::Duration;
use ma2h_protocol::ids::{HumanId, MessageId};
use ma2h_protocol::time::Timestamp;

use crate::kernel::auth::Principal;
use crate::kernel::credentials::PrincipalId;
use crate::messages::records::Lookup;
pub use crate::messages::triage_store::*;
use crate::{Hub, HubError};

/// The longest snooze.
pub const MAX_SNOOZE: Duration = Duration::days(30);
/// Events kept per message (the oldest are dropped past this).
pub const MAX_EVENTS: usize = 64;
/// Compare-and-set attempts before a write reports a conflict.
const ATTEMPTS: usize = 5;
/// A record outlives its open message's expiry (or its last write) by at least this.
const KEEP_AT_LEAST: Duration = Duration::days(30);

/// How a claim went.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ClaimOutcome {
    /// The operator holds the claim now.
    Claimed,
    /// Another operator holds it (take it over explicitly).
    HeldBy(Claim),
}

fn operator(principal: &Principal) -> Result<&HumanId, HubError> {
    match &principal.id {
        PrincipalId::Operator(h) => Ok(h),
        PrincipalId::Agent(_) => Err(HubError::NotFound),
    }
}

/// The records of `ids` in the operator's account (rows without one get `None`).
pub async fn read(hub: &Hub, principal: &Principal, ids: &[MessageId]) -> Result<Vec<Option<TriageRecord>>, HubError> {
    operator(principal)?;
    if ids.is_empty() {
        return Ok(Vec::new());
    }
    Ok(hub.triage.get_triage(&principal.account, ids).await?)
}

/// Read-modify-write of one message's record by compare-and-set; `change` returns `Ok(false)`
/// to write nothing. The message must be in the operator's account (404/410 otherwise) and,
/// unless `closed_ok`, still open.
async fn update<T>(
    hub: &Hub,
    principal: &Principal,
    id: &str,
    closed_ok: bool,
    mut change: impl FnMut(&mut TriageData, Timestamp) -> Result<(bool, T), HubError>,
) -> Result<T, HubError> {
    operator(principal)?;
    let id = MessageId::parse(id).ok_or(HubError::NotFound)?;
    let record = match hub.lookup(&principal.account, &id).await? {
        Lookup::Found(r) => r,
        Lookup::Gone { .. } => return Err(HubError::Gone),
        Lookup::Missing => return Err(HubError::NotFound),
    };
    if !closed_ok && !record.status.is_open() {
        return Err(HubError::validation("the message is already resolved"));
    }
    for _ in 0..ATTEMPTS {
        let now = hub.clock.now();
        let current = hub.triage.get_triage(&principal.account, std::slice::from_ref(&id)).await?.pop().flatten();
        let expected = current.as_ref().map(|r| r.version);
        let mut data = current.map(|r| r.data).unwrap_or_default();
        let (write, out) = change(&mut data, now)?;
        if !write {
            return Ok(out);
        }
        if data.events.len() > MAX_EVENTS {
            let extra = data.events.len() - MAX_EVENTS;
            data.events.drain(..extra);
        }
        let keep = keep_until(hub, &record, now);
        let next = TriageRecord {
            account: principal.account.clone(),
            message_id: id.clone(),
            version: expected.unwrap_or(0) + 1,
            data,
            retain_until: keep,
        };
        if hub.triage.put_triage(&next, expected).await? {
            hub.changes.publish_account(&principal.account);
            return Ok(out);
        }
    }
    // Only under a burst of writes to one message's triage: ask the operator to retry.
    Err(HubError::RateLimited {
        message: "the message's triage changed meanwhile; try again".into(),
        retry_after_secs: 1,
    })
}

/// When a message's triage record (written at `now`) may go: past the message's expiry, or
/// the write, by the retention and at least [`KEEP_AT_LEAST`].
pub fn keep_until(hub: &Hub, record: &crate::messages::records::MessageRecord, now: Timestamp) -> Timestamp {
    record.expires_at.unwrap_or(now).max(now) + hub.retention().max(KEEP_AT_LEAST)
}

/// Claim an open message ("I'm on it"); another operator's claim is kept unless `take_over`.
pub async fn claim(hub: &Hub, principal: &Principal, id: &str, take_over: bool) -> Result<ClaimOutcome, HubError> {
    let me = operator(principal)?.clone();
    update(hub, principal, id, false, |data, now| match &data.claim {
        Some(c) if c.by == me => Ok((false, ClaimOutcome::Claimed)),
        Some(c) if !take_over => Ok((false, ClaimOutcome::HeldBy(c.clone()))),
        _ => {
            data.claim = Some(Claim { by: me.clone(), at: now });
            data.events.push(TriageEvent { at: now, by: me.clone(), kind: EventKind::Claimed, until: None });
            Ok((true, ClaimOutcome::Claimed))
        }
    })
    .await
}

/// Release one's own claim (another operator's is refused: take it over instead).
pub async fn release(hub: &Hub, principal: &Principal, id: &str) -> Result<(), HubError> {
    let me = operator(principal)?.clone();
    update(hub, principal, id, true, |data, now| match &data.claim {
        None => Ok((false, ())),
        Some(c) if c.by != me => Err(HubError::NotAuthorized(format!("human:{} holds the claim", c.by))),
        Some(_) => {
            data.claim = None;
            data.events.push(TriageEvent { at: now, by: me.clone(), kind: EventKind::Released, until: None });
            Ok((true, ()))
        }
    })
    .await
}

/// Snooze the message for this operator until `until` (`None`: wake it now). A snooze hides it
/// from this operator's open list only; nobody else's.
pub async fn snooze(hub: &Hub, principal: &Principal, id: &str, until: Option<Timestamp>) -> Result<(), HubError> {
    let me = operator(principal)?.clone();
    update(hub, principal, id, false, |data, now| {
        match until {
            Some(u) if u <= now => return Err(HubError::validation("a snooze must end in the future")),
            Some(u) if u - now > MAX_SNOOZE => return Err(HubError::validation("a snooze lasts at most 30 days")),
            Some(u) => {
                data.snoozes.insert(me.to_string(), u);
                data.events.push(TriageEvent { at: now, by: me.clone(), kind: EventKind::Snoozed, until: Some(u) });
            }
            None => {
                if data.snoozes.remove(me.as_str()).is_none_or(|u| u <= now) {
                    return Ok((false, ()));
                }
                data.events.push(TriageEvent { at: now, by: me.clone(), kind: EventKind::Unsnoozed, until: None });
            }
        }
        // snoozes that ended are dropped as they are met
        data.snoozes.retain(|_, u| *u > now);
        Ok((true, ()))
    })
    .await
}

/// Record this operator's first view of the message (for its timeline); later views write
/// nothing. Best effort for the caller: a page view never fails on it.
pub async fn viewed(hub: &Hub, principal: &Principal, id: &str) -> Result<(), HubError> {
    let me = operator(principal)?.clone();
    update(hub, principal, id, true, |data, now| {
        if data.events.iter().any(|e| e.kind == EventKind::Viewed && e.by == me) {
            return Ok((false, ()));
        }
        data.events.push(TriageEvent { at: now, by: me.clone(), kind: EventKind::Viewed, until: None });
        Ok((true, ()))
    })
    .await
}

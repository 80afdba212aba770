//! The background sweeper: applies due expiries found through the `expires_at` index (never a
//! full scan) and purges rows past retention. Lazy expiry on every read covers the gaps between
//! sweeps; the sweeper makes expiry happen even when nobody reads.

use futures_util::{StreamExt as _, TryStreamExt as _};

use crate::messages::lifecycle::settle;
use crate::messages::records::Lookup;
use crate::{Hub, HubError};

/// What one sweep did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct SweepReport {
    pub expired: usize,
    pub purged: usize,
    /// Mailbox entries closed at their deadline (§13.3) and deleted after retention.
    pub entries_closed: usize,
    pub entries_purged: usize,
    /// Sessions whose lease lapsed (§16.3), entries bounced (§14.2), terminal sessions purged.
    pub sessions_expired: usize,
    pub entries_bounced: usize,
    pub sessions_purged: usize,
    /// Audit checkpoints signed (issue 42: once per `MA2H_AUDIT_SEAL_MINUTES`).
    pub audit_checkpoints: u64,
}

/// How many due rows of each kind one read of the sweeper takes (due expiries are read again
/// while a read comes back full and the budget lasts; the rest wait for the next sweep).
pub const SWEEP_BATCH: usize = 500;

pub async fn sweep_once(hub: &Hub) -> Result<SweepReport, HubError> {
    let started = std::time::Instant::now();
    let more = |full: bool| full && started.elapsed() < hub.settings.sweep_budget;
    let now = hub.clock.now();
    let mut report = SweepReport::default();
    expire_due(hub, &mut report).await?;
    report.purged = hub.messages.purge(now, SWEEP_BATCH).await?;
    // §13.3: reads already treat a passed deadline as expired; the sweep makes it durable. Like
    // the expiries, a full batch is followed by another while the budget lasts (issue 38).
    let retain_until = crate::mailbox::undeliverable::retain_after(hub, now);
    loop {
        let closed = hub.mailbox.close_due_entries(now, retain_until, SWEEP_BATCH).await?;
        report.entries_closed += closed.len();
        // §14.2/§7: an addressed message that expired unseen, or a principal-addressed one
        // orphaned after delivery, is undeliverable: resolve it (and receipt the orphan's sender).
        crate::mailbox::undeliverable::after_closed(hub, &closed).await;
        if !more(closed.len() >= SWEEP_BATCH) {
            break;
        }
    }
    report.entries_purged = hub.mailbox.purge_entries(now, SWEEP_BATCH).await?;
    // §16.3: lapsed leases become durable `expired`, then the bounce outbox is drained.
    let retention = hub.settings.sessions.terminal_retention();
    loop {
        let expired = hub.sessions.expire_due_sessions(now, retention, SWEEP_BATCH).await?;
        report.sessions_expired += expired;
        if !more(expired >= SWEEP_BATCH) {
            break;
        }
    }
    loop {
        let pending = hub.sessions.pending_bounces(SWEEP_BATCH).await?;
        for session in &pending {
            report.entries_bounced += crate::mailbox::undeliverable::bounce(hub, session).await?;
        }
        if !more(pending.len() >= SWEEP_BATCH) {
            break;
        }
    }
    report.sessions_purged = hub.sessions.purge_sessions(now, SWEEP_BATCH).await?;
    hub.notifications.purge_notifications(now, SWEEP_BATCH).await?;
    hub.triage.purge_triage(now, SWEEP_BATCH).await?;
    hub.grants.purge_grants(now, SWEEP_BATCH).await?;
    report.audit_checkpoints = seal_due(hub, now).await?;
    Ok(report)
}

/// Issue 42: once per `MA2H_AUDIT_SEAL_MINUTES` window, the first sweep of the window — across
/// every process and function, by a store counter — seals every account's settled entries; once
/// a day it also prunes the ledger past `MA2H_AUDIT_RETENTION_DAYS` (`audit::retention`).
async fn seal_due(hub: &Hub, now: ma2h_protocol::time::Timestamp) -> Result<u64, HubError> {
    if !hub.settings.audit.enabled {
        return Ok(0);
    }
    let secs = i64::from(hub.settings.audit.seal_minutes.max(1)) * 60;
    let window = now.timestamp().div_euclid(secs);
    let end = ma2h_protocol::time::from_millis((window + 1) * secs * 1000);
    if hub.messages.incr_counter(&format!("audit-seal/{window}"), end, now).await? != 1 {
        return Ok(0);
    }
    let sealed = crate::audit::seal::seal_all(hub).await?;
    // retention, once a day: the day's first sealing sweep prunes (its own counter)
    let day = now.timestamp().div_euclid(86_400);
    let day_end = ma2h_protocol::time::from_millis((day + 1) * 86_400_000);
    if hub.messages.incr_counter(&format!("audit-prune/{day}"), day_end, now).await? == 1 {
        crate::audit::retention::prune_all(hub).await?;
    }
    Ok(sealed)
}

/// Issue 38: the sweeper's expiry throughput grows with the backlog. Due messages are read a
/// batch at a time and settled `MA2H_SWEEP_CONCURRENCY` (16) at once — each is its own §7
/// compare-and-set, so two sweeps (or a sweep and a resolve) racing for one message still commit
/// exactly one terminal; a full batch is followed by
/// another while `MA2H_SWEEP_BUDGET_SECONDS` lasts (so a minute's schedule is not a cap of 500
/// expiries a minute). A full batch that expires nothing (index rows of messages already settled
/// or gone) ends the run: the next sweep reads again.
async fn expire_due(hub: &Hub, report: &mut SweepReport) -> Result<(), HubError> {
    let started = std::time::Instant::now();
    let mut lag = 0.0f64;
    loop {
        let now = hub.clock.now();
        let due = hub.messages.due_expiries(now, SWEEP_BATCH).await?;
        let full = due.len() >= SWEEP_BATCH;
        let outcomes: Vec<(bool, Option<f64>)> = futures_util::stream::iter(due)
            .map(|(account, id)| async move {
                let Lookup::Found(rec) = hub.messages.get_message(&account, &id).await? else {
                    return Ok::<_, HubError>((false, None));
                };
                let late = rec.expires_at.map(|at| (now - at).num_milliseconds() as f64 / 1000.0);
                let before = rec.status;
                let after = settle(hub, rec).await?;
                Ok((before != after.status, late))
            })
            .buffer_unordered(hub.settings.sweep_concurrency)
            .try_collect()
            .await?;
        let expired = outcomes.iter().filter(|(changed, _)| *changed).count();
        lag = outcomes.iter().filter_map(|(_, late)| *late).fold(lag, f64::max);
        report.expired += expired;
        if !full || expired == 0 || started.elapsed() >= hub.settings.sweep_budget {
            break;
        }
    }
    crate::kernel::metrics::swept(lag, report.expired);
    Ok(())
}

/// A pending push not attempted this long after it was due lost its queue announcement (it is
/// sent after the commit, §3.1, and a crash or queue error can drop it).
pub const STALE_AFTER: chrono::Duration = chrono::Duration::seconds(60);
/// How long a re-announced push is leased before a sweep may announce it again.
pub const REQUEUE_LEASE: chrono::Duration = chrono::Duration::minutes(5);
/// Re-announcements per sweep (the next sweep continues).
pub const REQUEUE_BATCH: usize = 100;

/// For a Hub whose deliveries are driven by an external queue (SQS on AWS): claim pending pushes
/// overdue by [`STALE_AFTER`] (leasing them for [`REQUEUE_LEASE`]) and announce them again.
/// Returns how many the queue took; the rest are retried by a later sweep once the lease ends.
pub async fn requeue_lost_pushes(hub: &Hub) -> Result<usize, HubError> {
    let now = hub.clock.now();
    let stale = hub.messages.claim_due_pushes(now - STALE_AFTER, now + REQUEUE_LEASE, REQUEUE_BATCH).await?;
    let mut requeued = 0;
    for (account, id) in stale {
        match hub.push_queue.enqueue(&account, &id).await {
            Ok(()) => requeued += 1,
            Err(e) => tracing::warn!(message_id = %id, error = %e, "re-enqueue failed; a later sweep retries"),
        }
    }
    Ok(requeued)
}

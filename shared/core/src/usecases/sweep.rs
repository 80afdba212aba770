//! The background sweeper: applies due expiries found through the `expires_at` index (never a
//! full scan) and purges rows past retention. Lazy expiry on every read covers the gaps between
//! sweeps; the sweeper makes expiry happen even when nobody reads.

use super::lifecycle::settle;
use crate::records::Lookup;
use crate::{Hub, HubError};

/// What one sweep did.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SweepReport {
    pub expired: usize,
    pub purged: usize,
}

/// How many due messages one sweep handles before yielding (the next sweep continues).
pub const SWEEP_BATCH: usize = 500;

pub async fn sweep_once(hub: &Hub) -> Result<SweepReport, HubError> {
    let now = hub.clock.now();
    let mut report = SweepReport::default();
    for (account, id) in hub.messages.due_expiries(now, SWEEP_BATCH).await? {
        if let Lookup::Found(rec) = hub.messages.get_message(&account, &id).await? {
            let before = rec.status;
            let after = settle(hub, rec).await?;
            if before != after.status {
                report.expired += 1;
            }
        }
    }
    report.purged = hub.messages.purge(now, SWEEP_BATCH).await?;
    Ok(report)
}

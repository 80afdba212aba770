//! The ledger's own retention (issue 42): message purges never touch it; past
//! `MA2H_AUDIT_RETENTION_DAYS` the sweeper prunes — once a day — what the last checkpoint older
//! than that covers, and keeps that checkpoint as the ledger's anchor, so an export from the
//! beginning still verifies (it starts at the anchor) and nothing newer than a checkpoint's
//! coverage is ever pruned.

use ma2h_protocol::ids::AccountId;

use crate::{Hub, HubError};

/// Entries deleted per store call.
const BATCH: usize = 1_000;

/// Prune `account`'s ledger past its retention; returns the entries deleted.
pub async fn prune(hub: &Hub, account: &AccountId) -> Result<usize, HubError> {
    let cutoff = hub.clock.now() - chrono::Duration::days(i64::from(hub.settings.audit.retention_days));
    let Some(keep) = super::export::anchor_at(hub, account, cutoff).await? else { return Ok(0) };
    let mut deleted = 0;
    loop {
        let n = hub.audit.prune_audit(account, &keep, BATCH).await?;
        deleted += n;
        if n < BATCH {
            break;
        }
    }
    if deleted > 0 {
        tracing::info!(account = %account, anchor = keep.seq(), deleted, "audit entries pruned past retention");
    }
    Ok(deleted)
}

/// Prune every account's ledger.
pub async fn prune_all(hub: &Hub) -> Result<usize, HubError> {
    let mut deleted = 0;
    for account in hub.audit.audit_accounts().await? {
        deleted += prune(hub, &account).await?;
    }
    Ok(deleted)
}

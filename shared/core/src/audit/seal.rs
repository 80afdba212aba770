//! Checkpoints (docs/design/audit.md §2): per account, the entries older than [`SETTLE`] are
//! chained onto the last checkpoint's heads and a new checkpoint, signed with the Hub's key, is
//! stored — conditionally, so two sweepers never fork the checkpoint chain.

use std::collections::BTreeMap;

use ma2h_protocol::audit::Chainer;
use ma2h_protocol::ids::AccountId;
use ma2h_protocol::time;

use super::SETTLE;
use super::store::StoredCheckpoint;
use crate::{Hub, HubError};

/// Entries read per page.
const PAGE: usize = 500;

/// What one account's sealing did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Sealed {
    /// A checkpoint with this `seq`, over this many new entries.
    Checkpoint { seq: u64, entries: u64 },
    /// Nothing new old enough to seal.
    NothingNew,
    /// Another sealer stored this `seq` first.
    Lost,
    /// This process cannot sign (it only publishes the Hub's keys).
    NoKey,
}

/// Seal every account's settled entries; returns the checkpoints made.
pub async fn seal_all(hub: &Hub) -> Result<u64, HubError> {
    let mut made = 0;
    for account in hub.audit.audit_accounts().await? {
        if matches!(seal_account(hub, &account).await?, Sealed::Checkpoint { .. }) {
            made += 1;
        }
    }
    Ok(made)
}

/// Seal one account's entries settled by now.
pub async fn seal_account(hub: &Hub, account: &AccountId) -> Result<Sealed, HubError> {
    let Some(key) = hub.keys.signer() else { return Ok(Sealed::NoKey) };
    let now = hub.clock.now();
    let until = now - SETTLE;
    let last = hub.audit.last_audit_checkpoint(account).await?;
    let (mut chains, mut cursors) = match &last {
        Some(cp) => (
            Chainer::after(&cp.signed).ok_or_else(|| HubError::Internal("a stored checkpoint is malformed".into()))?,
            cp.cursors.clone(),
        ),
        None => (Chainer::new(account.as_str()), BTreeMap::new()),
    };
    let mut entries = 0;
    for shard in 0..hub.audit.audit_shards() {
        loop {
            let after = cursors.get(&shard).cloned();
            let page = hub.audit.audit_entries(account, shard, after.as_deref(), until, PAGE).await?;
            for record in &page {
                chains.push(record.entry());
                cursors.insert(shard, record.sort_key());
                entries += 1;
            }
            if page.len() < PAGE {
                break;
            }
        }
    }
    if entries == 0 {
        return Ok(Sealed::NothingNew);
    }
    let signed = chains.checkpoint(&time::format(now), &hub.keys.current_kid, key);
    let seq = signed.body.seq;
    let cp = StoredCheckpoint { signed, at: now, cursors, anchor: false };
    if !hub.audit.put_audit_checkpoint(account, &cp).await? {
        return Ok(Sealed::Lost);
    }
    tracing::info!(account = %account, seq, entries, "audit checkpoint");
    Ok(Sealed::Checkpoint { seq, entries })
}

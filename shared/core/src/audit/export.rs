//! An export (docs/design/audit.md §3): the account's entries chained again from the store, the
//! stored checkpoints between them, and a seal signed now over the file's final heads — what
//! `ma2h audit verify` checks. Nothing is trusted from the store here: an entry edited there
//! yields a file that fails verification at that entry.

use ma2h_protocol::audit::{Chainer, Line};
use ma2h_protocol::ids::AccountId;
use ma2h_protocol::time::{self, Timestamp};

use super::SHARDS;
use super::store::StoredCheckpoint;
use crate::kernel::auth::Principal;
use crate::kernel::credentials::PrincipalId;
use crate::{Hub, HubError};

const PAGE: usize = 500;

/// `GET /v1/operator/audit`: an operator's export of their own account (`since`/`until`:
/// RFC 3339, optional).
pub async fn export_for(
    hub: &Hub,
    principal: &Principal,
    since: Option<&str>,
    until: Option<&str>,
) -> Result<Vec<String>, HubError> {
    if !matches!(principal.id, PrincipalId::Operator(_)) {
        return Err(HubError::NotAuthorized("the audit ledger needs an operator credential".into()));
    }
    let when = |name: &str, v: Option<&str>| {
        v.filter(|s| !s.is_empty())
            .map(|s| time::parse(s).ok_or_else(|| HubError::validation(format!("query `{name}` must be RFC 3339"))))
            .transpose()
    };
    export(hub, &principal.account, when("since", since)?, when("until", until)?).await
}

/// The export's lines (JSON, one each). With `since`, it starts at the last checkpoint made at or
/// before it (the file's anchor), else at the ledger's beginning; it ends at `until` (now).
pub async fn export(
    hub: &Hub,
    account: &AccountId,
    since: Option<Timestamp>,
    until: Option<Timestamp>,
) -> Result<Vec<String>, HubError> {
    let key = hub.keys.signer().ok_or_else(|| HubError::Internal("this process cannot sign an export".into()))?;
    let now = hub.clock.now();
    let until = until.map_or(now, |u| u.min(now));
    let checkpoints = all_checkpoints(hub, account).await?;
    let anchor = since.and_then(|s| checkpoints.iter().rev().find(|cp| cp.at <= s));
    let mut lines = Vec::new();
    let (mut chains, mut cursors) = match anchor {
        Some(cp) => {
            lines.push(Line::Checkpoint(cp.signed.clone()).to_json());
            let chains = Chainer::after(&cp.signed)
                .ok_or_else(|| HubError::Internal("a stored checkpoint is malformed".into()))?;
            (chains, cp.cursors.clone())
        }
        None => (Chainer::new(account.as_str()), Default::default()),
    };
    let from = anchor.map_or(0, |cp| cp.seq() + 1);
    for cp in checkpoints.iter().filter(|cp| cp.seq() >= from && cp.at <= until) {
        for shard in 0..SHARDS {
            if let Some(last) = cp.cursors.get(&shard) {
                copy(hub, account, shard, &mut cursors, Some(last), cp.at, &mut chains, &mut lines).await?;
            }
        }
        lines.push(Line::Checkpoint(cp.signed.clone()).to_json());
        // continue from the signed checkpoint: it carries the `prev` the next one (and the seal)
        // names; a store whose entries disagree with it already fails verification at this line
        chains = Chainer::after(&cp.signed).unwrap_or(chains);
    }
    for shard in 0..SHARDS {
        copy(hub, account, shard, &mut cursors, None, until, &mut chains, &mut lines).await?;
    }
    lines.push(Line::Export(chains.seal(&time::format(now), &hub.keys.current_kid, key)).to_json());
    Ok(lines)
}

/// Entries of `shard` after its cursor, up to the sort key `last` (every one up to `until`
/// without), chained onto `lines`.
#[allow(clippy::too_many_arguments)]
async fn copy(
    hub: &Hub,
    account: &AccountId,
    shard: u16,
    cursors: &mut std::collections::BTreeMap<u16, String>,
    last: Option<&String>,
    until: Timestamp,
    chains: &mut Chainer,
    lines: &mut Vec<String>,
) -> Result<(), HubError> {
    loop {
        let after = cursors.get(&shard).cloned();
        let page = hub.audit.audit_entries(account, shard, after.as_deref(), until, PAGE).await?;
        let full = page.len() == PAGE;
        for record in page {
            let key = record.sort_key();
            if last.is_some_and(|l| key > *l) {
                return Ok(());
            }
            lines.push(Line::Entry(chains.push(record.entry())).to_json());
            cursors.insert(shard, key);
        }
        if !full {
            return Ok(());
        }
    }
}

async fn all_checkpoints(hub: &Hub, account: &AccountId) -> Result<Vec<StoredCheckpoint>, HubError> {
    let mut out: Vec<StoredCheckpoint> = Vec::new();
    loop {
        let from = out.last().map_or(0, |cp| cp.seq() + 1);
        let page = hub.audit.audit_checkpoints(account, from, 100).await?;
        let full = page.len() == 100;
        out.extend(page);
        if !full {
            return Ok(out);
        }
    }
}

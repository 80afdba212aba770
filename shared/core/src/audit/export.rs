//! An export (docs/design/audit.md §3): the account's entries chained again from the store, the
//! stored checkpoints between them, and a seal signed now over the file's final heads — what
//! `ma2h audit verify` checks. Nothing is trusted from the store here: an entry edited there
//! yields a file that fails verification at that entry.

use ma2h_protocol::audit::{Chainer, Line};
use ma2h_protocol::ids::AccountId;
use ma2h_protocol::time::{self, Timestamp};

use super::store::StoredCheckpoint;
use crate::kernel::auth::Principal;
use crate::kernel::credentials::PrincipalId;
use crate::{Hub, HubError};

const PAGE: usize = 500;

/// Where an export starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Start {
    /// The ledger's beginning.
    Beginning,
    /// The last checkpoint made at or before this time (the file's anchor), else the beginning.
    Since(Timestamp),
    /// Right after checkpoint `seq` (a page's `next`), anchored by it.
    After(u64),
}

/// One page of an export: a file that verifies on its own (anchored by its first checkpoint,
/// sealed at the end), and where the next page starts (`Start::After(next)`), if it does.
#[derive(Debug, Clone)]
pub struct Page {
    pub lines: Vec<String>,
    pub next: Option<u64>,
}

/// Most entries one page of `GET /v1/operator/audit` holds (`?limit=`, default and maximum).
pub const MAX_PAGE_ENTRIES: usize = 10_000;

/// `GET /v1/operator/audit`: an operator's export of their own account — `since`/`until`
/// (RFC 3339), or `after` (a previous page's `next`), at most `limit` entries a page (a page ends
/// at the first checkpoint past it).
pub async fn export_for(
    hub: &Hub,
    principal: &Principal,
    params: &std::collections::HashMap<String, String>,
) -> Result<Page, HubError> {
    if !matches!(principal.id, PrincipalId::Operator(_)) {
        return Err(HubError::NotAuthorized("the audit ledger needs an operator credential".into()));
    }
    let get = |name: &str| params.get(name).map(String::as_str).filter(|s| !s.is_empty());
    let when = |name: &str| {
        get(name)
            .map(|s| time::parse(s).ok_or_else(|| HubError::validation(format!("query `{name}` must be RFC 3339"))))
            .transpose()
    };
    let start = match (get("after"), when("since")?) {
        (Some(_), Some(_)) => return Err(HubError::validation("query: `after` or `since`, not both")),
        (Some(a), None) => Start::After(
            a.parse().map_err(|_| HubError::validation("query `after` must be a checkpoint number (a page's next)"))?,
        ),
        (None, Some(t)) => Start::Since(t),
        (None, None) => Start::Beginning,
    };
    let limit = match get("limit") {
        None => MAX_PAGE_ENTRIES,
        Some(l) => match l.parse::<usize>() {
            Ok(n) if (1..=MAX_PAGE_ENTRIES).contains(&n) => n,
            _ => return Err(HubError::validation(format!("query `limit` must be 1–{MAX_PAGE_ENTRIES}"))),
        },
    };
    export_page(hub, &principal.account, start, when("until")?, Some(limit)).await
}

/// The whole export's lines (JSON, one each): [`export_page`] without a page limit.
pub async fn export(
    hub: &Hub,
    account: &AccountId,
    since: Option<Timestamp>,
    until: Option<Timestamp>,
) -> Result<Vec<String>, HubError> {
    Ok(export_page(hub, account, since.map_or(Start::Beginning, Start::Since), until, None).await?.lines)
}

/// One page: the anchor checkpoint (if any), then entries and checkpoints as they interleave up to
/// `until` (now) — or, once `limit` entries are out, up to the next checkpoint, which the next
/// page starts after — then a seal signed now over the page's heads.
pub async fn export_page(
    hub: &Hub,
    account: &AccountId,
    start: Start,
    until: Option<Timestamp>,
    limit: Option<usize>,
) -> Result<Page, HubError> {
    let key = hub.keys.signer().ok_or_else(|| HubError::Internal("this process cannot sign an export".into()))?;
    let now = hub.clock.now();
    let until = until.map_or(now, |u| u.min(now));
    let anchor = match start {
        Start::Beginning => None,
        Start::Since(t) => anchor_at(hub, account, t).await?,
        Start::After(seq) => Some(
            hub.audit.audit_checkpoints(account, seq, 1).await?.into_iter().find(|cp| cp.seq() == seq).ok_or_else(
                || HubError::validation(format!("query `after`: there is no checkpoint {seq} in this ledger")),
            )?,
        ),
    };
    let mut lines = Vec::new();
    let (mut chains, mut cursors) = match &anchor {
        Some(cp) => {
            lines.push(Line::Checkpoint(cp.signed.clone()).to_json());
            let chains = Chainer::after(&cp.signed)
                .ok_or_else(|| HubError::Internal("a stored checkpoint is malformed".into()))?;
            (chains, cp.cursors.clone())
        }
        None => (Chainer::new(account.as_str()), Default::default()),
    };
    let mut entries = 0usize;
    let mut from = anchor.as_ref().map_or(0, |cp| cp.seq() + 1);
    'checkpoints: loop {
        let batch = hub.audit.audit_checkpoints(account, from, 100).await?;
        let full = batch.len() == 100;
        for cp in batch {
            if cp.at > until {
                break 'checkpoints;
            }
            // the ledger's anchor (retention pruned what it covers): a file from the beginning
            // starts at it, as at any anchor
            if cp.anchor && start == Start::Beginning && lines.is_empty() {
                lines.push(Line::Checkpoint(cp.signed.clone()).to_json());
                chains = Chainer::after(&cp.signed)
                    .ok_or_else(|| HubError::Internal("a stored checkpoint is malformed".into()))?;
                cursors = cp.cursors.clone();
                from = cp.seq() + 1;
                continue;
            }
            for (shard, last) in &cp.cursors {
                // a shard this checkpoint did not move has nothing new: not read
                if cursors.get(shard) != Some(last) {
                    entries +=
                        copy(hub, account, *shard, &mut cursors, Some(last), cp.at, &mut chains, &mut lines).await?;
                }
            }
            lines.push(Line::Checkpoint(cp.signed.clone()).to_json());
            // continue from the signed checkpoint: it carries the `prev` the next one (and the
            // seal) names; a store whose entries disagree with it already fails at this line
            chains = Chainer::after(&cp.signed).unwrap_or(chains);
            from = cp.seq() + 1;
            if limit.is_some_and(|l| entries >= l) {
                let seal = chains.seal(&time::format(now), &hub.keys.current_kid, key);
                lines.push(Line::Export(seal).to_json());
                return Ok(Page { lines, next: Some(cp.seq()) });
            }
        }
        if !full {
            break;
        }
    }
    for shard in 0..hub.audit.audit_shards() {
        copy(hub, account, shard, &mut cursors, None, until, &mut chains, &mut lines).await?;
    }
    lines.push(Line::Export(chains.seal(&time::format(now), &hub.keys.current_kid, key)).to_json());
    Ok(Page { lines, next: None })
}

/// The last checkpoint made at or before `t`: a binary search over the sequence (checkpoints are
/// made in time order), so an anchor costs O(log n) reads, not every checkpoint.
pub(crate) async fn anchor_at(
    hub: &Hub,
    account: &AccountId,
    t: Timestamp,
) -> Result<Option<StoredCheckpoint>, HubError> {
    let Some(last) = hub.audit.last_audit_checkpoint(account).await? else { return Ok(None) };
    if last.at <= t {
        return Ok(Some(last));
    }
    let (mut lo, mut hi) = (0u64, last.seq()); // the answer's seq is below `hi`
    let mut best = None;
    while lo < hi {
        let mid = lo + (hi - lo) / 2;
        match hub.audit.audit_checkpoints(account, mid, 1).await?.pop() {
            Some(cp) if cp.at <= t => {
                lo = cp.seq() + 1;
                best = Some(cp);
            }
            _ => hi = mid,
        }
    }
    Ok(best)
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
) -> Result<usize, HubError> {
    let mut n = 0;
    loop {
        let after = cursors.get(&shard).cloned();
        let page = hub.audit.audit_entries(account, shard, after.as_deref(), until, PAGE).await?;
        let full = page.len() == PAGE;
        for record in page {
            let key = record.sort_key();
            if last.is_some_and(|l| key > *l) {
                return Ok(n);
            }
            lines.push(Line::Entry(chains.push(record.entry())).to_json());
            cursors.insert(shard, key);
            n += 1;
        }
        if !full {
            return Ok(n);
        }
    }
}

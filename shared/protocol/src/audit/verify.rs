//! Checking an export, line by line (docs/design/audit.md §3): every entry's hash and link,
//! contiguous `seq` per shard, every checkpoint's signature, chain and heads, and the export seal
//! last. The first failure is reported with its line number and, for an entry, its id.

use std::collections::BTreeMap;

use super::{GENESIS, Line, SignedCheckpoint, checkpoint_hash, parse_hash, signature_ok};
use crate::signature::VerifyingKey;

/// The first thing wrong with a file.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("line {line}{}: {reason}", entry.as_ref().map(|e| format!(" (entry {e})")).unwrap_or_default())]
pub struct Failure {
    /// 1-based.
    pub line: usize,
    /// The entry's id, when the line is an entry.
    pub entry: Option<String>,
    pub reason: String,
}

/// What a file that verifies holds.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Report {
    pub account: String,
    pub entries: u64,
    pub checkpoints: u64,
    pub shards: usize,
    pub first_at: Option<String>,
    pub last_at: Option<String>,
}

/// The last entry seen of a shard (or the head an anchor checkpoint gave it).
#[derive(Clone, Copy)]
struct Tip {
    seq: u64,
    hash: [u8; 32],
}

#[derive(Default)]
struct State {
    account: Option<String>,
    tips: BTreeMap<u16, Tip>,
    last_checkpoint: Option<(u64, [u8; 32])>,
    sealed: bool,
    report: Report,
}

/// Verify the lines of an export against the Hub's published keys.
pub fn verify<'a>(lines: impl IntoIterator<Item = &'a str>, keys: &[VerifyingKey]) -> Result<Report, Failure> {
    let mut st = State::default();
    let mut n = 0;
    for (i, text) in lines.into_iter().enumerate() {
        n = i + 1;
        if text.trim().is_empty() {
            continue;
        }
        let fail =
            |entry: Option<&str>, reason: String| Failure { line: i + 1, entry: entry.map(str::to_owned), reason };
        if st.sealed {
            return Err(fail(None, "a line after the export seal".into()));
        }
        let line = Line::parse(text).map_err(|e| fail(None, e))?;
        let account = match &line {
            Line::Entry(e) => &e.entry.account,
            Line::Checkpoint(c) | Line::Export(c) => &c.body.account,
        };
        match &st.account {
            Some(a) if a != account => return Err(fail(None, format!("account `{account}` in a file of `{a}`"))),
            Some(_) => {}
            None => st.account = Some(account.clone()),
        }
        match line {
            Line::Entry(e) => {
                let id = e.entry.id.clone();
                entry(&mut st, e).map_err(|r| fail(Some(&id), r))?;
            }
            Line::Checkpoint(cp) => checkpoint(&mut st, &cp, false, keys).map_err(|r| fail(None, r))?,
            Line::Export(cp) => {
                checkpoint(&mut st, &cp, true, keys).map_err(|r| fail(None, r))?;
                st.sealed = true;
            }
        }
    }
    if !st.sealed {
        return Err(Failure {
            line: n,
            entry: None,
            reason: "no export seal at the end: the file is truncated (or not an export)".into(),
        });
    }
    st.report.account = st.account.unwrap_or_default();
    st.report.shards = st.tips.len();
    Ok(st.report)
}

fn entry(st: &mut State, e: super::ChainedEntry) -> Result<(), String> {
    let prev = parse_hash(&e.prev).ok_or("`prev` is not a 64-digit lowercase hex hash")?;
    let claimed = parse_hash(&e.hash).ok_or("`hash` is not a 64-digit lowercase hex hash")?;
    let shard = e.entry.shard;
    match st.tips.get(&shard) {
        Some(tip) if e.entry.seq != tip.seq + 1 => {
            return Err(format!(
                "shard {shard}: seq {} follows seq {} (an entry is missing or out of order)",
                e.entry.seq, tip.seq
            ));
        }
        Some(tip) if prev != tip.hash => {
            return Err(format!("shard {shard}: `prev` is not the previous entry's hash (deleted or reordered)"));
        }
        Some(_) => {}
        None if e.entry.seq == 0 && prev == GENESIS => {}
        None => {
            return Err(format!(
                "shard {shard}: the chain starts at seq {} with no checkpoint before it to anchor it",
                e.entry.seq
            ));
        }
    }
    let hash = e.entry.chain_hash(&prev);
    if hash != claimed {
        return Err("the entry's content does not match its hash (edited)".into());
    }
    let r = &mut st.report;
    r.entries += 1;
    if r.first_at.is_none() {
        r.first_at = Some(e.entry.at.clone());
    }
    r.last_at = Some(e.entry.at.clone());
    st.tips.insert(shard, Tip { seq: e.entry.seq, hash });
    Ok(())
}

fn checkpoint(st: &mut State, cp: &SignedCheckpoint, export: bool, keys: &[VerifyingKey]) -> Result<(), String> {
    let what = if export { "export seal" } else { "checkpoint" };
    if !signature_ok(cp, export, keys) {
        return Err(format!("{what} {}: the signature does not verify with the Hub's keys", cp.body.seq));
    }
    let prev = parse_hash(&cp.body.prev).ok_or_else(|| format!("{what}: `prev` is not a hash"))?;
    let anchor = st.last_checkpoint.is_none() && st.tips.is_empty() && !export;
    if anchor {
        // The file's first line: its heads are where the file's chains continue from.
        for h in &cp.body.shards {
            if h.count > 0 {
                let hash = parse_hash(&h.head).ok_or("checkpoint: a head is not a hash")?;
                st.tips.insert(h.shard, Tip { seq: h.count - 1, hash });
            }
        }
    } else {
        match (st.last_checkpoint, export) {
            (Some((seq, hash)), false) if cp.body.seq != seq + 1 || prev != hash => {
                return Err(format!("checkpoint {} does not follow checkpoint {seq} (one is missing)", cp.body.seq));
            }
            (Some((_, hash)), true) if prev != hash => {
                return Err("the export seal does not follow the file's last checkpoint".into());
            }
            (None, true) if prev != GENESIS => {
                return Err("the export seal names a checkpoint the file does not hold".into());
            }
            // entries came first, so the file starts at the chains' beginning: so must checkpoints
            (None, false) if cp.body.seq != 0 || prev != GENESIS => {
                return Err(format!("checkpoint {} follows a checkpoint the file does not hold", cp.body.seq));
            }
            _ => {}
        }
        check_heads(st, cp, what)?;
    }
    if !export {
        st.last_checkpoint = Some((cp.body.seq, checkpoint_hash(cp)));
        st.report.checkpoints += 1;
    }
    Ok(())
}

/// Every shard with entries so far is listed, at exactly its last entry.
fn check_heads(st: &State, cp: &SignedCheckpoint, what: &str) -> Result<(), String> {
    let listed: BTreeMap<u16, &super::ShardHead> = cp.body.shards.iter().map(|h| (h.shard, h)).collect();
    for (shard, tip) in &st.tips {
        let Some(h) = listed.get(shard) else {
            return Err(format!("{what} {} omits shard {shard}", cp.body.seq));
        };
        if h.count != tip.seq + 1 {
            return Err(format!(
                "{what} {} covers {} entries of shard {shard}, the file has {} (entries missing or extra)",
                cp.body.seq,
                h.count,
                tip.seq + 1
            ));
        }
        if parse_hash(&h.head) != Some(tip.hash) {
            return Err(format!("{what} {}: shard {shard}'s signed head is not the file's (edited)", cp.body.seq));
        }
    }
    if let Some(h) = cp.body.shards.iter().find(|h| h.count > 0 && !st.tips.contains_key(&h.shard)) {
        return Err(format!("{what} {} covers shard {} of which the file has no entry", cp.body.seq, h.shard));
    }
    Ok(())
}

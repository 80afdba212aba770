//! Building the chains: what the Hub's sealer and export both do with stored entries, in order
//! — number them in their shard, link them, sign checkpoints over the heads, seal an export.

use std::collections::BTreeMap;

use super::{ChainedEntry, Checkpoint, Entry, GENESIS, ShardHead, SignedCheckpoint, checkpoint_hash, parse_hash, sign};
use crate::signature::SigningKey;

/// The chains of one account as far as they have been built.
#[derive(Debug, Clone, Default)]
pub struct Chainer {
    account: String,
    /// Per shard: the last entry's `seq` and hash.
    tips: BTreeMap<u16, (u64, [u8; 32])>,
    /// The last checkpoint's `seq` and hash.
    last: Option<(u64, [u8; 32])>,
}

impl Chainer {
    /// Chains that start empty (no checkpoint yet).
    pub fn new(account: &str) -> Self {
        Self { account: account.to_owned(), ..Self::default() }
    }

    /// Chains continuing from a checkpoint (the last one made, or an export's anchor). `None` if
    /// one of its heads is not a hash.
    pub fn after(cp: &SignedCheckpoint) -> Option<Self> {
        let mut tips = BTreeMap::new();
        for h in cp.body.shards.iter().filter(|h| h.count > 0) {
            tips.insert(h.shard, (h.count - 1, parse_hash(&h.head)?));
        }
        Some(Self { account: cp.body.account.clone(), tips, last: Some((cp.body.seq, checkpoint_hash(cp))) })
    }

    /// Link `entry` onto its shard's chain (its `seq` is set here).
    pub fn push(&mut self, mut entry: Entry) -> ChainedEntry {
        let (seq, prev) = self.tips.get(&entry.shard).map_or((0, GENESIS), |(s, h)| (s + 1, *h));
        entry.seq = seq;
        entry.account.clone_from(&self.account);
        let chained = entry.chained(&prev);
        let hash = parse_hash(&chained.hash).unwrap_or(GENESIS);
        self.tips.insert(chained.entry.shard, (seq, hash));
        chained
    }

    /// Every shard's head.
    pub fn heads(&self) -> Vec<ShardHead> {
        self.tips
            .iter()
            .map(|(shard, (seq, h))| ShardHead { shard: *shard, count: seq + 1, head: hex::encode(h) })
            .collect()
    }

    fn body(&self, seq: u64, at: &str, key_id: &str) -> Checkpoint {
        Checkpoint {
            account: self.account.clone(),
            seq,
            at: at.to_owned(),
            prev: hex::encode(self.last.map_or(GENESIS, |(_, h)| h)),
            shards: self.heads(),
            key_id: key_id.to_owned(),
        }
    }

    /// The next checkpoint over the heads as they stand.
    pub fn checkpoint(&mut self, at: &str, key_id: &str, key: &SigningKey) -> SignedCheckpoint {
        let seq = self.last.map_or(0, |(s, _)| s + 1);
        let cp = sign(self.body(seq, at, key_id), false, key);
        self.last = Some((seq, checkpoint_hash(&cp)));
        cp
    }

    /// An export's last line: the heads as they stand, after the last checkpoint.
    pub fn seal(&self, at: &str, key_id: &str, key: &SigningKey) -> SignedCheckpoint {
        sign(self.body(self.last.map_or(0, |(s, _)| s), at, key_id), true, key)
    }
}

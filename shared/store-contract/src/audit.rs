//! Checks for the [`AuditStore`](ma2h_core::audit::store::AuditStore) (issue 42): entries come back
//! per shard in sort-key order, after a key and up to a time, a page at a time; a checkpoint is
//! stored once per `seq` (a second sealer's is refused) and read back latest first or from a
//! `seq` on; the account is listed among those with a ledger.

use std::collections::BTreeMap;

use ma2h_core::audit::store::{AuditRecord, StoredCheckpoint};
use ma2h_protocol::audit::{Checkpoint, SignedCheckpoint};
use serde_json::{Map, json};

use crate::Store;
use crate::fixtures::{account, at};

fn record(id: &str, shard: u16, seconds: i64) -> AuditRecord {
    AuditRecord {
        id: id.to_owned(),
        account: account("ledger"),
        shard,
        at: at(seconds),
        kind: "message.resolved".into(),
        principal: "human:alice".into(),
        target: Some("msg_01".into()),
        digest: None,
        detail: json!({"resolution": "answered"}).as_object().cloned().unwrap_or_else(Map::new),
    }
}

fn checkpoint(seq: u64, seconds: i64, head: &str) -> StoredCheckpoint {
    let body = Checkpoint {
        account: "ledger".into(),
        seq,
        at: ma2h_protocol::time::format(at(seconds)),
        prev: "0".repeat(64),
        shards: vec![],
        key_id: head.to_owned(),
    };
    StoredCheckpoint {
        signed: SignedCheckpoint { body, signature: "sig".into() },
        at: at(seconds),
        cursors: BTreeMap::from([(0, format!("{head}-cursor"))]),
        anchor: false,
    }
}

pub async fn audit_entries_are_read_per_shard_in_order_and_checkpoints_stored_once<S: Store>(store: S) {
    let acct = account("ledger");
    // written out of order, over two shards
    let records = [record("aud_c", 0, 30), record("aud_a", 0, 10), record("aud_x", 1, 20), record("aud_b", 0, 20)];
    store.append_audit(&records).await.unwrap();
    store.append_audit(&[record("aud_d", 0, 40)]).await.unwrap();
    // a retried append keeps one entry, unchanged
    let mut again = record("aud_d", 0, 40);
    store.append_audit(std::slice::from_ref(&again)).await.unwrap();
    again.principal = "human:mallory".into();
    store.append_audit(&[again]).await.unwrap();

    let ids = |v: Vec<AuditRecord>| v.into_iter().map(|r| r.id).collect::<Vec<_>>();
    let all = store.audit_entries(&acct, 0, None, at(100), 100).await.unwrap();
    assert_eq!(all[0], records[1], "a record round-trips");
    assert_eq!(all[3].principal, "human:alice", "never overwritten");
    assert_eq!(ids(all), ["aud_a", "aud_b", "aud_c", "aud_d"], "shard 0 in time order, one of each");
    assert_eq!(ids(store.audit_entries(&acct, 1, None, at(100), 100).await.unwrap()), ["aud_x"]);
    assert!(store.audit_entries(&acct, 2, None, at(100), 100).await.unwrap().is_empty());
    let after = record("aud_b", 0, 20).sort_key();
    assert_eq!(
        ids(store.audit_entries(&acct, 0, Some(&after), at(100), 100).await.unwrap()),
        ["aud_c", "aud_d"],
        "strictly after the key"
    );
    assert_eq!(ids(store.audit_entries(&acct, 0, None, at(30), 100).await.unwrap()), ["aud_a", "aud_b", "aud_c"]);
    assert_eq!(ids(store.audit_entries(&acct, 0, None, at(100), 2).await.unwrap()), ["aud_a", "aud_b"], "a page");
    assert!(store.audit_entries(&account("other"), 0, None, at(100), 100).await.unwrap().is_empty());

    assert_eq!(store.last_audit_checkpoint(&acct).await.unwrap(), None);
    assert!(store.put_audit_checkpoint(&acct, &checkpoint(0, 50, "first")).await.unwrap());
    assert!(!store.put_audit_checkpoint(&acct, &checkpoint(0, 51, "rival")).await.unwrap(), "one per seq");
    assert!(store.put_audit_checkpoint(&acct, &checkpoint(1, 60, "second")).await.unwrap());
    assert_eq!(store.last_audit_checkpoint(&acct).await.unwrap(), Some(checkpoint(1, 60, "second")));
    let from = |seq| store.audit_checkpoints(&acct, seq, 10);
    assert_eq!(from(0).await.unwrap(), [checkpoint(0, 50, "first"), checkpoint(1, 60, "second")]);
    assert_eq!(from(1).await.unwrap(), [checkpoint(1, 60, "second")]);
    assert!(store.last_audit_checkpoint(&account("other")).await.unwrap().is_none());

    assert!(store.audit_accounts().await.unwrap().contains(&acct), "the account is listed");

    // retention: checkpoint 1 covers shard 0 up to `aud_b` and shard 1 up to `aud_x`
    let covering = |seq: u64| StoredCheckpoint {
        cursors: BTreeMap::from([(0, record("aud_b", 0, 20).sort_key()), (1, record("aud_x", 1, 20).sort_key())]),
        ..checkpoint(seq, 60, "second")
    };
    let keep = covering(1);
    assert_eq!(store.prune_audit(&acct, &keep, 2).await.unwrap(), 2, "a page of the covered entries");
    let anchored = store.last_audit_checkpoint(&acct).await.unwrap().unwrap();
    assert!(anchored.anchor, "kept as the anchor");
    assert_eq!(from(0).await.unwrap().len(), 1, "older checkpoints gone");
    assert_eq!(store.prune_audit(&acct, &keep, 2).await.unwrap(), 1, "the rest");
    assert_eq!(store.prune_audit(&acct, &keep, 2).await.unwrap(), 0, "nothing left to prune");
    assert_eq!(ids(store.audit_entries(&acct, 0, None, at(100), 100).await.unwrap()), ["aud_c", "aud_d"]);
    assert!(store.audit_entries(&acct, 1, None, at(100), 100).await.unwrap().is_empty());
}

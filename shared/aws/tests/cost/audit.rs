//! The audit ledger on DynamoDB (issue 42, docs/COST.md "Audit ledger"): appending an entry (one
//! `PutItem`; the account's roster item once per process), a checkpoint (the last one, one
//! `Query` per shard, one conditional `PutItem`), and an export (the checkpoints, the shards each
//! checkpoint covers, then every shard after the last one).

use chrono::Duration;
use ma2h_core::audit::seal::{Sealed, seal_account};
use ma2h_core::audit::store::AuditRecord;
use ma2h_core::audit::{SETTLE, SHARDS};
use ma2h_protocol::ids::AccountId;

use crate::env::*;
use crate::metering::Tally;

fn entry(e: &Env, n: usize, shard: u16) -> AuditRecord {
    AuditRecord {
        id: format!("aud_cost{n:03}"),
        account: AccountId::parse("acme").unwrap(),
        shard,
        at: e.dep.hub.clock.now(),
        kind: "message.resolved".into(),
        principal: "human:alice".into(),
        target: Some("msg_01".into()),
        digest: None,
        detail: serde_json::Map::new(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_of_the_audit_ledger_append_seal_and_export() {
    with_env("audit", false, |e| async move {
        let hub = &e.dep.hub;
        let acct = AccountId::parse("acme").unwrap();
        e.phase().await;
        let mut rows: Vec<(String, Tally)> = Vec::new();
        let mut phase = |name: &str, t: Tally, expected: &[(&str, u64)]| {
            crate::cost_eq!(t.requests, expect(expected), "{name}");
            rows.push((name.to_owned(), t));
        };

        hub.audit.append_audit(&[entry(&e, 0, 0)]).await.unwrap();
        phase("append the account's first entry (and list the account)", e.phase().await, &[("dynamodb:PutItem", 2)]);
        hub.audit.append_audit(&[entry(&e, 1, 1)]).await.unwrap();
        phase("append an entry", e.phase().await, &[("dynamodb:PutItem", 1)]);
        hub.audit.append_audit(&[entry(&e, 2, 1)]).await.unwrap();
        e.phase().await;

        e.clock.advance(SETTLE + Duration::seconds(1));
        let sealed = seal_account(hub, &acct).await.unwrap();
        assert_eq!(sealed, Sealed::Checkpoint { seq: 0, entries: 3 });
        let shards = u64::from(SHARDS);
        phase(
            "a checkpoint (the last one, every shard, the conditional put)",
            e.phase().await,
            &[("dynamodb:Query", 1 + shards), ("dynamodb:PutItem", 1)],
        );

        let lines = ma2h_core::audit::export::export(hub, &acct, None, None).await.unwrap();
        assert_eq!(lines.len(), 3 + 1 + 1);
        // the checkpoints; the two shards checkpoint 0 covers; then every shard after it
        phase(
            "an export (one checkpoint, two shards with entries)",
            e.phase().await,
            &[("dynamodb:Query", 1 + 2 + shards)],
        );
        print_table("The audit ledger (counted on the wire, asserted)", &rows);
    })
    .await;
}

//! The audit ledger on DynamoDB (issue 42, docs/COST.md "Audit ledger"): appending an entry (one
//! `PutItem`; the account's roster item once per process), a checkpoint (the last one, one
//! `Query` per shard, one conditional `PutItem`), and an export (the checkpoints, the shards each
//! checkpoint covers, then every shard after the last one).

use axum::http::StatusCode;
use chrono::Duration;
use ma2h_core::audit::seal::{Sealed, seal_account};
use ma2h_core::audit::store::AuditRecord;
use ma2h_core::audit::{SETTLE, SHARDS};
use ma2h_protocol::ids::AccountId;

use crate::env::*;
use crate::metering::Tally;
use crate::support::event;
use serde_json::json;

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
        // retention: past it, the checkpoint is kept as the anchor and what it covers deleted
        e.clock.advance(Duration::days(i64::from(hub.settings.audit.retention_days) + 1));
        assert_eq!(ma2h_core::audit::retention::prune(hub, &acct).await.unwrap(), 3);
        phase(
            "retention (once a day): find the checkpoint, keep it as the anchor, delete the rest",
            e.phase().await,
            &[("dynamodb:Query", 1 + 1 + 2), ("dynamodb:PutItem", 1), ("dynamodb:BatchWriteItem", 1)],
        );
        print_table("The audit ledger (counted on the wire, asserted)", &rows);
    })
    .await;
}

/// With the ledger on (the default), what each recorded event adds to its leg's requests: the
/// write that commits the event becomes one `TransactWriteItems` carrying the entry (docs/COST.md
/// "Audit ledger"); the legs' own tables are measured with it off.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_ledger_on_an_events_write_carries_its_entry_in_one_transaction() {
    let Some(e) = env_with("audit-on", true, ma2h_store_dynamodb::shards::DEFAULT_SHARDS, true).await else { return };
    let e = std::sync::Arc::new(e);
    let body = {
        let e = e.clone();
        async move {
            let (url, _hits) = receiver().await;
            let (status, _) = call(&e, event("POST", "/v1/messages", &e.agent, Some(&notify("warm")))).await;
            assert_eq!(status, StatusCode::ACCEPTED);
            e.phase().await;
            let mut rows: Vec<(String, Tally)> = Vec::new();
            let mut phase = |name: &str, t: Tally, expected: &[(&str, u64)]| {
                crate::cost_eq!(t.requests, expect(expected), "{name}");
                rows.push((name.to_owned(), t));
            };

            let cb = json!({"mode": "push", "url": url, "auth": {"scheme": "hmac", "secret_ref": "cb"}});
            let (status, ack) =
                call(&e, event("POST", "/v1/messages", &e.agent, Some(&ask("a1", Some(cb), None)))).await;
            assert_eq!(status, StatusCode::ACCEPTED, "{ack}");
            let id = ack["id"].as_str().unwrap().to_owned();
            // as with the ledger off, but the message's PutItem is a transaction with its entry
            phase(
                "submit (ask, push callback)",
                e.phase().await,
                &[
                    ("dynamodb:GetItem", 1),
                    ("dynamodb:Query", 1),
                    ("dynamodb:UpdateItem", 2),
                    ("dynamodb:PutItem", 1),
                    ("dynamodb:TransactWriteItems", 1),
                ],
            );
            let answer = json!({"resolution": "answered", "value": "ship"});
            let (status, res) =
                call(&e, event("POST", &format!("/v1/messages/{id}/resolve"), &e.operator, Some(&answer))).await;
            assert_eq!(status, StatusCode::OK, "{res}");
            // the tombstone, the CAS and the entry in one transaction; the counted check is a read
            phase(
                "resolve (operator)",
                e.phase().await,
                &[
                    ("dynamodb:GetItem", 2),
                    ("dynamodb:Query", 1),
                    ("dynamodb:TransactWriteItems", 1),
                    ("dynamodb:UpdateItem", 1),
                    ("sqs:SendMessage", 1),
                ],
            );
            assert_eq!(deliver_via_esm(&e).await, (1, 0));
            // the push track and its `push.delivered` entry
            phase(
                "push (deliver function)",
                e.phase().await,
                &[("dynamodb:Query", 2), ("dynamodb:TransactWriteItems", 1)],
            );
            let acct = AccountId::parse("acme").unwrap();
            let lines = ma2h_core::audit::export::export(&e.dep.hub, &acct, None, None).await.unwrap();
            let kinds: Vec<String> = lines
                .iter()
                .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
                .filter(|v| v["type"] == "entry" && v["target"] == id.as_str())
                .map(|v| v["kind"].as_str().unwrap_or_default().to_owned())
                .collect();
            assert_eq!(kinds.len(), 3, "{kinds:?}");
            print_table("With the audit ledger on (counted on the wire, asserted)", &rows);
            // the entries spread over the account's audit shards: none near a partition's limit
            // at the goal's 20,000 asks/s on one account (the legs' own partitions: heat.rs)
            let phases: Vec<Tally> = rows.iter().map(|(_, t)| t.clone()).collect();
            crate::heat::check_family("pushed ask, answered, with the audit ledger on", 20_000.0, &phases, "AUD#");

            // A lapsed lease: the sweep's write clearing the session's bounce flag becomes a
            // transaction carrying `session.expired`. The clock is put at the start of a sealing
            // window, whose first sweep (sealing) runs before the one measured.
            let window = i64::from(e.dep.hub.settings.audit.seal_minutes) * 60;
            let into = e.dep.hub.clock.now().timestamp().rem_euclid(window);
            e.clock.advance(Duration::seconds(window - into + 1));
            ma2h_aws::handlers::sweep(&e.dep).await.unwrap();
            let (status, reg) =
                call(&e, event("POST", "/v1/sessions", &e.agent, Some(&json!({"ttl_seconds": 60})))).await;
            assert_eq!(status, StatusCode::CREATED, "{reg}");
            e.clock.advance(Duration::seconds(61));
            e.phase().await;
            let outcome = ma2h_aws::handlers::sweep(&e.dep).await.unwrap();
            assert_eq!((outcome.sessions_expired, outcome.audit_checkpoints), (1, 0), "{outcome:?}");
            // the sweep's index Queries; the lapse (UpdateItem); the session's owed bounce (its
            // record, its mailbox: nothing queued); the flag cleared with the entry (one
            // transaction); the sealing window's counter (already claimed)
            let lapse = e.phase().await;
            crate::cost_eq!(
                lapse.requests,
                expect(&[
                    ("dynamodb:Query", SWEEP_QUERIES + 1),
                    ("dynamodb:BatchGetItem", 1),
                    ("dynamodb:UpdateItem", 2),
                    ("dynamodb:TransactWriteItems", 1),
                ]),
                "sweep with a lapsed lease, ledger on"
            );
            print_table("A lapsed lease with the audit ledger on", &[("sweep with a lapsed lease".to_owned(), lapse)]);
        }
    };
    let result = tokio::spawn(body).await;
    let (table, url) = (e.dep.store.table().to_owned(), e.dep.queue.queue_url().to_owned());
    let _ = e.raw.delete_table().table_name(table).send().await;
    let _ = e.esm_sqs.delete_queue().queue_url(url).send().await;
    if let Err(err) = result {
        std::panic::resume_unwind(err.into_panic());
    }
}

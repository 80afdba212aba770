//! Upgrading in place (issue 38, deliverable 7): a table written in the layout before issue 38 —
//! the `retain` index, every sweeper and listing partition unsharded (`DUE`, `PUSH`, `MBXDUE`,
//! `SESSDUE`, `SESSACCT#{account}`, `{account}#open`), `retain` keys on what retention ends, no
//! open counters — is taken over by this release without losing anything: every message still
//! reads and lists in order, each due expiry, lost push, lapsed lease and past-deadline entry is
//! still found by the sweeper, and `backfill_counts` brings the old open messages into the counts
//! and the §8.6 recount. Needs moto (`make test` starts it).

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use chrono::Duration;
use ma2h_core::messages::listing::{ListFilter, ListQuery};
use ma2h_core::messages::records::Lookup;
use ma2h_core::ports::{MailboxStore, MessageStore, SessionStore};
use ma2h_protocol::lifecycle::Status;
use ma2h_store_contract::fixtures::{account, agent, ask, at, expiring_ask, terminal};
use ma2h_store_contract::{directive, mailbox, session};
use ma2h_store_dynamodb::{DynamoStore, Shards, provision};
use ma2h_test_support::{dynamodb as client, unique};
use serde_json::{Value, json};

type Item = HashMap<String, AttributeValue>;

/// The table definition before issue 38: today's plus the `retain` index.
fn previous_definition() -> Value {
    let mut def: Value = serde_json::from_str(provision::TABLE_DEFINITION).unwrap();
    for (name, kind) in [("retain_pk", "S"), ("retain_sk", "N")] {
        def["AttributeDefinitions"].as_array_mut().unwrap().push(json!({"AttributeName": name, "AttributeType": kind}));
    }
    def["GlobalSecondaryIndexes"].as_array_mut().unwrap().push(json!({
        "IndexName": "retain",
        "KeySchema": [{"AttributeName": "retain_pk", "KeyType": "HASH"}, {"AttributeName": "retain_sk", "KeyType": "RANGE"}],
        "Projection": {"ProjectionType": "KEYS_ONLY"}
    }));
    def
}

/// `{base}#{NNN}` → `{base}`: the partition the layout before sharding wrote.
fn unsharded(v: &str) -> Option<String> {
    let (base, shard) = v.rsplit_once('#')?;
    (shard.len() == 3 && shard.chars().all(|c| c.is_ascii_digit())).then(|| base.to_owned())
}

/// Rewrite an item as the layout before issue 38 wrote it.
fn as_previous(mut item: Item) -> Item {
    for attr in ["due_pk", "push_pk", "list_pk"] {
        if let Some(base) = item.get(attr).and_then(|v| v.as_s().ok()).and_then(|v| unsharded(v)) {
            item.insert(attr.into(), AttributeValue::S(base));
        }
    }
    // no counters: nothing counted, no `@open` partition
    item.remove("cnt");
    if item.get("mbx_pk").and_then(|v| v.as_s().ok()).is_some_and(|p| p.ends_with("#@open")) {
        item.remove("mbx_pk");
        item.remove("mbx_sk");
    }
    // a session's lease was `expires_at`
    if let Some(lease) = item.remove("lease_until") {
        item.insert("expires_at".into(), lease);
    }
    // retention by `retain` keys
    let sk = item["sk"].as_s().unwrap().clone();
    let family = match sk.as_str() {
        "MSG" => Some("RET"),
        "ENTRY" if item.contains_key("closed_at") => Some("MBXRET"),
        "SESSION" if item.contains_key("end_kind") => Some("SESSRET"),
        _ => None,
    };
    if let (Some(family), Some(r)) = (family, item.get("retain_until").cloned()) {
        item.insert("retain_pk".into(), AttributeValue::S(family.into()));
        item.insert("retain_sk".into(), r);
    }
    item
}

async fn rewrite_as_previous(client: &aws_sdk_dynamodb::Client, table: &str) {
    let items: Vec<Item> = client.scan().table_name(table).send().await.unwrap().items.unwrap_or_default();
    for item in items {
        if item["pk"].as_s().unwrap().starts_with("OPENCNT#") {
            client
                .delete_item()
                .table_name(table)
                .key("pk", item["pk"].clone())
                .key("sk", item["sk"].clone())
                .send()
                .await
                .unwrap();
            continue;
        }
        client.put_item().table_name(table).set_item(Some(as_previous(item))).send().await.unwrap();
    }
}

fn ids(page: &ma2h_core::messages::listing::ListPage) -> Vec<String> {
    page.items.iter().map(|s| s.id.to_string()).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_table_in_the_layout_before_issue_38_is_upgraded_in_place_and_loses_nothing() {
    let Some(client) = client().await else { return };
    let table = unique("upgrade38");
    provision::create_table_from(&client, &table, &previous_definition()).await.unwrap();
    let store = DynamoStore::new(client.clone(), &table).with_shards(Shards::new(4));
    let acct = account("acme");

    // What the deployment held: open asks (one due for expiry), an answered one whose push is
    // owed, a live session about to lapse, a directive past its deadline.
    let open: Vec<_> = (0..5).map(|i| ask(&acct, &agent("bot"), at(i))).collect();
    let due = expiring_ask(&acct, &agent("bot"), at(10), at(60));
    let answered = ask(&acct, &agent("bot"), at(11));
    for m in open.iter().chain([&due, &answered]) {
        store.insert_message(m, None, None, m.created_at).await.unwrap();
    }
    let w = terminal(Status::Answered, at(20));
    let owed = ma2h_core::messages::records::TerminalWrite { push: true, announced: false, ..w };
    store.complete(&acct, &answered.id, &owed).await.unwrap();
    let lapsing = session("acme", "bot", at(0));
    store.register(&lapsing, 16).await.unwrap();
    let renewing = session("acme", "bot", at(0));
    store.register(&renewing, 16).await.unwrap();
    let mb = mailbox("acme", "bot");
    let mut late = directive(&mb, at(0));
    late.deadline = at(30);
    store.enqueue(&late, 10).await.unwrap();

    rewrite_as_previous(&client, &table).await;
    let items = client.scan().table_name(&table).send().await.unwrap().items.unwrap_or_default();
    let has =
        |attr: &str, v: &str| items.iter().any(|i| i.get(attr).and_then(|x| x.as_s().ok()).is_some_and(|x| x == v));
    for (attr, v) in [("list_pk", "acme#open"), ("list_pk", "acme#done"), ("due_pk", "DUE"), ("push_pk", "PUSH")] {
        assert!(has(attr, v), "the old layout's {attr} = {v}");
    }
    assert!(has("due_pk", "SESSDUE") && has("due_pk", "MBXDUE") && has("retain_pk", "RET"));
    assert!(!items.iter().any(|i| i.contains_key("cnt")), "nothing counted");
    assert!(!items.iter().any(|i| i.contains_key("lease_until")), "leases as `expires_at`");
    // The upgrade: provisioning keeps the table (and its now unused `retain` index).
    provision::create_table(&client, &table).await.unwrap();

    // Every message reads, and lists in order, open and done.
    for m in open.iter().chain([&due, &answered]) {
        assert!(matches!(store.get_message(&acct, &m.id).await.unwrap(), Lookup::Found(_)), "{}", m.id);
    }
    let q = ListQuery { open: true, filter: ListFilter::default(), after: None, limit: 50 };
    let mut want: Vec<String> = open.iter().chain([&due]).map(|m| m.id.to_string()).collect();
    want.sort_by_key(|id| open.iter().chain([&due]).position(|m| m.id.to_string() == *id));
    assert_eq!(ids(&store.list_messages(&acct, &q).await.unwrap()), want, "the unsharded open partition is read");
    let done = ListQuery { open: false, ..q.clone() };
    assert_eq!(ids(&store.list_messages(&acct, &done).await.unwrap()), vec![answered.id.to_string()]);

    // The sweeper finds what is due in the unsharded partitions.
    assert_eq!(store.due_expiries(at(61), 10).await.unwrap(), vec![(acct.clone(), due.id.clone())]);
    assert_eq!(store.claim_due_pushes(at(21), at(200), 10).await.unwrap(), vec![(acct.clone(), answered.id.clone())]);
    // A session from before renews (its lease moves to `lease_until`) and reads back; the other
    // lapses and the sweeper expires it at its old lease end.
    let renew_at = lapsing.expires_at - Duration::seconds(1);
    let renewed = store.renew_session(&acct, &agent("bot"), &renewing.id, renew_at).await.unwrap().expect("renewed");
    assert_eq!(renewed.expires_at, renew_at + Duration::seconds(i64::from(renewing.ttl_seconds)));
    assert_eq!(store.get_session(&acct, &renewing.id).await.unwrap().unwrap().expires_at, renewed.expires_at);
    let retention = Duration::days(1);
    assert_eq!(store.expire_due_sessions(lapsing.expires_at + Duration::seconds(1), retention, 10).await.unwrap(), 1);
    let ended = store.get_session(&acct, &lapsing.id).await.unwrap().unwrap();
    assert_eq!(ended.end.map(|e| e.at), Some(lapsing.expires_at), "ended at its old lease end");
    assert_eq!(ended.retain_until, Some(lapsing.expires_at + retention));
    let closed = store.close_due_entries(at(31), at(1000), 10).await.unwrap();
    assert_eq!(closed.iter().map(|e| e.key.clone()).collect::<Vec<_>>(), vec![late.key.clone()]);
    assert_eq!(store.list_sessions(&acct, None, 10).await.unwrap().len(), 2, "the unsharded account list is read");

    // Counts: the old open messages are not counted until the backfill, then exactly once.
    assert_eq!(store.open_counts(&acct, &ListFilter::default()).await.unwrap().total, 0);
    assert_eq!(store.count_open(&acct, &agent("bot")).await.unwrap(), 0);
    assert_eq!(store.backfill_counts().await.unwrap(), 6, "five open asks and the due one");
    assert_eq!(store.backfill_counts().await.unwrap(), 0);
    assert_eq!(store.open_counts(&acct, &ListFilter::default()).await.unwrap().total, 6);
    assert_eq!(store.count_open(&acct, &agent("bot")).await.unwrap(), 6);
    // An old message's terminal now subtracts it, once, and moves it to a sharded done entry.
    store.complete(&acct, &open[0].id, &terminal(Status::Answered, at(40))).await.unwrap();
    assert_eq!(store.open_counts(&acct, &ListFilter::default()).await.unwrap().total, 5);
    assert_eq!(store.list_messages(&acct, &done).await.unwrap().items.len(), 2);
}

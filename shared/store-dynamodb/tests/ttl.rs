//! Retention on DynamoDB is the table's TTL (issue 38): a message, a closed mailbox entry and an
//! ended session whose bounce is done carry a `ttl` at their retention and no `retain` index
//! keys, so DynamoDB deletes them — and their index entries — for free, and the store's purge
//! calls delete nothing. A session's TTL waits for its bounce: one set earlier could delete a
//! session whose bounce is still owed. Needs moto (`make test` starts it).

use aws_sdk_dynamodb::types::AttributeValue;
use chrono::Duration;
use ma2h_core::ports::{MailboxStore, MessageStore, SessionStore};
use ma2h_core::sessions::model::{EndKind, SessionEnd};
use ma2h_protocol::lifecycle::Status;
use ma2h_protocol::time::Timestamp;
use ma2h_store_contract::fixtures::{account, agent, ask, at, terminal};
use ma2h_store_contract::{directive, mailbox, session};
use ma2h_store_dynamodb::{DynamoStore, Shards, provision};
use ma2h_test_support::{dynamodb as client, unique};

type Item = std::collections::HashMap<String, AttributeValue>;

async fn raw(client: &aws_sdk_dynamodb::Client, table: &str, pk: String, sk: &str) -> Item {
    let out = client
        .get_item()
        .table_name(table)
        .key("pk", AttributeValue::S(pk))
        .key("sk", AttributeValue::S(sk.into()))
        .consistent_read(true)
        .send()
        .await
        .unwrap();
    out.item.expect("the item")
}

fn ttl(item: &Item) -> Option<i64> {
    item.get("ttl").and_then(|v| v.as_n().ok()).map(|n| n.parse().unwrap())
}

/// The TTL second for `t`: never before it.
fn second_of(t: Timestamp) -> i64 {
    t.timestamp() + i64::from(t.timestamp_subsec_nanos() > 0)
}

fn no_retain_keys(item: &Item) {
    assert!(!item.contains_key("retain_pk") && !item.contains_key("retain_sk"), "no `retain` index entry: {item:?}");
}

#[tokio::test]
async fn what_retention_ends_carries_a_ttl_and_no_retain_index_entry() {
    let Some(client) = client().await else { return };
    let table = unique("ttl");
    provision::create_table(&client, &table).await.unwrap();
    let store = DynamoStore::new(client.clone(), &table).with_shards(Shards::new(2));
    assert!(store.native_ttl());

    // A message: its TTL is its retention, from the terminal write on.
    let acct = account("acme");
    let m = ask(&acct, &agent("bot"), at(0));
    store.insert_message(&m, None, None, at(0)).await.unwrap();
    assert_eq!(ttl(&raw(&client, &table, format!("MSG#acme#{}", m.id), "MSG").await), None, "open: kept");
    let w = terminal(Status::Answered, at(5));
    store.complete(&acct, &m.id, &w).await.unwrap();
    let item = raw(&client, &table, format!("MSG#acme#{}", m.id), "MSG").await;
    assert_eq!(ttl(&item), Some(second_of(w.retain_until)));
    no_retain_keys(&item);
    assert_eq!(store.purge(w.retain_until + Duration::days(400), 100).await.unwrap(), 0, "the TTL's, not ours");

    // A mailbox entry: closed at its deadline, its TTL is its retention.
    let mb = mailbox("acme", "bot");
    let mut e = directive(&mb, at(0));
    e.deadline = at(10);
    store.enqueue(&e, 10).await.unwrap();
    let retain = at(100) + Duration::milliseconds(250);
    assert_eq!(store.close_due_entries(at(20), retain, 10).await.unwrap().len(), 1);
    let item = raw(&client, &table, format!("MBX#acme#{}", e.key), "ENTRY").await;
    assert_eq!(ttl(&item), Some(second_of(retain)), "rounded up: never before retention");
    no_retain_keys(&item);
    assert_eq!(store.purge_entries(at(1000), 10).await.unwrap(), 0);

    // A session: no TTL while its bounce is owed, its retention once the bounce is done.
    let s = session("acme", "bot", at(0));
    store.register(&s, 16).await.unwrap();
    let end = SessionEnd { at: at(5), kind: EndKind::Closed };
    store.end_session(&s.account, &s.id, end, at(500), None).await.unwrap();
    let pk = format!("SESS#acme#{}", s.id);
    let item = raw(&client, &table, pk.clone(), "SESSION").await;
    assert_eq!(ttl(&item), None, "its bounce is owed: the TTL must not delete it yet");
    no_retain_keys(&item);
    store.bounce_done(&s.account, &s.id).await.unwrap();
    let item = raw(&client, &table, pk, "SESSION").await;
    assert_eq!(ttl(&item), Some(at(500).timestamp()));
    assert!(!item.contains_key("ttl_later"));
    assert_eq!(store.purge_sessions(at(1000), 10).await.unwrap(), 0);
}

#[tokio::test]
async fn a_session_ended_before_the_upgrade_keeps_its_ttl_when_its_bounce_is_done() {
    let Some(client) = client().await else { return };
    let table = unique("ttl-old");
    provision::create_table(&client, &table).await.unwrap();
    let store = DynamoStore::new(client.clone(), &table).with_shards(Shards::new(2));
    let s = session("acme", "bot", at(0));
    store.register(&s, 16).await.unwrap();
    let end = SessionEnd { at: at(5), kind: EndKind::Closed };
    store.end_session(&s.account, &s.id, end, at(500), None).await.unwrap();
    // As the release before wrote it: a TTL a day past retention at the end, no `ttl_later`.
    let pk = format!("SESS#acme#{}", s.id);
    let old_ttl = at(500).timestamp() + 86_400;
    client
        .update_item()
        .table_name(&table)
        .key("pk", AttributeValue::S(pk.clone()))
        .key("sk", AttributeValue::S("SESSION".into()))
        .update_expression("SET #ttl = :t REMOVE ttl_later")
        .expression_attribute_names("#ttl", "ttl")
        .expression_attribute_values(":t", AttributeValue::N(old_ttl.to_string()))
        .send()
        .await
        .unwrap();
    store.bounce_done(&s.account, &s.id).await.unwrap();
    let item = raw(&client, &table, pk, "SESSION").await;
    assert_eq!(ttl(&item), Some(old_ttl));
    assert_eq!(item.get("bounce_pending"), Some(&AttributeValue::Bool(false)));
}

#[tokio::test]
async fn past_its_retention_a_record_reads_as_purged_before_the_ttl_deletes_it() {
    use std::sync::Arc;
    let Some(client) = client().await else { return };
    let table = unique("ttl-read");
    provision::create_table(&client, &table).await.unwrap();
    let clock = Arc::new(ma2h_core::ports::ManualClock::new(at(0)));
    let store = DynamoStore::new(client.clone(), &table).with_shards(Shards::new(2)).with_clock(clock.clone());

    let s = session("acme", "bot", at(0));
    store.register(&s, 16).await.unwrap();
    let end = SessionEnd { at: at(5), kind: EndKind::Closed };
    store.end_session(&s.account, &s.id, end, at(100), None).await.unwrap();
    let mb = mailbox("acme", "bot");
    let mut e = directive(&mb, at(0));
    e.deadline = at(10);
    store.enqueue(&e, 10).await.unwrap();
    store.close_due_entries(at(20), at(100), 10).await.unwrap();

    clock.advance(Duration::seconds(150));
    // Its bounce is still owed: the session stays, whatever its retention says.
    assert!(store.get_session(&s.account, &s.id).await.unwrap().is_some());
    store.bounce_done(&s.account, &s.id).await.unwrap();
    assert_eq!(store.get_session(&s.account, &s.id).await.unwrap(), None, "read as purged");
    assert!(store.list_sessions(&s.account, None, 10).await.unwrap().is_empty());
    assert_eq!(store.get_entry(&mb.account, &e.key).await.unwrap(), None, "read as purged");
    assert!(store.recent_entries(&mb, 10).await.unwrap().is_empty());
    // Still there for DynamoDB's TTL to delete, for free.
    raw(&client, &table, format!("SESS#acme#{}", s.id), "SESSION").await;
    raw(&client, &table, format!("MBX#acme#{}", e.key), "ENTRY").await;
}

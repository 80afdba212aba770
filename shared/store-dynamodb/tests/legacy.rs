//! Items written before 2026-12-04 (issue 19 changed the message item: a deflated body, the push
//! track under non-projected names, no repeated account/id) are still read, claimed and updated:
//! an upgrade needs no migration (docs/dynamodb.md). The item below is what the earlier codec
//! wrote for a resolved push-mode ask. Needs moto (`AWS_ENDPOINT_URL`), like `contract.rs`.

use std::collections::HashMap;

use aws_sdk_dynamodb::types::AttributeValue;
use ma2h_core::messages::records::{Lookup, PushStatus, PushTrack};
use ma2h_core::ports::MessageStore;
use ma2h_protocol::lifecycle::Status;
use ma2h_store_contract::fixtures::{account, agent, ask, at, resolution_id, response};
use ma2h_store_dynamodb::{DynamoStore, provision};
use ma2h_test_support::{dynamodb as client, unique};

fn s(v: impl Into<String>) -> AttributeValue {
    AttributeValue::S(v.into())
}
fn n(v: i64) -> AttributeValue {
    AttributeValue::N(v.to_string())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_message_item_in_the_earlier_format_is_read_claimed_and_updated() {
    let Some(client) = client().await else { return };
    let table = unique("legacy");
    provision::create_table(&client, &table).await.unwrap();
    let store = DynamoStore::new(client.clone(), &table);
    let (acct, bot) = (account("acme"), agent("bot"));
    let m = ask(&acct, &bot, at(0));
    let rid = resolution_id();
    let answer = response(Status::Answered, &rid, at(10));
    let ms = |t: i64| at(t).timestamp_millis();
    let item: HashMap<String, AttributeValue> = HashMap::from([
        ("pk".into(), s(format!("MSG#acme#{}", m.id))),
        ("sk".into(), s("MSG")),
        ("id".into(), s(m.id.as_str())),
        ("account".into(), s("acme")),
        ("agent_id".into(), s("bot")),
        ("kind".into(), s("ask")),
        ("status".into(), s("answered")),
        ("priority".into(), s(m.priority.as_str())),
        ("title".into(), s(m.title.clone())),
        ("envelope".into(), s(m.envelope.to_string())),
        ("state_text".into(), s(m.state_text.clone().unwrap())),
        ("created_at".into(), n(ms(0))),
        ("updated_at".into(), n(ms(10))),
        ("response".into(), s(answer.to_string())),
        ("resolution_id".into(), s(rid.as_str())),
        ("retain_until".into(), n(ms(10 + 86_400 * 30))),
        ("retain_pk".into(), s("RET")),
        ("retain_sk".into(), n(ms(10 + 86_400 * 30))),
        ("ttl".into(), n(at(10 + 86_400 * 31).timestamp())),
        ("push_status".into(), s("pending")),
        ("push_attempts".into(), n(0)),
        ("push_next_at".into(), n(ms(10))),
        ("push_pk".into(), s("PUSH")),
        ("push_sk".into(), n(ms(10))),
        ("list_pk".into(), s("acme#done")),
        ("list_sk".into(), s(format!("{:015}#{}", ms(10), m.id))),
        ("actor".into(), s("human:alice")),
        ("comment".into(), s("ok — ✓")),
    ]);
    client.put_item().table_name(&table).set_item(Some(item)).send().await.unwrap();

    let Lookup::Found(read) = store.get_message(&acct, &m.id).await.unwrap() else { panic!("found") };
    assert_eq!((read.account.clone(), read.id.clone(), read.status), (acct.clone(), m.id.clone(), Status::Answered));
    assert_eq!((read.envelope.clone(), read.state_text.clone()), (m.envelope.clone(), m.state_text.clone()));
    assert_eq!(read.response, Some(answer));
    assert_eq!(read.push, Some(PushTrack::pending(at(10))));

    // The sweeper still finds and leases its pending push, and a recorded attempt moves the track
    // to the new attributes.
    assert_eq!(store.claim_due_pushes(at(100), at(400), 10).await.unwrap(), vec![(acct.clone(), m.id.clone())]);
    assert_eq!(store.claim_due_pushes(at(100), at(400), 10).await.unwrap(), vec![], "leased");
    let delivered = PushTrack {
        status: PushStatus::Delivered,
        attempts: 1,
        next_attempt_at: None,
        last_error: None,
        delivered_at: Some(at(101)),
    };
    store.record_push(&acct, &m.id, &delivered).await.unwrap();
    let Lookup::Found(read) = store.get_message(&acct, &m.id).await.unwrap() else { panic!("found") };
    assert_eq!(read.push, Some(delivered));
    let raw = client
        .get_item()
        .table_name(&table)
        .key("pk", s(format!("MSG#acme#{}", m.id)))
        .key("sk", s("MSG"))
        .send()
        .await
        .unwrap()
        .item
        .unwrap();
    assert!(raw.contains_key("track_status") && !raw.keys().any(|k| k.starts_with("push_")), "{raw:?}");
}

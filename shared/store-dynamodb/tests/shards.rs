//! The sweeper's sharded partitions (issue 38, `src/shards.rs`): items spread over the shards of
//! their family, the sweeper merges every shard oldest first, and an item written before the
//! upgrade — under the bare, unsharded partition — is still found. Needs moto (`AWS_ENDPOINT_URL`).

use aws_sdk_dynamodb::types::AttributeValue;
use ma2h_core::ports::MessageStore;
use ma2h_store_contract::fixtures::{account, agent, at, expiring_ask};
use ma2h_store_dynamodb::{DynamoStore, Shards, provision};
use ma2h_test_support::{dynamodb as client, unique};

async fn store(shards: u16) -> Option<(DynamoStore, aws_sdk_dynamodb::Client)> {
    let client = client().await?;
    let table = unique("shards");
    provision::create_table(&client, &table).await.unwrap();
    Some((DynamoStore::new(client.clone(), &table).with_shards(Shards::new(shards)), client))
}

async fn due_pk(client: &aws_sdk_dynamodb::Client, table: &str, pk: String) -> String {
    let item = client
        .get_item()
        .table_name(table)
        .key("pk", AttributeValue::S(pk))
        .key("sk", AttributeValue::S("MSG".into()))
        .send()
        .await
        .unwrap()
        .item
        .unwrap();
    item["due_pk"].as_s().unwrap().clone()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn items_spread_over_the_shards_and_the_sweeper_merges_them_oldest_first() {
    let Some((store, client)) = store(4).await else { return };
    let (acct, bot) = (account("acme"), agent("bot"));
    let mut messages = Vec::new();
    // created in one order, due in the reverse one
    for i in 0..12 {
        let m = expiring_ask(&acct, &bot, at(i), at(1_000 - i * 10));
        store.insert_message(&m, None, None, at(i)).await.unwrap();
        messages.push(m);
    }
    let mut partitions = std::collections::BTreeSet::new();
    for m in &messages {
        partitions.insert(due_pk(&client, store.table(), format!("MSG#acme#{}", m.id)).await);
    }
    assert!(partitions.len() > 1 && partitions.iter().all(|p| p.starts_with("DUE#00")), "{partitions:?}");
    let due = store.due_expiries(at(2_000), 5).await.unwrap();
    let oldest: Vec<_> = messages.iter().rev().take(5).map(|m| (m.account.clone(), m.id.clone())).collect();
    assert_eq!(due, oldest, "the five earliest deadlines, across shards, in order");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_item_written_before_sharding_is_still_due() {
    let Some((store, client)) = store(4).await else { return };
    let (acct, bot) = (account("acme"), agent("bot"));
    let m = expiring_ask(&acct, &bot, at(0), at(60));
    store.insert_message(&m, None, None, at(0)).await.unwrap();
    // what the earlier layout wrote: the one constant partition
    client
        .update_item()
        .table_name(store.table())
        .key("pk", AttributeValue::S(format!("MSG#acme#{}", m.id)))
        .key("sk", AttributeValue::S("MSG".into()))
        .update_expression("SET due_pk = :p")
        .expression_attribute_values(":p", AttributeValue::S("DUE".into()))
        .send()
        .await
        .unwrap();
    assert_eq!(store.due_expiries(at(30), 10).await.unwrap(), vec![]);
    assert_eq!(store.due_expiries(at(61), 10).await.unwrap(), vec![(acct, m.id)]);
}

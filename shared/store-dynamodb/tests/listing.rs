//! DynamoDB-specific listing guarantees beyond the store contract: a page reads a bounded slice
//! of the index, and a table made by an earlier release (the `list` index, items without the
//! summary attributes) keeps listing through its upgrade. Needs moto (`make test` starts it).

use ma2h_core::messages::listing::{ListFilter, ListQuery};
use ma2h_core::messages::records::MessageRecord;
use ma2h_core::ports::MessageStore;
use ma2h_protocol::lifecycle::Status;
use ma2h_store_contract::fixtures::{account, agent, ask, at, terminal};
use ma2h_store_dynamodb::{DynamoStore, provision};
use serde_json::{Value, json};

use ma2h_test_support::{dynamodb as client, unique};

fn by_agent(name: &str) -> ListFilter {
    ListFilter { agent_id: Some(agent(name)), ..ListFilter::default() }
}

fn by_tag(tag: &str) -> ListFilter {
    ListFilter { tag: Some(tag.into()), ..ListFilter::default() }
}

async fn open_page(store: &DynamoStore, filter: ListFilter) -> Vec<String> {
    let q = ListQuery { open: true, filter, after: None, limit: 50 };
    store.list_messages(&account("acme"), &q).await.unwrap().items.iter().map(|s| s.id.to_string()).collect()
}

#[tokio::test]
async fn a_selective_filter_reads_a_bounded_slice_per_page() {
    let Some(client) = client().await else { return };
    let table = unique("bounded");
    provision::create_table(&client, &table).await.unwrap();
    let store = DynamoStore::new(client, &table).with_max_scanned(20);
    let acct = account("acme");
    for i in 0..60 {
        store.insert_message(&ask(&acct, &agent("loud"), at(i)), None, None, at(i)).await.unwrap();
    }
    let quiet = ask(&acct, &agent("quiet"), at(100));
    store.insert_message(&quiet, None, None, at(100)).await.unwrap();

    let mut q = ListQuery { open: true, filter: by_agent("quiet"), after: None, limit: 10 };
    let (mut found, mut pages) = (Vec::new(), 0);
    loop {
        let page = store.list_messages(&acct, &q).await.unwrap();
        pages += 1;
        found.extend(page.items.iter().map(|s| s.id.clone()));
        match page.next {
            Some(next) => q.after = Some(next),
            None => break,
        }
        assert!(pages < 20, "the pages must make progress");
    }
    assert_eq!(found, vec![quiet.id.clone()], "found once, on the page that reached it");
    assert!(pages >= 3, "61 entries at 20 per page take several short pages ({pages})");
}

/// The table as the release before the `inbox` index made it: the same keys, the `list` index
/// with every attribute.
fn older_definition() -> Value {
    let mut def: Value = serde_json::from_str(provision::TABLE_DEFINITION).unwrap();
    for g in def["GlobalSecondaryIndexes"].as_array_mut().unwrap() {
        if g["IndexName"] == "inbox" {
            g["IndexName"] = json!("list");
            g["Projection"] = json!({ "ProjectionType": "ALL" });
        }
    }
    def
}

/// Strip what the earlier release did not write.
async fn as_written_before(client: &aws_sdk_dynamodb::Client, table: &str, m: &MessageRecord) {
    client
        .update_item()
        .table_name(table)
        .key("pk", aws_sdk_dynamodb::types::AttributeValue::S(format!("MSG#acme#{}", m.id)))
        .key("sk", aws_sdk_dynamodb::types::AttributeValue::S("MSG".into()))
        .update_expression("REMOVE #p, #t, #a, #c")
        .expression_attribute_names("#p", "project")
        .expression_attribute_names("#t", "tags")
        .expression_attribute_names("#a", "actor")
        .expression_attribute_names("#c", "comment")
        .send()
        .await
        .unwrap();
}

#[tokio::test]
async fn an_older_table_lists_through_its_upgrade_and_backfill() {
    let Some(client) = client().await else { return };
    let table = unique("upgrade");
    provision::create_table_from(&client, &table, &older_definition()).await.unwrap();
    let store = DynamoStore::new(client.clone(), &table);
    let acct = account("acme");
    let (old_open, old_done) = (ask(&acct, &agent("bot"), at(1)), ask(&acct, &agent("bot"), at(2)));
    for m in [&old_open, &old_done] {
        store.insert_message(m, None, None, m.created_at).await.unwrap();
    }
    store.complete(&acct, &old_done.id, &terminal(Status::Answered, at(5))).await.unwrap();
    for m in [&old_open, &old_done] {
        as_written_before(&client, &table, m).await;
    }

    // Before the upgrade: no `inbox` index — the listing reads `list` and filters itself.
    assert_eq!(open_page(&store, by_tag("prod")).await, vec![old_open.id.to_string()]);
    let counts = store.open_counts(&acct, &by_tag("prod")).await.unwrap();
    assert_eq!((counts.total, counts.matching), (1, 1));

    // The upgrade adds `inbox`; until the backfill, old items lack what its filters read.
    provision::create_table(&client, &table).await.unwrap();
    assert_eq!(open_page(&store, by_tag("prod")).await, Vec::<String>::new(), "not backfilled yet");
    assert_eq!(store.backfill_listing().await.unwrap(), 2, "both old items updated");
    assert_eq!(store.backfill_listing().await.unwrap(), 0, "idempotent");
    assert_eq!(open_page(&store, by_tag("prod")).await, vec![old_open.id.to_string()]);
    let done = ListQuery { open: false, filter: ListFilter::default(), after: None, limit: 10 };
    let history = store.list_messages(&acct, &done).await.unwrap().items;
    assert_eq!(history[0].actor.as_deref(), Some("human:alice"), "actor and comment back in the history");
}

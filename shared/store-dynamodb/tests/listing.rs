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
    let store = DynamoStore::new(client, &table).with_shards(ma2h_store_dynamodb::Shards::new(2)).with_max_scanned(20);
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

/// Every page of `open` (or done) listing, `limit` at a time, as ids.
async fn every_page(store: &DynamoStore, open: bool, limit: usize) -> Vec<String> {
    let mut q = ListQuery { open, filter: ListFilter::default(), after: None, limit };
    let mut ids = Vec::new();
    for _ in 0..100 {
        let page = store.list_messages(&account("acme"), &q).await.unwrap();
        assert!(page.items.len() <= limit);
        ids.extend(page.items.iter().map(|s| s.id.to_string()));
        match page.next {
            Some(next) => q.after = Some(next),
            None => return ids,
        }
    }
    panic!("the listing never ended");
}

/// Move a message's listing entry to the account's unsharded partition, where the release before
/// issue 38 wrote it.
async fn as_unsharded(client: &aws_sdk_dynamodb::Client, table: &str, m: &MessageRecord, open: bool) {
    let base = if open { "acme#open" } else { "acme#done" };
    client
        .update_item()
        .table_name(table)
        .key("pk", aws_sdk_dynamodb::types::AttributeValue::S(format!("MSG#acme#{}", m.id)))
        .key("sk", aws_sdk_dynamodb::types::AttributeValue::S("MSG".into()))
        .update_expression("SET list_pk = :p")
        .expression_attribute_values(":p", aws_sdk_dynamodb::types::AttributeValue::S(base.into()))
        .send()
        .await
        .unwrap();
}

#[tokio::test]
async fn a_listing_over_many_shards_pages_in_order_with_unsharded_entries_merged_in() {
    use ma2h_protocol::envelope::Priority;
    let Some(client) = client().await else { return };
    let table = unique("listshards");
    provision::create_table(&client, &table).await.unwrap();
    // 16 listing shards: more than a page's worth, so the merge reads a few from each and then
    // reads further only where a shard's last entry comes before the page's end.
    let store = DynamoStore::new(client.clone(), &table).with_shards(ma2h_store_dynamodb::Shards::new(2).with_list(16));
    let acct = account("acme");
    let priorities = [Priority::Low, Priority::Normal, Priority::Urgent, Priority::High];
    let mut all = Vec::new();
    // ~7 entries a shard: the first read (3 each) leaves most shards with more to read.
    for i in 0..120 {
        let mut m = ask(&acct, &agent("bot"), at(i));
        m.priority = priorities[usize::try_from(i).unwrap() % 4];
        store.insert_message(&m, None, None, m.created_at).await.unwrap();
        all.push(m);
    }
    for m in all.iter().step_by(7) {
        as_unsharded(&client, &table, m, true).await;
    }
    // Answer a third of them, newest answer last; some of the done entries stay unsharded too.
    let mut done = Vec::new();
    for (k, m) in all.iter().enumerate().filter(|(k, _)| k % 3 == 0) {
        let w = terminal(Status::Answered, at(1000 + i64::try_from(k).unwrap()));
        store.complete(&acct, &m.id, &w).await.unwrap();
        if k % 2 == 0 {
            as_unsharded(&client, &table, m, false).await;
        }
        done.push(m.id.to_string());
    }
    let mut open: Vec<&MessageRecord> = all.iter().filter(|m| !done.contains(&m.id.to_string())).collect();
    open.sort_by_key(|m| (m.priority.rank(), m.created_at, m.id.to_string()));
    let open: Vec<String> = open.iter().map(|m| m.id.to_string()).collect();
    done.reverse();

    for limit in [3, 50] {
        assert_eq!(every_page(&store, true, limit).await, open, "open, {limit} a page");
        assert_eq!(every_page(&store, false, limit).await, done, "done, {limit} a page");
    }
    let counts = store.open_counts(&acct, &ListFilter::default()).await.unwrap();
    assert_eq!(counts.total, 80);
    assert_eq!(counts.priority(Priority::Urgent), 20);
}

//! The open counts on DynamoDB are maintained counters (issue 38): reading them costs the same
//! whatever the open set holds, they follow every insert and terminal, a filter the counters
//! cannot answer is counted by a bounded read, and open messages written before the counters are
//! counted once by `backfill_counts`. Needs moto (`make test` starts it).

use aws_sdk_dynamodb::types::AttributeValue;
use ma2h_core::messages::listing::ListFilter;
use ma2h_core::messages::records::MessageRecord;
use ma2h_core::ports::MessageStore;
use ma2h_protocol::envelope::{MessageType, Priority};
use ma2h_protocol::lifecycle::Status;
use ma2h_store_contract::fixtures::{account, agent, ask, at, notify, task, terminal};
use ma2h_store_dynamodb::{DynamoStore, Shards, provision};
use ma2h_test_support::{dynamodb as client, unique};

async fn store(name: &str) -> Option<(DynamoStore, aws_sdk_dynamodb::Client, String)> {
    let client = client().await?;
    let table = unique(name);
    provision::create_table(&client, &table).await.unwrap();
    let store = DynamoStore::new(client.clone(), &table).with_shards(Shards::new(2).with_list(8));
    Some((store, client, table))
}

fn by_agent(name: &str) -> ListFilter {
    ListFilter { agent_id: Some(agent(name)), ..ListFilter::default() }
}

#[tokio::test]
async fn counts_follow_inserts_and_terminals_and_a_filter_beyond_the_counters_is_read() {
    let Some((store, _, _)) = store("counts").await else { return };
    let acct = account("acme");
    let mut urgent = ask(&acct, &agent("a"), at(0));
    urgent.priority = Priority::Urgent;
    let plain = ask(&acct, &agent("b"), at(1));
    let work = task(&acct, &agent("b"), at(2));
    for m in [&urgent, &plain, &work, &notify(&acct, &agent("a"), at(3))] {
        store.insert_message(m, None, None, m.created_at).await.unwrap();
    }
    let c = store.open_counts(&acct, &ListFilter::default()).await.unwrap();
    assert_eq!((c.total, c.matching, c.matching_partial), (3, 3, false), "a notify is never open");
    assert_eq!((c.priority(Priority::Urgent), c.kind(MessageType::Task), c.kind(MessageType::Ask)), (1, 1, 2));
    let tasks = ListFilter { kind: Some(MessageType::Task), ..ListFilter::default() };
    assert_eq!(store.open_counts(&acct, &tasks).await.unwrap().matching, 1, "from the cells");
    assert_eq!(store.open_counts(&acct, &by_agent("b")).await.unwrap().matching, 2, "read, not counted");
    assert_eq!(store.count_open(&acct, &agent("b")).await.unwrap(), 2, "§8.6: b's @open partition");

    store.complete(&acct, &plain.id, &terminal(Status::Answered, at(10))).await.unwrap();
    // a losing terminal subtracts nothing
    store.complete(&acct, &plain.id, &terminal(Status::Declined, at(11))).await.unwrap();
    let c = store.open_counts(&acct, &ListFilter::default()).await.unwrap();
    assert_eq!((c.total, c.kind(MessageType::Ask)), (2, 1));
    assert_eq!(store.count_open(&acct, &agent("b")).await.unwrap(), 1);
    assert_eq!(store.open_counts(&account("globex"), &ListFilter::default()).await.unwrap().total, 0, "per account");
}

#[tokio::test]
async fn a_filtered_count_past_its_budget_is_a_lower_bound() {
    let Some((_, client, table)) = store("counts-budget").await else { return };
    let store = DynamoStore::new(client, &table).with_shards(Shards::new(2).with_list(1)).with_max_scanned(4);
    let acct = account("acme");
    for i in 0..30 {
        store.insert_message(&ask(&acct, &agent("loud"), at(i)), None, None, at(i)).await.unwrap();
    }
    let c = store.open_counts(&acct, &by_agent("loud")).await.unwrap();
    assert_eq!(c.total, 30, "the total is the counters'");
    assert!(c.matching_partial && c.matching < 30, "{c:?}");
}

/// Make `m` look as the release before the counters wrote it: no `cnt`, no `@open` keys, not in
/// the counters.
async fn as_before_counters(store: &DynamoStore, client: &aws_sdk_dynamodb::Client, table: &str, m: &MessageRecord) {
    client
        .update_item()
        .table_name(table)
        .key("pk", AttributeValue::S(format!("MSG#acme#{}", m.id)))
        .key("sk", AttributeValue::S("MSG".into()))
        .update_expression("REMOVE cnt, mbx_pk, mbx_sk")
        .send()
        .await
        .unwrap();
    // take it out of its cell again: its insert counted it
    let before = store.open_counts(&m.account, &ListFilter::default()).await.unwrap().total;
    let out = client
        .scan()
        .table_name(table)
        .filter_expression("begins_with(pk, :c)")
        .expression_attribute_values(":c", AttributeValue::S("OPENCNT#".into()))
        .send()
        .await
        .unwrap();
    for item in out.items() {
        // the fixture's ask: high priority (rank 1)
        if item.get("c1a").and_then(|v| v.as_n().ok()).is_some_and(|n| n != "0") {
            client
                .update_item()
                .table_name(table)
                .key("pk", item["pk"].clone())
                .key("sk", item["sk"].clone())
                .update_expression("ADD c1a :m")
                .expression_attribute_values(":m", AttributeValue::N("-1".into()))
                .send()
                .await
                .unwrap();
            break;
        }
    }
    assert_eq!(store.open_counts(&m.account, &ListFilter::default()).await.unwrap().total, before - 1);
}

#[tokio::test]
async fn open_messages_from_before_the_counters_are_counted_once_by_the_backfill() {
    let Some((store, client, table)) = store("counts-backfill").await else { return };
    let acct = account("acme");
    let (old, closed_old) = (ask(&acct, &agent("bot"), at(0)), ask(&acct, &agent("bot"), at(1)));
    for m in [&old, &closed_old] {
        store.insert_message(m, None, None, m.created_at).await.unwrap();
        as_before_counters(&store, &client, &table, m).await;
    }
    let fresh = ask(&acct, &agent("bot"), at(2));
    store.insert_message(&fresh, None, None, at(2)).await.unwrap();
    assert_eq!(store.open_counts(&acct, &ListFilter::default()).await.unwrap().total, 1, "only the new one");
    assert_eq!(store.count_open(&acct, &agent("bot")).await.unwrap(), 1);
    // An old message closed before the backfill is never subtracted: it was never counted.
    store.complete(&acct, &closed_old.id, &terminal(Status::Answered, at(5))).await.unwrap();
    assert_eq!(store.open_counts(&acct, &ListFilter::default()).await.unwrap().total, 1);

    assert_eq!(store.backfill_counts().await.unwrap(), 1, "the old open one");
    assert_eq!(store.backfill_counts().await.unwrap(), 0, "idempotent");
    assert_eq!(store.open_counts(&acct, &ListFilter::default()).await.unwrap().total, 2);
    assert_eq!(store.count_open(&acct, &agent("bot")).await.unwrap(), 2);
    store.complete(&acct, &old.id, &terminal(Status::Answered, at(6))).await.unwrap();
    assert_eq!(store.open_counts(&acct, &ListFilter::default()).await.unwrap().total, 1);
}

#[tokio::test]
async fn a_terminal_that_carries_a_response_entry_is_subtracted_too() {
    // §8.7.1: the terminal and its session's `response` entry are one transaction, which returns
    // no old item: the store reads whether the message was counted first.
    let Some((store, _, _)) = store("counts-entry").await else { return };
    let acct = account("acme");
    let m = ask(&acct, &agent("bot"), at(0));
    store.insert_message(&m, None, None, at(0)).await.unwrap();
    assert_eq!(store.open_counts(&acct, &ListFilter::default()).await.unwrap().total, 1);
    let entry = ma2h_store_contract::directive(&ma2h_store_contract::mailbox("acme", "bot"), at(5));
    let w = ma2h_core::messages::records::TerminalWrite {
        entry: Some(Box::new(entry)),
        ..terminal(Status::Answered, at(5))
    };
    store.complete(&acct, &m.id, &w).await.unwrap();
    assert_eq!(store.open_counts(&acct, &ListFilter::default()).await.unwrap().total, 0);
    assert_eq!(store.count_open(&acct, &agent("bot")).await.unwrap(), 0);
}

#[tokio::test]
async fn a_recount_repairs_counters_that_drifted() {
    let Some((store, client, table)) = store("counts-recount").await else { return };
    let acct = account("acme");
    for i in 0..3 {
        store.insert_message(&ask(&acct, &agent("bot"), at(i)), None, None, at(i)).await.unwrap();
    }
    let other = ask(&account("globex"), &agent("bot"), at(0));
    store.insert_message(&other, None, None, at(0)).await.unwrap();
    // drift: a counter write that never happened, twice over, in some shard
    client
        .update_item()
        .table_name(&table)
        .key("pk", AttributeValue::S("OPENCNT#acme#005".into()))
        .key("sk", AttributeValue::S("CNT".into()))
        .update_expression("ADD c1a :d")
        .expression_attribute_values(":d", AttributeValue::N("2".into()))
        .send()
        .await
        .unwrap();
    assert_eq!(store.open_counts(&acct, &ListFilter::default()).await.unwrap().total, 5);
    assert_eq!(store.recount_counts(&acct).await.unwrap(), 3);
    assert_eq!(store.open_counts(&acct, &ListFilter::default()).await.unwrap().total, 3);
    assert_eq!(store.open_counts(&account("globex"), &ListFilter::default()).await.unwrap().total, 1, "untouched");
}

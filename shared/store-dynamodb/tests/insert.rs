//! The DynamoDB insert without a transaction (`src/insert.rs`): what only this store can leave
//! behind — an idempotency claim whose message was never written (its submit stopped between the
//! two puts) — is completed by the agent's retry, under the claimed id; and of many concurrent
//! submits with one key exactly one inserts. Needs moto (`AWS_ENDPOINT_URL`), like `contract.rs`.

use std::sync::Arc;

use aws_sdk_dynamodb::types::AttributeValue;
use ma2h_core::messages::records::{Inserted, Lookup};
use ma2h_core::ports::MessageStore;
use ma2h_store_contract::fixtures::{account, agent, ask, at, claim, message_id, notify, t0};
use ma2h_store_dynamodb::{DynamoStore, provision};
use ma2h_test_support::{dynamodb as client, unique};

async fn store() -> Option<DynamoStore> {
    let client = client().await?;
    let table = unique("insert");
    provision::create_table(&client, &table).await.unwrap();
    Some(DynamoStore::new(client, table))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_claim_whose_message_was_never_written_is_completed_by_the_retry_under_its_id() {
    let Some(store) = store().await else { return };
    let (acct, bot) = (account("acme"), agent("bot"));
    let first = ask(&acct, &bot, t0());
    let c = claim(&first, "k", "fp", at(86_400));
    assert_eq!(store.insert_message(&first, Some(&c), None, t0()).await.unwrap(), Inserted::New);
    // The first submit "stopped" after its claim: its message is not there.
    delete_message_item(&store, &first.id).await;
    assert_eq!(store.get_message(&acct, &first.id).await.unwrap(), Lookup::Missing);

    // The retry (same payload, a new id minted for it) is a replay of the claimed id, and the
    // message now exists under that id.
    let retry = ma2h_core::messages::records::MessageRecord { id: message_id(), ..ask(&acct, &bot, at(5)) };
    let again = claim(&retry, "k", "fp", at(86_405));
    assert_eq!(store.insert_message(&retry, Some(&again), None, at(5)).await.unwrap(), Inserted::Existing(c.clone()));
    let Lookup::Found(m) = store.get_message(&acct, &first.id).await.unwrap() else { panic!("completed") };
    assert_eq!((m.id, m.created_at), (first.id.clone(), at(5)), "the retry's record, under the claimed id");
    assert_eq!(store.get_message(&acct, &retry.id).await.unwrap(), Lookup::Missing, "no second message");

    // A differing payload is still a conflict for the caller (the claim is returned, unchanged).
    let other = ask(&acct, &bot, at(6));
    let differs = claim(&other, "k", "other-fp", at(86_406));
    assert_eq!(store.insert_message(&other, Some(&differs), None, at(6)).await.unwrap(), Inserted::Existing(c));
    assert_eq!(store.get_message(&acct, &other.id).await.unwrap(), Lookup::Missing);
}

async fn delete_message_item(store: &DynamoStore, id: &ma2h_protocol::ids::MessageId) {
    store
        .client()
        .delete_item()
        .table_name(store.table())
        .key("pk", AttributeValue::S(format!("MSG#acme#{id}")))
        .key("sk", AttributeValue::S("MSG".into()))
        .send()
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_purged_message_is_not_written_again_by_a_replay_of_its_live_claim() {
    let Some(store) = store().await else { return };
    let (acct, bot) = (account("acme"), agent("bot"));
    let note = notify(&acct, &bot, t0());
    let c = claim(&note, "n", "fp", at(86_400));
    assert_eq!(store.insert_message(&note, Some(&c), None, t0()).await.unwrap(), Inserted::New);
    delete_message_item(&store, &note.id).await; // purged: the tombstone stays
    let retry = ma2h_core::messages::records::MessageRecord { id: message_id(), ..notify(&acct, &bot, at(5)) };
    let again = claim(&retry, "n", "fp", at(86_405));
    assert_eq!(store.insert_message(&retry, Some(&again), None, at(5)).await.unwrap(), Inserted::Existing(c));
    assert_eq!(store.get_message(&acct, &note.id).await.unwrap(), Lookup::Gone { agent_id: bot }, "410, not revived");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_concurrent_submits_with_one_key_exactly_one_inserts() {
    let Some(store) = store().await else { return };
    let store = Arc::new(store);
    let (acct, bot) = (account("acme"), agent("bot"));
    let tasks: Vec<_> = (0..8)
        .map(|i| {
            let (store, acct, bot) = (store.clone(), acct.clone(), bot.clone());
            tokio::spawn(async move {
                let m = ask(&acct, &bot, at(i));
                let c = claim(&m, "same", "fp", at(86_400));
                (m.id.clone(), store.insert_message(&m, Some(&c), None, at(i)).await.unwrap())
            })
        })
        .collect();
    let mut outcomes = Vec::new();
    for t in tasks {
        outcomes.push(t.await.unwrap());
    }
    let winners: Vec<_> = outcomes.iter().filter(|(_, o)| *o == Inserted::New).map(|(id, _)| id.clone()).collect();
    assert_eq!(winners.len(), 1, "{outcomes:?}");
    for (id, o) in &outcomes {
        match o {
            Inserted::New => {}
            Inserted::Existing(c) => assert_eq!(c.message_id, winners[0], "every replay names the winner"),
            other => panic!("{other:?}"),
        }
        if *id != winners[0] {
            assert_eq!(store.get_message(&acct, id).await.unwrap(), Lookup::Missing);
        }
    }
    assert!(matches!(store.get_message(&acct, &winners[0]).await.unwrap(), Lookup::Found(_)));
}

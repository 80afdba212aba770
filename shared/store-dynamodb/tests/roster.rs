//! The account's agent roster (issue 39: the inbox's Agents page lists every agent with one
//! Query): a table written before the roster existed gets it from `backfill_credentials`
//! (`ma2h-admin-aws backfill-credentials`). Needs moto (`make test` starts it).

use aws_sdk_dynamodb::types::AttributeValue;
use ma2h_core::kernel::credentials::PrincipalId;
use ma2h_core::ports::CredentialStore;
use ma2h_store_contract::fixtures::{account, agent, at, credential, human};
use ma2h_store_dynamodb::{DynamoStore, provision};
use ma2h_test_support::{dynamodb as client, unique};

#[tokio::test]
async fn credentials_from_before_the_roster_are_listed_after_the_backfill() {
    let Some(client) = client().await else { return };
    let table = unique("roster");
    provision::create_table(&client, &table).await.unwrap();
    let store = DynamoStore::new(client.clone(), table.clone());
    let acct = account("acme");
    for c in [
        credential(&acct, PrincipalId::Agent(agent("web")), at(-2)),
        credential(&acct, PrincipalId::Agent(agent("ci/api")), at(-1)),
        credential(&acct, PrincipalId::Operator(human("alice")), at(-1)),
    ] {
        store.put_credential(&c).await.unwrap();
    }
    // the previous layout: no roster entries
    let roster = client
        .query()
        .table_name(&table)
        .key_condition_expression("pk = :pk AND begins_with(sk, :p)")
        .expression_attribute_values(":pk", AttributeValue::S("ACCT#acme".into()))
        .expression_attribute_values(":p", AttributeValue::S("AGENT#".into()))
        .send()
        .await
        .unwrap();
    assert_eq!(roster.count(), 2, "one entry per agent, none for the operator");
    for item in roster.items() {
        let key = item.iter().filter(|(k, _)| *k == "pk" || *k == "sk").map(|(k, v)| (k.clone(), v.clone())).collect();
        client.delete_item().table_name(&table).set_key(Some(key)).send().await.unwrap();
    }
    assert!(store.list_agents(&acct).await.unwrap().is_empty());
    store.backfill_credentials().await.unwrap();
    let names: Vec<String> = store.list_agents(&acct).await.unwrap().iter().map(ToString::to_string).collect();
    assert_eq!(names, ["ci/api", "web"]);
    store.backfill_credentials().await.unwrap();
    assert_eq!(store.list_agents(&acct).await.unwrap().len(), 2, "idempotent");
}

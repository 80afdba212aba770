//! The store contract suite against DynamoDB — a moto server at `AWS_ENDPOINT_URL` (`make test`
//! starts one). Each check is a test of its own on a freshly created table.
//!
//! Without an endpoint the tests are skipped loudly, unless `MA2H_REQUIRE_AWS_TESTS=1` (set by
//! `make test`), which turns a missing endpoint into a failure.

use ma2h_store_dynamodb::{DynamoStore, provision};

use ma2h_test_support::{dynamodb as client, unique};

/// Every store-contract check, each on a table of its own.
mod contract {
    use super::*;

    async fn fresh() -> Option<(DynamoStore, ())> {
        let client = client().await?;
        let name = unique("contract");
        provision::create_table(&client, &name).await.unwrap();
        // a few shards: every sweep check then merges partitions (the default's 128 would make
        // each sweep 1,161 moto reads)
        Some((DynamoStore::new(client, name).with_shards(ma2h_store_dynamodb::Shards::new(3)), ()))
    }
    ma2h_store_contract::store_contract_tests!(fresh);
}

#[tokio::test]
async fn provisioning_is_idempotent_and_enables_ttl() {
    let Some(client) = client().await else { return };
    let name = unique("provision");
    provision::create_table(&client, &name).await.unwrap();
    provision::create_table(&client, &name).await.unwrap();
    let table = client.describe_table().table_name(&name).send().await.unwrap().table.unwrap();
    let indexes: Vec<String> =
        table.global_secondary_indexes().iter().filter_map(|g| g.index_name().map(str::to_owned)).collect();
    for expected in ["due", "push", "inbox", "mailbox"] {
        assert!(indexes.iter().any(|i| i == expected), "missing GSI {expected}: {indexes:?}");
    }
    let ttl = client.describe_time_to_live().table_name(&name).send().await.unwrap();
    assert_eq!(ttl.time_to_live_description().and_then(|d| d.attribute_name()), Some(provision::TTL_ATTRIBUTE));
}

//! Create the table (and its TTL) from `infra/dynamodb-table.json` — the one definition shared
//! with the SAM template's documentation, the LocalStack init script and the tests against moto.

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, CreateGlobalSecondaryIndexAction, GlobalSecondaryIndex,
    GlobalSecondaryIndexUpdate, KeySchemaElement, KeyType, Projection, ProjectionType, ScalarAttributeType,
    TimeToLiveSpecification,
};
use serde_json::Value;

/// Why a table could not be created or upgraded.
#[derive(Debug, thiserror::Error)]
pub enum ProvisionError {
    #[error("the table definition is malformed: {0}")]
    Definition(String),
    #[error("{op}: {message}")]
    Aws { op: &'static str, message: String },
}

/// The table definition, as committed.
pub const TABLE_DEFINITION: &str = include_str!("../../../infra/dynamodb-table.json");
/// The TTL attribute (seconds since the epoch).
pub const TTL_ATTRIBUTE: &str = "ttl";

fn keys(v: &Value) -> Result<Vec<KeySchemaElement>, ProvisionError> {
    v.as_array()
        .ok_or(ProvisionError::Definition("KeySchema".into()))?
        .iter()
        .map(|k| {
            KeySchemaElement::builder()
                .attribute_name(k["AttributeName"].as_str().unwrap_or_default())
                .key_type(KeyType::from(k["KeyType"].as_str().unwrap_or_default()))
                .build()
                .map_err(|e| ProvisionError::Definition(e.to_string()))
        })
        .collect()
}

/// Create `table` from the shared definition (under another name if given) and enable its TTL.
/// An existing table gains the indexes it lacks (one at a time, each waited for until active);
/// nothing else about it changes. (A table CloudFormation manages is upgraded by deploying the
/// template instead: docs/dynamodb.md.)
pub async fn create_table(client: &Client, table: &str) -> Result<(), ProvisionError> {
    let def: Value = serde_json::from_str(TABLE_DEFINITION).map_err(|e| ProvisionError::Definition(e.to_string()))?;
    create_table_from(client, table, &def).await
}

/// [`create_table`] from a given definition (tests create an older release's table with it).
pub async fn create_table_from(client: &Client, table: &str, def: &Value) -> Result<(), ProvisionError> {
    let attrs = attribute_definitions(def)?;
    let gsis = indexes(def)?;
    let res = client
        .create_table()
        .table_name(table)
        .billing_mode(BillingMode::PayPerRequest)
        .set_attribute_definitions(Some(attrs))
        .set_key_schema(Some(keys(&def["KeySchema"])?))
        .set_global_secondary_indexes(Some(gsis))
        .send()
        .await;
    match res {
        Ok(_) => {}
        Err(e) if e.as_service_error().is_some_and(|s| s.is_resource_in_use_exception()) => {
            return add_missing_indexes(client, table, def).await;
        }
        Err(e) => return Err(ProvisionError::Aws { op: "CreateTable", message: format!("{e:?}") }),
    }
    client
        .update_time_to_live()
        .table_name(table)
        .time_to_live_specification(
            TimeToLiveSpecification::builder()
                .enabled(true)
                .attribute_name(TTL_ATTRIBUTE)
                .build()
                .map_err(|e| ProvisionError::Definition(e.to_string()))?,
        )
        .send()
        .await
        .map_err(|e| ProvisionError::Aws { op: "UpdateTimeToLive", message: format!("{e:?}") })?;
    Ok(())
}

fn indexes(def: &Value) -> Result<Vec<GlobalSecondaryIndex>, ProvisionError> {
    def["GlobalSecondaryIndexes"]
        .as_array()
        .ok_or(ProvisionError::Definition("GlobalSecondaryIndexes".into()))?
        .iter()
        .map(|g| {
            GlobalSecondaryIndex::builder()
                .index_name(g["IndexName"].as_str().unwrap_or_default())
                .set_key_schema(Some(keys(&g["KeySchema"])?))
                .projection(
                    Projection::builder()
                        .projection_type(ProjectionType::from(
                            g["Projection"]["ProjectionType"].as_str().unwrap_or("ALL"),
                        ))
                        .set_non_key_attributes(
                            g["Projection"]["NonKeyAttributes"]
                                .as_array()
                                .map(|a| a.iter().filter_map(|v| v.as_str().map(str::to_owned)).collect()),
                        )
                        .build(),
                )
                .build()
                .map_err(|e| ProvisionError::Definition(e.to_string()))
        })
        .collect()
}

fn attribute_definitions(def: &Value) -> Result<Vec<AttributeDefinition>, ProvisionError> {
    def["AttributeDefinitions"]
        .as_array()
        .ok_or(ProvisionError::Definition("AttributeDefinitions".into()))?
        .iter()
        .map(|a| {
            AttributeDefinition::builder()
                .attribute_name(a["AttributeName"].as_str().unwrap_or_default())
                .attribute_type(ScalarAttributeType::from(a["AttributeType"].as_str().unwrap_or_default()))
                .build()
                .map_err(|e| ProvisionError::Definition(e.to_string()))
        })
        .collect()
}

/// Add each index of `def` the existing `table` lacks, waiting for it to become active (DynamoDB
/// builds one index at a time).
async fn add_missing_indexes(client: &Client, table: &str, def: &Value) -> Result<(), ProvisionError> {
    let attrs = attribute_definitions(def)?;
    for gsi in indexes(def)? {
        let name = gsi.index_name().to_owned();
        if index_status(client, table, &name).await?.is_some() {
            continue;
        }
        client
            .update_table()
            .table_name(table)
            .set_attribute_definitions(Some(attrs.clone()))
            .global_secondary_index_updates(
                GlobalSecondaryIndexUpdate::builder()
                    .create(
                        CreateGlobalSecondaryIndexAction::builder()
                            .index_name(&name)
                            .set_key_schema(Some(gsi.key_schema().to_vec()))
                            .set_projection(gsi.projection().cloned())
                            .build()
                            .map_err(|e| ProvisionError::Definition(e.to_string()))?,
                    )
                    .build(),
            )
            .send()
            .await
            .map_err(|e| ProvisionError::Aws { op: "UpdateTable", message: format!("{e:?}") })?;
        tracing::info!(table, index = %name, "creating a missing index");
        for _ in 0..600 {
            if index_status(client, table, &name).await?.as_deref() == Some("ACTIVE") {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_secs(2)).await;
        }
    }
    Ok(())
}

/// The status of index `name` of `table`, `None` if it has no such index.
async fn index_status(client: &Client, table: &str, name: &str) -> Result<Option<String>, ProvisionError> {
    let t = client
        .describe_table()
        .table_name(table)
        .send()
        .await
        .map_err(|e| ProvisionError::Aws { op: "DescribeTable", message: format!("{e:?}") })?;
    Ok(t.table()
        .and_then(|t| t.global_secondary_indexes().iter().find(|g| g.index_name() == Some(name)))
        .map(|g| g.index_status().map_or("ACTIVE".to_owned(), |s| s.as_str().to_owned())))
}

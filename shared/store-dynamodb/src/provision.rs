//! Create the table (and its TTL) from `infra/dynamodb-table.json` — the one definition shared
//! with the SAM template's documentation, the LocalStack init script and the tests against moto.

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::types::{
    AttributeDefinition, BillingMode, GlobalSecondaryIndex, KeySchemaElement, KeyType, Projection, ProjectionType,
    ScalarAttributeType, TimeToLiveSpecification,
};
use serde_json::Value;

/// The table definition, as committed.
pub const TABLE_DEFINITION: &str = include_str!("../../../infra/dynamodb-table.json");
/// The TTL attribute (seconds since the epoch).
pub const TTL_ATTRIBUTE: &str = "ttl";

fn keys(v: &Value) -> Result<Vec<KeySchemaElement>, String> {
    v.as_array()
        .ok_or("KeySchema")?
        .iter()
        .map(|k| {
            KeySchemaElement::builder()
                .attribute_name(k["AttributeName"].as_str().unwrap_or_default())
                .key_type(KeyType::from(k["KeyType"].as_str().unwrap_or_default()))
                .build()
                .map_err(|e| e.to_string())
        })
        .collect()
}

/// Create `table` from the shared definition (under another name if given) and enable its TTL.
/// An existing table is left alone.
pub async fn create_table(client: &Client, table: &str) -> Result<(), String> {
    let def: Value = serde_json::from_str(TABLE_DEFINITION).map_err(|e| e.to_string())?;
    let attrs = def["AttributeDefinitions"]
        .as_array()
        .ok_or("AttributeDefinitions")?
        .iter()
        .map(|a| {
            AttributeDefinition::builder()
                .attribute_name(a["AttributeName"].as_str().unwrap_or_default())
                .attribute_type(ScalarAttributeType::from(a["AttributeType"].as_str().unwrap_or_default()))
                .build()
                .map_err(|e| e.to_string())
        })
        .collect::<Result<Vec<_>, _>>()?;
    let gsis = def["GlobalSecondaryIndexes"]
        .as_array()
        .ok_or("GlobalSecondaryIndexes")?
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
                .map_err(|e| e.to_string())
        })
        .collect::<Result<Vec<_>, String>>()?;
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
        Err(e) if e.as_service_error().is_some_and(|s| s.is_resource_in_use_exception()) => return Ok(()),
        Err(e) => return Err(format!("CreateTable: {e:?}")),
    }
    client
        .update_time_to_live()
        .table_name(table)
        .time_to_live_specification(
            TimeToLiveSpecification::builder()
                .enabled(true)
                .attribute_name(TTL_ATTRIBUTE)
                .build()
                .map_err(|e| e.to_string())?,
        )
        .send()
        .await
        .map_err(|e| format!("UpdateTimeToLive: {e:?}"))?;
    Ok(())
}

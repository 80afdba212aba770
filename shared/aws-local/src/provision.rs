//! Create what the template declares on the local endpoint (moto or LocalStack): the table from
//! the template's own `AWS::DynamoDB::Table` properties, each `AWS::SQS::Queue` with its
//! visibility timeout and redrive policy, and the Hub's key secret (random keys, once) with its
//! public-keys secret.

use std::collections::BTreeMap;

use crate::template::{Queue, Template};

/// Why the local resources could not be created.
#[derive(Debug, thiserror::Error)]
pub enum ProvisionError {
    #[error("the template declares no DynamoDB table")]
    NoTable,
    #[error("queue {0} has a dead-letter queue the template does not declare")]
    UnknownDeadLetterQueue(String),
    #[error("{op}: {message}")]
    Aws { op: &'static str, message: String },
    #[error(transparent)]
    Table(#[from] ma2h_store_dynamodb::provision::ProvisionError),
}

fn aws<E: std::fmt::Debug>(op: &'static str) -> impl Fn(E) -> ProvisionError {
    move |e| ProvisionError::Aws { op, message: format!("{e:?}") }
}

/// The queues created, for the functions' environment and the event source.
#[derive(Debug, Clone, Default)]
pub struct Provisioned {
    /// Logical id → queue URL.
    pub queue_urls: BTreeMap<String, String>,
    /// Logical id → queue ARN.
    pub queue_arns: BTreeMap<String, String>,
}

/// The table under `table_name`, from the template's definition (an existing table is kept,
/// gaining any index it lacks).
pub async fn table(
    client: &aws_sdk_dynamodb::Client,
    template: &Template,
    table_name: &str,
) -> Result<(), ProvisionError> {
    let (_, def) = template.table.as_ref().ok_or(ProvisionError::NoTable)?;
    ma2h_store_dynamodb::provision::create_table_from(client, table_name, def).await?;
    Ok(())
}

/// Every queue, dead-letter queues first; names are `<prefix>-<LogicalId>`.
pub async fn queues(
    client: &aws_sdk_sqs::Client,
    template: &Template,
    prefix: &str,
    out: &mut Provisioned,
) -> Result<(), ProvisionError> {
    let mut ordered: Vec<&Queue> = template.queues.iter().filter(|q| q.redrive.is_none()).collect();
    ordered.extend(template.queues.iter().filter(|q| q.redrive.is_some()));
    for q in ordered {
        use aws_sdk_sqs::types::QueueAttributeName as A;
        let mut req = client.create_queue().queue_name(format!("{prefix}-{}", q.logical_id));
        if let Some(v) = q.visibility_timeout {
            req = req.attributes(A::VisibilityTimeout, v.to_string());
        }
        if let Some(v) = q.retention_seconds {
            req = req.attributes(A::MessageRetentionPeriod, v.to_string());
        }
        if let Some((dlq, max)) = &q.redrive {
            let arn =
                out.queue_arns.get(dlq).ok_or_else(|| ProvisionError::UnknownDeadLetterQueue(q.logical_id.clone()))?;
            let policy = serde_json::json!({ "deadLetterTargetArn": arn, "maxReceiveCount": max });
            req = req.attributes(A::RedrivePolicy, policy.to_string());
        }
        let url = req.send().await.map_err(aws("CreateQueue"))?.queue_url.unwrap_or_default();
        let attrs = client
            .get_queue_attributes()
            .queue_url(&url)
            .attribute_names(A::QueueArn)
            .send()
            .await
            .map_err(aws("GetQueueAttributes"))?;
        let arn = attrs.attributes().and_then(|a| a.get(&A::QueueArn)).cloned().unwrap_or_default();
        out.queue_urls.insert(q.logical_id.clone(), url);
        out.queue_arns.insert(q.logical_id.clone(), arn);
    }
    Ok(())
}

/// The Hub's two secrets: the key secret (random keys) unless it exists — so a restarted stack
/// keeps verifying the pushes and sealed secrets of the last run — and its public-keys secret,
/// always rewritten from it so the two never disagree. `true` if the key secret was created.
pub async fn hub_secrets(
    client: &aws_sdk_secretsmanager::Client,
    name: &str,
    public_name: Option<&str>,
) -> Result<bool, ProvisionError> {
    let failed = |e: ma2h_aws::Error| ProvisionError::Aws { op: "the Hub's key secrets", message: e.to_string() };
    let created = ma2h_aws::hub_secret::create(client, name).await.map_err(failed)?;
    if let Some(public_name) = public_name {
        ma2h_aws::hub_secret::publish(client, name, public_name).await.map_err(failed)?;
    }
    Ok(created)
}

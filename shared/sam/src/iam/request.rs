//! What an AWS call asks IAM for: the (action, resource) pairs IAM authorizes for a DynamoDB,
//! SQS or Secrets Manager request in the JSON protocols the SDK speaks (`X-Amz-Target`). As AWS
//! does: a `Query` on an index is authorized on `table/T/index/I`; a transaction's items each
//! need their own action (`PutItem`, `UpdateItem`, `DeleteItem`, `ConditionCheckItem`,
//! `GetItem` — there is no `TransactWriteItems` action); a batch needs the batch action on every
//! table it names; SQS's `…Batch` calls need the single-message action; a secret is named by its
//! full ARN (with the six-character suffix), whatever the caller passed.

use serde_json::Value;

/// One authorization IAM makes for a call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Check {
    /// `service:Action`.
    pub action: String,
    pub resource: Target,
}

/// The resource of a check: an ARN, or a secret as the caller named it (resolved by the front).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    Arn(String),
    SecretId(String),
    /// Calls with no resource (`ListTables`, `ListQueues`): authorized on `*`.
    Any,
}

/// A classified call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Call {
    /// The SigV4 service (`dynamodb`, `sqs`, `secretsmanager`).
    pub service: String,
    /// The API operation (`Query`, `TransactWriteItems`).
    pub operation: String,
    pub checks: Vec<Check>,
}

/// A request the front does not model: it is refused, never passed through unchecked.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{0}")]
pub struct Unmodelled(pub String);

fn s<'a>(v: &'a Value, k: &str) -> Option<&'a str> {
    v.get(k).and_then(Value::as_str)
}

/// Where the call's resources live (from the credential scope and the deployment's account).
#[derive(Debug, Clone)]
pub struct Scope<'a> {
    pub region: &'a str,
    pub account: &'a str,
}

impl Scope<'_> {
    fn table(&self, name: &str) -> String {
        if name.starts_with("arn:") {
            return name.to_owned();
        }
        format!("arn:aws:dynamodb:{}:{}:table/{name}", self.region, self.account)
    }

    fn queue_from_url(&self, url: &str) -> String {
        let mut parts = url.trim_end_matches('/').rsplit('/');
        let name = parts.next().unwrap_or_default();
        let account =
            parts.next().filter(|a| a.len() == 12 && a.bytes().all(|b| b.is_ascii_digit())).unwrap_or(self.account);
        format!("arn:aws:sqs:{}:{account}:{name}", self.region)
    }

    fn queue_named(&self, name: &str) -> String {
        format!("arn:aws:sqs:{}:{}:{name}", self.region, self.account)
    }
}

/// Classify a request from its `X-Amz-Target` header and JSON body.
pub fn classify(target: &str, body: &[u8], scope: &Scope<'_>) -> Result<Call, Unmodelled> {
    let (prefix, op) = target.split_once('.').ok_or_else(|| Unmodelled(format!("X-Amz-Target `{target}`")))?;
    let body: Value = if body.is_empty() {
        Value::Object(Default::default())
    } else {
        serde_json::from_slice(body).map_err(|_| Unmodelled("a body that is not JSON".into()))?
    };
    let (service, checks) = match prefix {
        p if p.starts_with("DynamoDB_") => ("dynamodb", dynamodb(op, &body, scope)?),
        "AmazonSQS" => ("sqs", sqs(op, &body, scope)?),
        "secretsmanager" => ("secretsmanager", secrets(op, &body)?),
        other => return Err(Unmodelled(format!("service `{other}`"))),
    };
    Ok(Call { service: service.into(), operation: op.into(), checks })
}

fn check(action: String, resource: Target) -> Check {
    Check { action, resource }
}

fn dynamodb(op: &str, body: &Value, scope: &Scope<'_>) -> Result<Vec<Check>, Unmodelled> {
    let named = |k: &str| s(body, k).map(|t| scope.table(t)).ok_or_else(|| Unmodelled(format!("{op} without {k}")));
    Ok(match op {
        "Query" | "Scan" => {
            let table = named("TableName")?;
            let arn = match s(body, "IndexName") {
                Some(index) => format!("{table}/index/{index}"),
                None => table,
            };
            vec![check(format!("dynamodb:{op}"), Target::Arn(arn))]
        }
        "BatchGetItem" | "BatchWriteItem" => body
            .get("RequestItems")
            .and_then(Value::as_object)
            .ok_or_else(|| Unmodelled(format!("{op} without RequestItems")))?
            .keys()
            .map(|t| check(format!("dynamodb:{op}"), Target::Arn(scope.table(t))))
            .collect(),
        "TransactWriteItems" | "TransactGetItems" => {
            let items = body
                .get("TransactItems")
                .and_then(Value::as_array)
                .ok_or_else(|| Unmodelled(format!("{op} without TransactItems")))?;
            let mut out = Vec::new();
            for item in items {
                let (kind, inner) = item
                    .as_object()
                    .and_then(|m| m.iter().next())
                    .ok_or_else(|| Unmodelled(format!("{op}: an empty item")))?;
                let action = match kind.as_str() {
                    "Put" => "PutItem",
                    "Update" => "UpdateItem",
                    "Delete" => "DeleteItem",
                    "ConditionCheck" => "ConditionCheckItem",
                    "Get" => "GetItem",
                    other => return Err(Unmodelled(format!("{op}: item kind {other}"))),
                };
                let table =
                    s(inner, "TableName").ok_or_else(|| Unmodelled(format!("{op}: an item without TableName")))?;
                out.push(check(format!("dynamodb:{action}"), Target::Arn(scope.table(table))));
            }
            out
        }
        "ListTables" => vec![check("dynamodb:ListTables".into(), Target::Any)],
        _ => vec![check(format!("dynamodb:{op}"), Target::Arn(named("TableName")?))],
    })
}

fn sqs(op: &str, body: &Value, scope: &Scope<'_>) -> Result<Vec<Check>, Unmodelled> {
    let action = match op {
        "SendMessageBatch" => "SendMessage",
        "DeleteMessageBatch" => "DeleteMessage",
        "ChangeMessageVisibilityBatch" => "ChangeMessageVisibility",
        other => other,
    };
    let resource = match op {
        "ListQueues" => Target::Any,
        "CreateQueue" | "GetQueueUrl" => Target::Arn(
            scope.queue_named(s(body, "QueueName").ok_or_else(|| Unmodelled(format!("{op} without QueueName")))?),
        ),
        _ => Target::Arn(
            scope.queue_from_url(s(body, "QueueUrl").ok_or_else(|| Unmodelled(format!("{op} without QueueUrl")))?),
        ),
    };
    Ok(vec![check(format!("sqs:{action}"), resource)])
}

fn secrets(op: &str, body: &Value) -> Result<Vec<Check>, Unmodelled> {
    let id = match op {
        "CreateSecret" => s(body, "Name"),
        "ListSecrets" => return Ok(vec![check("secretsmanager:ListSecrets".into(), Target::Any)]),
        _ => s(body, "SecretId"),
    };
    let id = id.ok_or_else(|| Unmodelled(format!("{op} without a secret id")))?;
    Ok(vec![check(format!("secretsmanager:{op}"), Target::SecretId(id.to_owned()))])
}

#[cfg(test)]
mod tests {
    use super::*;

    const SCOPE: Scope<'static> = Scope { region: "us-east-1", account: "123456789012" };

    fn checks(target: &str, body: &str) -> Vec<(String, Target)> {
        classify(target, body.as_bytes(), &SCOPE).unwrap().checks.into_iter().map(|c| (c.action, c.resource)).collect()
    }

    fn arn(s: &str) -> Target {
        Target::Arn(s.into())
    }

    #[test]
    fn a_query_on_an_index_is_authorized_on_the_index() {
        assert_eq!(
            checks("DynamoDB_20120810.Query", r#"{"TableName":"t","IndexName":"mailbox"}"#),
            vec![("dynamodb:Query".into(), arn("arn:aws:dynamodb:us-east-1:123456789012:table/t/index/mailbox"))]
        );
        assert_eq!(
            checks("DynamoDB_20120810.GetItem", r#"{"TableName":"t","Key":{}}"#),
            vec![("dynamodb:GetItem".into(), arn("arn:aws:dynamodb:us-east-1:123456789012:table/t"))]
        );
    }

    #[test]
    fn a_transaction_needs_each_items_own_action() {
        let body = r#"{"TransactItems":[{"Put":{"TableName":"t"}},{"ConditionCheck":{"TableName":"t"}},{"Update":{"TableName":"u"}}]}"#;
        let got: Vec<String> =
            checks("DynamoDB_20120810.TransactWriteItems", body).into_iter().map(|(a, _)| a).collect();
        assert_eq!(got, ["dynamodb:PutItem", "dynamodb:ConditionCheckItem", "dynamodb:UpdateItem"]);
    }

    #[test]
    fn batches_name_every_table_and_sqs_batches_need_the_single_action() {
        let got = checks("DynamoDB_20120810.BatchGetItem", r#"{"RequestItems":{"a":{},"b":{}}}"#);
        assert_eq!(got.len(), 2);
        assert!(got.iter().all(|(a, _)| a == "dynamodb:BatchGetItem"));
        assert_eq!(
            checks("AmazonSQS.DeleteMessageBatch", r#"{"QueueUrl":"http://localhost:4566/123456789012/q-1"}"#),
            vec![("sqs:DeleteMessage".into(), arn("arn:aws:sqs:us-east-1:123456789012:q-1"))]
        );
    }

    #[test]
    fn a_secret_is_named_as_the_caller_named_it_and_unknown_calls_are_refused() {
        assert_eq!(
            checks("secretsmanager.GetSecretValue", r#"{"SecretId":"ma2h/hub"}"#),
            vec![("secretsmanager:GetSecretValue".into(), Target::SecretId("ma2h/hub".into()))]
        );
        assert!(classify("Kinesis_20131202.PutRecord", b"{}", &SCOPE).is_err());
        assert!(classify("DynamoDB_20120810.GetItem", b"{}", &SCOPE).is_err(), "no table: refused, not passed");
        assert!(classify("DynamoDB_20120810.GetItem", b"not json", &SCOPE).is_err());
    }
}

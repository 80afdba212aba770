//! The non-HTTP event sources: an SQS event source mapping (receive a batch, invoke, delete what
//! the function did not report in `batchItemFailures` — `ReportBatchItemFailures`) and an
//! EventBridge schedule (invoke on a fixed rate, never overlapping).

use std::time::Duration;

use aws_sdk_sqs::types::MessageSystemAttributeName;
use serde_json::{Value, json};

use crate::runtime::{Invoked, Invoker};

/// One SQS event source mapping.
pub struct SqsMapping {
    pub sqs: aws_sdk_sqs::Client,
    pub invoker: Invoker,
    pub function: String,
    pub timeout: Duration,
    pub queue_url: String,
    pub queue_arn: String,
    pub region: String,
    pub batch_size: i32,
    /// Pause after an empty receive (moto serves one request at a time: no long-polling).
    pub idle: Duration,
}

/// The SQS event for a batch (the shape Lambda's event source mapping sends).
pub fn sqs_event(messages: &[aws_sdk_sqs::types::Message], queue_arn: &str, region: &str) -> Value {
    let records: Vec<Value> = messages
        .iter()
        .map(|m| {
            let attributes: serde_json::Map<String, Value> = m
                .attributes()
                .map(|a| a.iter().map(|(k, v)| (k.as_str().to_owned(), Value::String(v.clone()))).collect())
                .unwrap_or_default();
            json!({
                "messageId": m.message_id(),
                "receiptHandle": m.receipt_handle(),
                "body": m.body(),
                "attributes": attributes,
                "messageAttributes": {},
                "md5OfBody": m.md5_of_body(),
                "eventSource": "aws:sqs",
                "eventSourceARN": queue_arn,
                "awsRegion": region,
            })
        })
        .collect();
    json!({ "Records": records })
}

/// The message ids the function reported as failed (`None`: the whole batch failed).
pub fn failed_items(answer: &Invoked) -> Option<Vec<String>> {
    let Invoked::Ok(bytes) = answer else { return None };
    let v: Value = serde_json::from_slice(bytes).ok()?;
    Some(
        v["batchItemFailures"]
            .as_array()
            .map(|a| a.iter().filter_map(|f| f["itemIdentifier"].as_str().map(str::to_owned)).collect())
            .unwrap_or_default(),
    )
}

impl SqsMapping {
    /// Poll forever.
    pub async fn run(self) {
        loop {
            match self.once().await {
                Ok(0) => tokio::time::sleep(self.idle).await,
                Ok(_) => {}
                Err(e) => {
                    tracing::warn!(function = %self.function, error = %e, "SQS event source");
                    tokio::time::sleep(Duration::from_secs(1)).await;
                }
            }
        }
    }

    /// One receive → invoke → delete round; how many messages it received.
    pub async fn once(&self) -> Result<usize, String> {
        let out = self
            .sqs
            .receive_message()
            .queue_url(&self.queue_url)
            .max_number_of_messages(self.batch_size.clamp(1, 10))
            .message_system_attribute_names(MessageSystemAttributeName::All)
            .send()
            .await
            .map_err(|e| format!("ReceiveMessage: {}", aws_sdk_sqs::error::DisplayErrorContext(&e)))?;
        let messages = out.messages();
        if messages.is_empty() {
            return Ok(0);
        }
        let event = sqs_event(messages, &self.queue_arn, &self.region);
        let answer = self.invoker.invoke(&self.function, &event, self.timeout).await.map_err(|e| e.to_string())?;
        // a failed invocation leaves the whole batch to reappear after its visibility timeout
        let Some(failed) = failed_items(&answer) else {
            return Err(format!("{} failed the batch: {answer:?}", self.function));
        };
        for m in messages.iter().filter(|m| !failed.iter().any(|f| Some(f.as_str()) == m.message_id())) {
            if let Some(handle) = m.receipt_handle() {
                self.sqs
                    .delete_message()
                    .queue_url(&self.queue_url)
                    .receipt_handle(handle)
                    .send()
                    .await
                    .map_err(|e| format!("DeleteMessage: {}", aws_sdk_sqs::error::DisplayErrorContext(&e)))?;
            }
        }
        Ok(messages.len())
    }
}

/// The EventBridge event a `Schedule` event source delivers.
pub fn scheduled_event(rule_arn: &str, region: &str) -> Value {
    json!({
        "version": "0",
        "id": ulid::Ulid::generate().to_string(),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": "000000000000",
        "time": chrono::Utc::now().format("%Y-%m-%dT%H:%M:%SZ").to_string(),
        "region": region,
        "resources": [rule_arn],
        "detail": {},
    })
}

/// Invoke `function` every `every` (the next run starts only after the last one answered).
pub async fn schedule(invoker: Invoker, function: String, timeout: Duration, every: Duration, region: String) {
    let rule = format!("arn:aws:events:{region}:000000000000:rule/{function}");
    let mut tick = tokio::time::interval(every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        match invoker.invoke(&function, &scheduled_event(&rule, &region), timeout).await {
            Ok(Invoked::Ok(_)) => {}
            Ok(Invoked::FunctionError(e)) => tracing::warn!(%function, error = %e, "scheduled run failed"),
            Err(e) => tracing::warn!(%function, error = %e, "scheduled run"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_reported_items_fail_and_a_function_error_fails_the_batch() {
        let ok = Invoked::Ok(br#"{"batchItemFailures":[{"itemIdentifier":"m2"}]}"#.to_vec());
        assert_eq!(failed_items(&ok), Some(vec!["m2".to_owned()]));
        assert_eq!(failed_items(&Invoked::Ok(b"{}".to_vec())), Some(vec![]));
        assert_eq!(failed_items(&Invoked::FunctionError("boom".into())), None);
    }

    #[test]
    fn a_batch_becomes_the_event_source_mappings_event() {
        let m = aws_sdk_sqs::types::Message::builder()
            .message_id("m1")
            .receipt_handle("rh")
            .body("acct/msg")
            .attributes(MessageSystemAttributeName::ApproximateReceiveCount, "2")
            .build();
        let ev = sqs_event(&[m], "arn:aws:sqs:us-east-1:000000000000:q", "us-east-1");
        let r = &ev["Records"][0];
        assert_eq!((r["messageId"].as_str(), r["body"].as_str()), (Some("m1"), Some("acct/msg")));
        assert_eq!(r["attributes"]["ApproximateReceiveCount"], "2");
        assert_eq!(r["eventSource"], "aws:sqs");
        // the deliver function's own event type must read it
        let parsed: serde_json::Value = scheduled_event("arn", "us-east-1");
        assert_eq!(parsed["detail-type"], "Scheduled Event");
    }
}

//! # ma2h-queue-sqs
//!
//! [`PushQueue`] on SQS: after the terminal transition commits its push obligation, the Hub sends
//! `{account, id}` to the delivery queue; the `deliver` function performs the push. The queue's
//! redrive policy moves messages that keep failing to a DLQ. A lost send loses nothing — the
//! obligation is in the store and the `sweep` function re-enqueues stale ones (§3.1).

use async_trait::async_trait;
use aws_sdk_sqs::Client;
use ma2h_core::ports::PushQueue;
use ma2h_protocol::ids::{AccountId, MessageId};
use serde::{Deserialize, Serialize};

/// The queue message body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushJob {
    pub account: String,
    pub id: String,
}

impl PushJob {
    pub fn parse(body: &str) -> Option<(AccountId, MessageId)> {
        let job: PushJob = serde_json::from_str(body).ok()?;
        Some((AccountId::parse(&job.account)?, MessageId::parse(&job.id)?))
    }
}

#[derive(Debug, Clone)]
pub struct SqsPushQueue {
    client: Client,
    queue_url: String,
}

impl SqsPushQueue {
    pub fn new(client: Client, queue_url: impl Into<String>) -> Self {
        Self { client, queue_url: queue_url.into() }
    }

    pub fn client(&self) -> &Client {
        &self.client
    }

    pub fn queue_url(&self) -> &str {
        &self.queue_url
    }

    /// Keep a received job invisible for `seconds` more (the push's retry backoff). A failure is
    /// logged: the job then reappears after the queue's own visibility timeout instead.
    pub async fn delay(&self, receipt_handle: &str, seconds: i32) {
        let res = self
            .client
            .change_message_visibility()
            .queue_url(&self.queue_url)
            .receipt_handle(receipt_handle)
            .visibility_timeout(seconds)
            .send()
            .await;
        if let Err(e) = res {
            tracing::warn!(error = ?e, "could not set the retry delay");
        }
    }

    /// Send one job; `Err` carries the SDK error text.
    pub async fn send(&self, account: &AccountId, id: &MessageId) -> Result<(), String> {
        let body = serde_json::to_string(&PushJob { account: account.to_string(), id: id.to_string() })
            .map_err(|e| e.to_string())?;
        self.client
            .send_message()
            .queue_url(&self.queue_url)
            .message_body(body)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| format!("{e:?}"))
    }
}

#[async_trait]
impl PushQueue for SqsPushQueue {
    async fn enqueue(&self, account: &AccountId, id: &MessageId) {
        if let Err(e) = self.send(account, id).await {
            // Not lost: the sweeper re-enqueues pending pushes whose due time has passed.
            tracing::warn!(message_id = %id, error = %e, "push enqueue failed; the sweeper will retry");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn job_bodies_round_trip_and_garbage_is_rejected() {
        let id = MessageId::from_parts(1, 2);
        let body = serde_json::to_string(&PushJob { account: "acme".into(), id: id.to_string() }).unwrap();
        assert_eq!(PushJob::parse(&body), Some((AccountId::parse("acme").unwrap(), id)));
        assert_eq!(PushJob::parse("{}"), None);
        assert_eq!(PushJob::parse(r#"{"account":"acme","id":"not-an-id"}"#), None);
    }
}

//! # ma2h-queue-sqs
//!
//! [`PushQueue`] on SQS: after the terminal transition commits its push obligation, the Hub sends
//! `{account, id}` to the delivery queue; the `deliver` function performs the push. The queue's
//! redrive policy moves messages that keep failing to a DLQ. A lost send loses nothing — the
//! obligation is in the store and the `sweep` function re-enqueues stale ones (§3.1).

use async_trait::async_trait;
use aws_sdk_sqs::Client;
use ma2h_core::ports::{PushQueue, QueueError};
use ma2h_protocol::ids::{AccountId, MessageId};
use ma2h_protocol::time::Timestamp;
use serde::{Deserialize, Serialize};

/// SQS caps a visibility timeout at 12 hours.
const MAX_VISIBILITY_SECS: i64 = 43_200;

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

    /// Keep a received job invisible until `at` (the push's next attempt; at once when `None`),
    /// within SQS's 12-hour visibility cap. A failure is logged: the job then reappears after the
    /// queue's own visibility timeout instead.
    pub async fn hide_until(&self, receipt_handle: &str, at: Option<Timestamp>, now: Timestamp) {
        self.delay(receipt_handle, visibility_secs(at, now)).await;
    }

    /// Keep a received job invisible for `seconds` more. See [`Self::hide_until`].
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

    /// Send one job.
    pub async fn send(&self, account: &AccountId, id: &MessageId) -> Result<(), QueueError> {
        let body = serde_json::to_string(&PushJob { account: account.to_string(), id: id.to_string() })
            .map_err(|e| QueueError(e.to_string()))?;
        self.client
            .send_message()
            .queue_url(&self.queue_url)
            .message_body(body)
            .send()
            .await
            .map(|_| ())
            .map_err(|e| QueueError(format!("{e:?}")))
    }
}

/// Seconds from `now` to `at`, within SQS's visibility range (0 when due or unset).
fn visibility_secs(at: Option<Timestamp>, now: Timestamp) -> i32 {
    let seconds = at.map_or(0, |t| (t - now).num_seconds().clamp(0, MAX_VISIBILITY_SECS));
    i32::try_from(seconds).unwrap_or(0)
}

#[async_trait]
impl PushQueue for SqsPushQueue {
    async fn enqueue(&self, account: &AccountId, id: &MessageId) -> Result<(), QueueError> {
        self.send(account, id).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_retry_hides_the_job_until_its_next_attempt_within_the_sqs_cap() {
        let now = ma2h_protocol::time::from_millis(1_000_000);
        let later = |s: i64| Some(now + chrono::Duration::seconds(s));
        assert_eq!(visibility_secs(later(30), now), 30);
        assert_eq!(visibility_secs(later(-5), now), 0, "overdue: at once");
        assert_eq!(visibility_secs(None, now), 0);
        assert_eq!(visibility_secs(later(86_400), now), 43_200, "12 hours at most");
    }

    #[test]
    fn job_bodies_round_trip_and_garbage_is_rejected() {
        let id = MessageId::from_parts(1, 2);
        let body = serde_json::to_string(&PushJob { account: "acme".into(), id: id.to_string() }).unwrap();
        assert_eq!(PushJob::parse(&body), Some((AccountId::parse("acme").unwrap(), id)));
        assert_eq!(PushJob::parse("{}"), None);
        assert_eq!(PushJob::parse(r#"{"account":"acme","id":"not-an-id"}"#), None);
    }
}

//! # ma2h-queue-sqs
//!
//! [`PushQueue`] on SQS. Just *before* a terminal transition with a push commits, the Hub sends
//! `{account, id, resolution_id, at}` to the delivery queue ([`PushQueue::announce`]); the
//! `deliver` function performs the push once that resolution is the committed terminal, and drops
//! the job if another one won or it never committed. SQS keeps the job durably (with a DLQ), so
//! an obligation can never lose its announcement after the commit, and the store keeps no index
//! entry for it. If the send fails, the Hub enqueues `{account, id}` after the commit instead, and
//! the `sweep` function re-enqueues such a job if that send is lost too (§3.1).

use async_trait::async_trait;
use aws_sdk_sqs::Client;
use ma2h_core::ports::{PushQueue, QueueError};
use ma2h_protocol::ids::{AccountId, MessageId, ResolutionId};
use ma2h_protocol::time::Timestamp;
use serde::{Deserialize, Serialize};

/// SQS caps a visibility timeout at 12 hours.
const MAX_VISIBILITY_SECS: i64 = 43_200;

/// The queue message body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushJob {
    pub account: String,
    pub id: String,
    /// Set on an announcement: the terminal this job belongs to, and when it was sent (ms).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resolution_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub at: Option<i64>,
    /// A channel notification job (issue 20): work the message's outbox item, not its push.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub notify: bool,
}

/// A verified Slack interaction to apply (issue 20): `{"account", "slack": <payload JSON text>}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlackJob {
    pub account: String,
    pub slack: String,
}

impl SlackJob {
    /// `Some((account, payload))` for a Slack job's body; `None` for any other job.
    pub fn parse(body: &str) -> Option<(AccountId, String)> {
        let job: SlackJob = serde_json::from_str(body).ok()?;
        Some((AccountId::parse(&job.account)?, job.slack))
    }
}

/// A parsed job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Job {
    pub account: AccountId,
    pub id: MessageId,
    /// An announcement's terminal and its send time.
    pub announced: Option<(ResolutionId, Timestamp)>,
    /// A channel notification job (issue 20).
    pub notify: bool,
}

impl PushJob {
    pub fn parse(body: &str) -> Option<Job> {
        let job: PushJob = serde_json::from_str(body).ok()?;
        let announced = match (job.resolution_id, job.at) {
            (Some(r), Some(at)) => Some((ResolutionId::parse(&r)?, ma2h_protocol::time::from_millis(at))),
            _ => None,
        };
        Some(Job {
            account: AccountId::parse(&job.account)?,
            id: MessageId::parse(&job.id)?,
            announced,
            notify: job.notify,
        })
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
        self.send_job(&PushJob {
            account: account.to_string(),
            id: id.to_string(),
            resolution_id: None,
            at: None,
            notify: false,
        })
        .await
    }

    async fn send_job(&self, job: &impl Serialize) -> Result<(), QueueError> {
        let body = serde_json::to_string(job).map_err(|e| QueueError(e.to_string()))?;
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

    async fn announce(
        &self,
        account: &AccountId,
        id: &MessageId,
        resolution: &ResolutionId,
        at: Timestamp,
    ) -> Result<bool, QueueError> {
        let job = PushJob {
            account: account.to_string(),
            id: id.to_string(),
            resolution_id: Some(resolution.to_string()),
            at: Some(at.timestamp_millis()),
            notify: false,
        };
        self.send_job(&job).await.map(|()| true)
    }

    async fn defer_interaction(&self, account: &AccountId, payload: &str) -> Result<bool, QueueError> {
        self.send_job(&SlackJob { account: account.to_string(), slack: payload.to_owned() }).await.map(|()| true)
    }

    async fn enqueue_notification(&self, account: &AccountId, id: &MessageId) -> Result<(), QueueError> {
        let job =
            PushJob { account: account.to_string(), id: id.to_string(), resolution_id: None, at: None, notify: true };
        self.send_job(&job).await
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
        let body = serde_json::to_string(&PushJob {
            account: "acme".into(),
            id: id.to_string(),
            resolution_id: None,
            at: None,
            notify: false,
        })
        .unwrap();
        assert!(!body.contains("notify"), "a push job's body is unchanged");
        let acme = AccountId::parse("acme").unwrap();
        assert_eq!(
            PushJob::parse(&body),
            Some(Job { account: acme.clone(), id: id.clone(), announced: None, notify: false })
        );
        let note = format!(r#"{{"account":"acme","id":"{id}","notify":true}}"#);
        assert!(PushJob::parse(&note).unwrap().notify);
        let announced = r#"{"account":"acme","id":"ID","resolution_id":"res_01J00000000000000000000000","at":1000}"#
            .replace("ID", id.as_str());
        let job = PushJob::parse(&announced).unwrap();
        assert_eq!(
            job.announced.map(|(r, at)| (r.to_string(), at.timestamp_millis())),
            Some(("res_01J00000000000000000000000".into(), 1000))
        );
        assert_eq!(PushJob::parse("{}"), None);
        assert_eq!(PushJob::parse(r#"{"account":"acme","id":"not-an-id"}"#), None);
    }
}

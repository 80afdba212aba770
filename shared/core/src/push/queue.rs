//! The push ports: the queue that hands a committed push to the delivery worker, and the
//! sender that makes one signed HTTP attempt (§8.3).

use async_trait::async_trait;
use ma2h_protocol::ids::{AccountId, MessageId, ResolutionId};
use ma2h_protocol::time::Timestamp;

/// Hands a committed push obligation to the delivery worker (in-process wake-up locally; an SQS
/// message on AWS). Losing an enqueue loses nothing: the obligation is in the store and the
/// worker / sweeper finds it by its due time.
#[async_trait]
pub trait PushQueue: Send + Sync + 'static {
    async fn enqueue(&self, account: &AccountId, id: &MessageId) -> Result<(), QueueError>;

    /// Take the job of the terminal `resolution` is about to commit, *before* it commits — only
    /// a queue that keeps messages durably for longer than any retry can (SQS). `Ok(true)`: the
    /// queue holds it, so the obligation cannot be lost after the commit and needs no index; the
    /// consumer must then check that `resolution` is the terminal that committed (a job whose
    /// transition lost its CAS, or never committed, is dropped). `Ok(false)` (the default): the
    /// caller enqueues after the commit, as before.
    async fn announce(
        &self,
        _account: &AccountId,
        _id: &MessageId,
        _resolution: &ResolutionId,
        _at: Timestamp,
    ) -> Result<bool, QueueError> {
        Ok(false)
    }

    /// Hand a channel notification item (issue 20) to its worker at once. The default does
    /// nothing: the local worker polls the outbox's due index; SQS sends a job.
    async fn enqueue_notification(&self, _account: &AccountId, _id: &MessageId) -> Result<(), QueueError> {
        Ok(())
    }

    /// Take a *verified* Slack interaction (its JSON payload) to apply later, so the HTTP
    /// function can answer Slack within its 3 seconds whatever the store's latency (SQS on AWS).
    /// `Ok(false)` (the default): the caller applies it inline — the local Hub answers in
    /// milliseconds.
    async fn defer_interaction(&self, _account: &AccountId, _payload: &str) -> Result<bool, QueueError> {
        Ok(false)
    }
}

/// An announcement the queue did not take (the obligation stays in the store).
#[derive(Debug, thiserror::Error)]
#[error("push queue unavailable: {0}")]
pub struct QueueError(pub String);

/// The local [`PushQueue`]: wakes the in-process delivery worker.
#[derive(Debug, Default)]
pub struct WakeWorker(pub tokio::sync::Notify);

#[async_trait]
impl PushQueue for WakeWorker {
    async fn enqueue(&self, _account: &AccountId, _id: &MessageId) -> Result<(), QueueError> {
        self.0.notify_one();
        Ok(())
    }
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PushRequest {
    pub url: String,
    /// Extra headers: `MA2H-Signature`, and `Authorization`/`X-API-Key` for bearer/apikey.
    pub headers: Vec<(String, String)>,
    /// The JSON body (the §6 Response).
    pub body: Vec<u8>,
}

/// What one delivery attempt came to. Only `Retry` is retried (§8.3: 5xx / network / timeout).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PushOutcome {
    /// 2xx.
    Delivered { status: u16 },
    /// 4xx: the receiver refused; never retried.
    Rejected { status: u16 },
    /// 5xx, network error, timeout: retry with backoff.
    Retry { reason: String },
    /// The egress guard refused the destination (§9.4: private/link-local/metadata address,
    /// scheme, redirect…); never retried.
    Refused { reason: String },
}

/// Sends pushes. The HTTP adapter enforces the §9.4 egress rules at delivery time.
#[async_trait]
pub trait PushSender: Send + Sync + 'static {
    async fn send(&self, request: &PushRequest) -> PushOutcome;

    /// As [`Self::send`], also returning the first bytes of a 2xx answer's body (Slack's Web API
    /// answers 200 with `{"ok": false, …}` when it refuses). The default reads nothing.
    async fn send_reading(&self, request: &PushRequest) -> (PushOutcome, Vec<u8>) {
        (self.send(request).await, Vec::new())
    }

    /// One request whose answer is read whatever its status (issue 42: an identity provider's
    /// discovery document, keys and token endpoint), behind the same egress guard. The default
    /// (a process that sends nothing) refuses.
    async fn fetch(&self, _request: &FetchRequest) -> Result<FetchReply, String> {
        Err("this process has no outbound HTTP".into())
    }
}

/// A request [`PushSender::fetch`] makes: `GET` when `body` is `None`, else `POST`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchRequest {
    pub url: String,
    /// Header name and value pairs (`Accept`, `Content-Type`, `Authorization`).
    pub headers: Vec<(String, String)>,
    pub body: Option<Vec<u8>>,
}

/// What came back: the status, the `Content-Type` and the body (at most 256 KiB).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FetchReply {
    pub status: u16,
    pub content_type: Option<String>,
    pub body: Vec<u8>,
}

/// The most of an answer [`PushSender::fetch`] reads.
pub const MAX_FETCH_BYTES: usize = 256 * 1024;

//! Recording doubles of the channel senders (Slack's Web API, webhooks, SMTP) for the
//! notification tests.

use std::sync::Mutex;

use async_trait::async_trait;
use ma2h_core::ports::{PushOutcome, PushRequest, PushSender};
use serde_json::{Value, json};

/// Records every request; Slack calls answer like Slack, webhooks (and push services) answer
/// `webhook_status`.
#[derive(Default)]
pub struct Recording {
    /// URL and JSON body (`null` for a body that is not JSON, as an encrypted push).
    pub sent: Mutex<Vec<(String, Value)>>,
    /// Every request as sent.
    pub raw: Mutex<Vec<PushRequest>>,
    pub webhook_status: Mutex<u16>,
}

impl Recording {
    pub fn to(&self, suffix: &str) -> Vec<Value> {
        self.sent.lock().unwrap().iter().filter(|(u, _)| u.ends_with(suffix)).map(|(_, b)| b.clone()).collect()
    }
}

#[async_trait]
impl PushSender for Recording {
    async fn send(&self, request: &PushRequest) -> PushOutcome {
        self.send_reading(request).await.0
    }
    async fn send_reading(&self, request: &PushRequest) -> (PushOutcome, Vec<u8>) {
        let body: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
        self.raw.lock().unwrap().push(request.clone());
        let n = {
            let mut sent = self.sent.lock().unwrap();
            sent.push((request.url.clone(), body.clone()));
            sent.len()
        };
        if request.url.starts_with("https://slack.test/") {
            let reply = json!({"ok": true, "channel": body["channel"], "ts": format!("1700000000.{n:06}")});
            return (PushOutcome::Delivered { status: 200 }, serde_json::to_vec(&reply).unwrap());
        }
        let status = (*self.webhook_status.lock().unwrap()).max(200);
        let outcome = match status {
            200..=299 => PushOutcome::Delivered { status },
            500..=599 => PushOutcome::Retry { reason: format!("receiver answered {status}") },
            _ => PushOutcome::Rejected { status },
        };
        (outcome, Vec::new())
    }
}

/// Records every mail instead of sending it.
#[derive(Default)]
pub struct Mailbag(pub Mutex<Vec<ma2h_core::ports::Mail>>);

#[async_trait]
impl ma2h_core::ports::MailSender for Mailbag {
    async fn send(&self, mail: &ma2h_core::ports::Mail) -> Result<(), ma2h_core::ports::MailError> {
        self.0.lock().unwrap().push(mail.clone());
        Ok(())
    }
}

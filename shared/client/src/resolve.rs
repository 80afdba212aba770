//! `POST /v1/messages/{id}/resolve` (§8.8): an agent resolver answers an open ask/task, optionally
//! presenting its session (`?session=`) so the Hub attests the session-qualified actor and the
//! call renews that session's lease (§16.2).

use std::time::Duration;

use serde_json::Value;

use crate::session::query_value;
use crate::{Client, ClientError, HubErrorBody};

/// What a resolve observed (§8.8).
#[derive(Debug, Clone, PartialEq)]
pub enum ResolveOutcome {
    /// `200 {id, status, resolution_id}`: this call's resolution won.
    Resolved(Value),
    /// `409 already_terminal`: another terminal won first; the body carries
    /// `{id, status, resolution}` (the real outcome, §8.4/§8.8).
    AlreadyTerminal(Value),
}

impl Client {
    /// `POST /v1/messages/{id}/resolve[?session=…]` with a §8.8 body such as
    /// `{"resolution": "answered", "value": "approve"}`. Not retried: a lost answer is recovered
    /// by reading the message (§8.2), and a repeat would only meet `already_terminal`.
    pub async fn resolve(&self, id: &str, body: &Value, session: Option<&str>) -> Result<ResolveOutcome, ClientError> {
        let mut path = format!("/v1/messages/{}/resolve", query_value(id));
        if let Some(s) = session {
            path.push_str(&format!("?session={}", query_value(s)));
        }
        let bytes = serde_json::to_vec(body).expect("a Value serializes");
        let reply = self.send(reqwest::Method::POST, &path, Some(&bytes), Duration::from_secs(30)).await?;
        match reply.status {
            200 => Ok(ResolveOutcome::Resolved(Self::json(&reply)?)),
            409 => {
                let err = HubErrorBody::from_response(409, &reply.body);
                if err.code == "already_terminal" {
                    Ok(ResolveOutcome::AlreadyTerminal(err.body))
                } else {
                    Err(ClientError::Hub(Box::new(err)))
                }
            }
            s => Err(ClientError::hub(s, &reply.body)),
        }
    }
}

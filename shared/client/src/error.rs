//! Client errors: configuration, an unreachable Hub, and every §8.5 Hub error code.

use ma2h_protocol::wire::ErrorEnvelope;
use serde::Deserialize;
use serde_json::Value;

/// A §8.5 error envelope `{"error": {"code", "message"}}` with its HTTP status.
#[derive(Debug, Clone, PartialEq)]
pub struct HubErrorBody {
    pub status: u16,
    pub code: String,
    pub message: String,
    /// The whole body (a 409 `already_terminal` also carries `{id, status, resolution}`, §8.4).
    pub body: Value,
}

impl HubErrorBody {
    /// Parse an error response; a non-envelope body falls back to the §8.5 base code of its class.
    pub fn from_response(status: u16, body: &[u8]) -> Self {
        let body: Value = serde_json::from_slice(body).unwrap_or(Value::Null);
        let (code, message) = match ErrorEnvelope::deserialize(&body) {
            Ok(e) => (e.error.code, e.error.message),
            Err(_) => (base_code(status).to_owned(), format!("HTTP {status}")),
        };
        Self { status, code, message, body }
    }

    /// A one-line hint for a human, per §8.5 code (unknown codes fall back to their class, §8.5).
    pub fn hint(&self) -> &'static str {
        match self.code.as_str() {
            "validation_error" => "the envelope is malformed; check the flags you passed",
            "version_not_supported" => "the Hub does not speak this ma2h_version",
            "unauthenticated" => "MA2H_API_KEY is missing, wrong or revoked",
            "agent_id_mismatch" => "MA2H_AGENT_ID does not match the agent the API key belongs to",
            "not_authorized" => "this credential may not do that (see allowed_resolvers, §9.1)",
            "session_closed_by_operator" => "an operator stopped this agent's session; do not retry",
            "not_found" => "no such message for this agent (unknown id, or another agent's)",
            "gone" | "destination_gone" => "the message or destination was deleted",
            "idempotency_conflict" => "this idempotency key was already used with a different payload",
            "already_terminal" => "the message is already resolved",
            "not_acknowledgeable" => "the message is not in a state that can be acknowledged",
            // the Hub's message names the field and, for callbacks, the admin command to run
            "invalid_field" if self.message.contains("callback binding") => {
                "the callback host must be bound to this agent by an operator first (§9.4; see the message)"
            }
            "invalid_field" if self.message.contains("secret named") => {
                "the callback's secret/token must be registered for this agent by an operator first (see the message)"
            }
            "invalid_field" if self.message.contains("expires_at") => "expires_at must be in the future (Hub clock)",
            "unknown_destination" => "no such agent or session to address (or the sender may not reach it)",
            "invalid_field" => "a field was rejected; the message names it",
            "rate_limited" => "over the Hub's rate limit; retry after the advertised delay",
            _ => match self.status {
                400 => "the request was rejected as malformed",
                401 => "MA2H_API_KEY is missing, wrong or revoked",
                403 => "this credential may not do that",
                404 => "not found",
                409 => "conflict with the message's current state",
                422 => "a field was rejected",
                429 => "rate limited",
                _ => "the Hub failed; try again later",
            },
        }
    }
}

/// §8.5 unknown-code fallback: the base code of a status class.
fn base_code(status: u16) -> &'static str {
    match status {
        400 => "validation_error",
        401 => "unauthenticated",
        403 => "not_authorized",
        404 => "not_found",
        409 => "already_terminal",
        410 => "gone",
        422 => "invalid_field",
        429 => "rate_limited",
        _ => "internal_error",
    }
}

#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Missing or invalid configuration (environment, flags, keys).
    #[error("configuration error: {0}")]
    Config(String),
    /// The Hub could not be reached (DNS, connect, timeout) after the retry budget.
    #[error("hub unreachable at {url}: {reason}")]
    Unreachable { url: String, reason: String },
    /// The Hub answered with a §8.5 error.
    #[error("hub error {} {}: {} ({})", .0.status, .0.code, .0.message, .0.hint())]
    Hub(Box<HubErrorBody>),
    /// The Hub answered something this client cannot read.
    #[error("unexpected hub response: {0}")]
    Protocol(String),
}

impl ClientError {
    /// A §8.5 error from a status and body.
    pub fn hub(status: u16, body: &[u8]) -> Self {
        Self::Hub(Box::new(HubErrorBody::from_response(status, body)))
    }
}

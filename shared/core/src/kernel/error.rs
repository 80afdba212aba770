//! The use-case error: every variant is one §8.5 status/code pair (mapped in the HTTP crate).

use ma2h_protocol::ProtocolError;
use ma2h_protocol::ids::MessageId;
use ma2h_protocol::lifecycle::{Resolution, Status};

#[derive(Debug, thiserror::Error)]
pub enum HubError {
    #[error(transparent)]
    Protocol(#[from] ProtocolError),
    /// 401 `unauthenticated`.
    #[error("missing or invalid credential")]
    Unauthenticated,
    /// 403 `agent_id_mismatch`.
    #[error("envelope agent.id `{envelope}` does not match the credential's agent")]
    AgentIdMismatch { envelope: String },
    /// 403 `not_authorized`.
    #[error("{0}")]
    NotAuthorized(String),
    /// 403 `not_authorized`: an approval policy asks for a passkey step-up this answer did not
    /// carry (issue 41).
    #[error("this ask needs a passkey (policy `{policy}`): answer it in the inbox, confirming with your passkey")]
    PasskeyRequired { policy: String },
    /// 404 `not_found` — also what another principal sees for a message it does not own (§9.1).
    #[error("unknown message id")]
    NotFound,
    /// 404 `not_found` for a path that names no endpoint (the Router's fallback says the same).
    #[error("no such endpoint")]
    NoSuchEndpoint,
    /// 404 `not_found` for a session: unknown, or another principal's (§16.1).
    #[error("unknown session id")]
    UnknownSession,
    /// 410 `gone`: purged after retention.
    #[error("message was removed after the retention period")]
    Gone,
    /// 410 `gone` (expired or self-closed) or `session_closed_by_operator`: a presented session
    /// of the caller's own has ended (§16.3).
    #[error("{}", if *.by_operator { "stopped by the account operator: do not re-register" } else { "this session has ended: register a new one" })]
    SessionEnded { by_operator: bool },
    /// 410 `destination_gone`: a named session has ended (§4, §16.3).
    #[error("{0}")]
    DestinationGone(String),
    /// 403 `session_closed_by_operator`: the principal is stopped (§16.4.1).
    #[error("stopped by the account operator: only the account's human can lift the stop")]
    Stopped,
    /// 409 `idempotency_conflict`.
    #[error("idempotency_key `{key}` was already used with a different payload")]
    IdempotencyConflict { key: String },
    /// 409 `already_terminal` with the existing outcome.
    #[error("message is already {}", status.as_str())]
    AlreadyTerminal { id: MessageId, status: Status, resolution: Option<Resolution> },
    /// 409 `not_acknowledgeable`: nothing delivered yet to acknowledge (§14.1).
    #[error("{0}")]
    NotAcknowledgeable(String),
    /// 422 `unknown_destination`.
    #[error("{0}")]
    UnknownDestination(String),
    /// 408 `request_timeout`: the client did not send its request body in time.
    #[error("the request body was not received within {seconds} s")]
    RequestTimeout { seconds: u64 },
    /// 429 `rate_limited`, with `Retry-After`.
    #[error("{message}")]
    RateLimited { message: String, retry_after_secs: u64 },
    /// 500 — storage failure (opaque on the wire; the cause is logged).
    #[error(transparent)]
    Store(#[from] StoreError),
    /// 500 — a broken invariant (opaque on the wire; the cause is logged).
    #[error("internal error: {0}")]
    Internal(String),
}

impl HubError {
    pub fn validation(msg: impl Into<String>) -> Self {
        Self::Protocol(ProtocolError::validation(msg))
    }
    pub fn invalid_field(msg: impl Into<String>) -> Self {
        Self::Protocol(ProtocolError::invalid_field(msg))
    }
}

/// A storage failure. Conflicts are not errors: they come back as [`Inserted::Existing`] /
/// [`Completion::AlreadyTerminal`], and the use cases map them to spec codes in one place.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("store unavailable: {0}")]
    Unavailable(String),
    #[error("store data corrupt: {0}")]
    Corrupt(String),
}

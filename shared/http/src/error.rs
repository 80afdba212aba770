//! The one HTTP error type: every [`HubError`] becomes the §8.5 envelope
//! `{"error": {"code", "message"}}` with its status. 5xx bodies are opaque; the cause is logged.

use axum::Json;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use ma2h_core::HubError;
use ma2h_protocol::ProtocolError;
use ma2h_protocol::wire::{ErrorEnvelope, ExistingOutcome};

/// A handler failure.
#[derive(Debug)]
pub struct ApiError(pub HubError);

impl<E: Into<HubError>> From<E> for ApiError {
    fn from(e: E) -> Self {
        Self(e.into())
    }
}

/// The §8.5 envelope.
pub fn envelope(status: StatusCode, code: &str, message: &str) -> Response {
    (status, Json(ErrorEnvelope::new(code, message))).into_response()
}

/// The status and §8.5 code of an error a client may see; `None` for the opaque 5xx.
pub fn status_and_code(e: &HubError) -> Option<(StatusCode, &'static str)> {
    Some(match e {
        HubError::Protocol(ProtocolError::Validation { .. }) => (StatusCode::BAD_REQUEST, "validation_error"),
        HubError::Protocol(ProtocolError::VersionNotSupported(_)) => (StatusCode::BAD_REQUEST, "version_not_supported"),
        HubError::Protocol(ProtocolError::InvalidField { .. }) => (StatusCode::UNPROCESSABLE_ENTITY, "invalid_field"),
        HubError::Unauthenticated => (StatusCode::UNAUTHORIZED, "unauthenticated"),
        HubError::AgentIdMismatch { .. } => (StatusCode::FORBIDDEN, "agent_id_mismatch"),
        HubError::NotAuthorized(_) | HubError::PasskeyRequired { .. } => (StatusCode::FORBIDDEN, "not_authorized"),
        HubError::NotFound | HubError::UnknownSession | HubError::NoSuchEndpoint => {
            (StatusCode::NOT_FOUND, "not_found")
        }
        HubError::Gone | HubError::SessionEnded { by_operator: false } => (StatusCode::GONE, "gone"),
        HubError::SessionEnded { by_operator: true } => (StatusCode::GONE, "session_closed_by_operator"),
        HubError::DestinationGone(_) => (StatusCode::GONE, "destination_gone"),
        HubError::Stopped => (StatusCode::FORBIDDEN, "session_closed_by_operator"),
        HubError::IdempotencyConflict { .. } => (StatusCode::CONFLICT, "idempotency_conflict"),
        HubError::AlreadyTerminal { .. } => (StatusCode::CONFLICT, "already_terminal"),
        HubError::NotAcknowledgeable(_) => (StatusCode::CONFLICT, "not_acknowledgeable"),
        HubError::UnknownDestination(_) => (StatusCode::UNPROCESSABLE_ENTITY, "unknown_destination"),
        HubError::RequestTimeout { .. } => (StatusCode::REQUEST_TIMEOUT, "request_timeout"),
        HubError::RateLimited { .. } => (StatusCode::TOO_MANY_REQUESTS, "rate_limited"),
        HubError::Store(_) | HubError::Internal(_) => return None,
    })
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let e = self.0;
        let Some((status, code)) = status_and_code(&e) else {
            tracing::error!(error = %e, "request failed");
            return envelope(StatusCode::INTERNAL_SERVER_ERROR, "internal_error", "internal error");
        };
        let mut body = ErrorEnvelope::new(code, e.to_string());
        if let HubError::Protocol(p) = &e
            && !p.fields().is_empty()
        {
            // Additive to the §8.5 envelope: every offending field as a JSON pointer.
            body.error.fields = Some(p.fields().to_vec());
        }
        if let HubError::AlreadyTerminal { id, status, resolution } = &e {
            // §8.4/§8.8: the 409 carries the existing outcome so the caller reads the real result.
            body.outcome = Some(ExistingOutcome { id: id.to_string(), status: *status, resolution: *resolution });
        }
        let mut resp = (status, Json(body)).into_response();
        if let HubError::RateLimited { retry_after_secs, .. } = &e {
            resp.headers_mut().insert(header::RETRY_AFTER, HeaderValue::from(*retry_after_secs));
        }
        if status == StatusCode::UNAUTHORIZED {
            resp.headers_mut().insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
        }
        resp
    }
}

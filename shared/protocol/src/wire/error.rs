//! §8.5: the error envelope every failure answers with.

use serde::{Deserialize, Serialize};

use crate::error::FieldError;
use crate::lifecycle::{Resolution, Status};

/// `{"error": {code, message, fields?}}`, plus the existing outcome on a 409 `already_terminal`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorEnvelope {
    pub error: ErrorBody,
    /// §8.4/§8.8: a 409 carries the existing outcome so the caller reads the real result.
    #[serde(flatten)]
    pub outcome: Option<ExistingOutcome>,
}

/// `error` of the envelope.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ErrorBody {
    /// The §8.5 code (`validation_error`, `not_found`, …).
    pub code: String,
    pub message: String,
    /// Additive to §8.5: every offending field as a JSON pointer.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fields: Option<Vec<FieldError>>,
}

/// The terminal a 409 `already_terminal` reports (`resolution` is `null` when unknown).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExistingOutcome {
    pub id: String,
    pub status: Status,
    pub resolution: Option<Resolution>,
}

impl ErrorEnvelope {
    pub fn new(code: impl Into<String>, message: impl Into<String>) -> Self {
        Self { error: ErrorBody { code: code.into(), message: message.into(), fields: None }, outcome: None }
    }
}

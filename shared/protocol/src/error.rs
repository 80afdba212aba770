//! Protocol-level rejections. Each variant maps to exactly one §8.5 status/code pair; the HTTP
//! crate does that mapping in one place.

use thiserror::Error;

/// Why an envelope, resolve request or header was rejected by protocol rules.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ProtocolError {
    /// §8.5 400 `validation_error`: malformed JSON or a schema violation. The message names the
    /// offending field (a JSON pointer such as `/request/options`).
    #[error("{0}")]
    Validation(String),
    /// §8.5/§10 400 `version_not_supported`: unknown major, or a push callback below minor 3.
    #[error("{0}")]
    VersionNotSupported(String),
    /// §8.5 422 `invalid_field`: a cross-field rule the schema cannot express.
    #[error("{0}")]
    InvalidField(String),
}

impl ProtocolError {
    pub fn validation(msg: impl Into<String>) -> Self {
        Self::Validation(msg.into())
    }
    pub fn invalid_field(msg: impl Into<String>) -> Self {
        Self::InvalidField(msg.into())
    }
}

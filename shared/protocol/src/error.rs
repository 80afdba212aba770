//! Protocol-level rejections. Each variant maps to exactly one §8.5 status/code pair; the HTTP
//! crate does that mapping in one place.

use serde::{Deserialize, Serialize};
use thiserror::Error;

/// One thing a request got wrong: where (a JSON pointer into the request body, `/` for the
/// whole of it) and what. Carried beside the message so clients — the web inbox included — mark
/// the field without parsing text.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldError {
    pub pointer: String,
    pub message: String,
}

impl FieldError {
    pub fn new(pointer: impl Into<String>, message: impl Into<String>) -> Self {
        let pointer = pointer.into();
        Self { pointer: if pointer.is_empty() { "/".into() } else { pointer }, message: message.into() }
    }

    /// The same error inside `parent` (e.g. an answer's `/n` → `/value/n`).
    pub fn within(mut self, parent: &str) -> Self {
        self.pointer = match self.pointer.as_str() {
            "/" => parent.to_owned(),
            p => format!("{parent}{p}"),
        };
        self
    }
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "`{}`: {}", self.pointer, self.message)
    }
}

/// Why an envelope, resolve request or header was rejected by protocol rules.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum ProtocolError {
    /// §8.5 400 `validation_error`: malformed JSON or a schema violation. The message leads with
    /// the most specific offending field; `fields` lists every one found.
    #[error("{message}")]
    Validation { message: String, fields: Vec<FieldError> },
    /// §8.5/§10 400 `version_not_supported`: unknown major, or a push callback below minor 3.
    #[error("{0}")]
    VersionNotSupported(String),
    /// §8.5 422 `invalid_field`: a cross-field rule the schema cannot express.
    #[error("{message}")]
    InvalidField { message: String, fields: Vec<FieldError> },
}

/// "`/a`: x" or "`/a`: x (and 2 more)".
fn summary(fields: &[FieldError]) -> String {
    match fields {
        [] => "invalid request".into(),
        [one] => one.to_string(),
        [first, rest @ ..] => format!("{first} (and {} more)", rest.len()),
    }
}

impl ProtocolError {
    pub fn validation(msg: impl Into<String>) -> Self {
        Self::Validation { message: msg.into(), fields: Vec::new() }
    }
    pub fn invalid_field(msg: impl Into<String>) -> Self {
        Self::InvalidField { message: msg.into(), fields: Vec::new() }
    }
    /// 400 `validation_error` at these fields.
    pub fn validation_at(fields: Vec<FieldError>) -> Self {
        Self::Validation { message: summary(&fields), fields }
    }
    /// 422 `invalid_field` at these fields.
    pub fn invalid_at(fields: Vec<FieldError>) -> Self {
        Self::InvalidField { message: summary(&fields), fields }
    }
    /// The fields named, when the rule that failed knows them.
    pub fn fields(&self) -> &[FieldError] {
        match self {
            Self::Validation { fields, .. } | Self::InvalidField { fields, .. } => fields,
            Self::VersionNotSupported(_) => &[],
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_errors_nest_and_summarise() {
        let e = ProtocolError::invalid_at(vec![
            FieldError::new("/n", "must be at least 1").within("/value"),
            FieldError::new("", "must be an object").within("/value"),
        ]);
        assert_eq!(e.to_string(), "`/value/n`: must be at least 1 (and 1 more)");
        assert_eq!(e.fields()[1].pointer, "/value");
    }
}

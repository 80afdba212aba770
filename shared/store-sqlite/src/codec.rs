//! Translation between records and SQLite values, and between SQLite errors and [`StoreError`].
//!
//! Timestamps are stored as integer Unix **milliseconds** (the wire precision, see
//! `ma2h_protocol::time`); sub-millisecond parts are truncated on the way in. Every value read
//! back is validated: a row that does not decode is reported as [`StoreError::Corrupt`], never a
//! panic.

use chrono::DateTime;
use ma2h_core::ports::StoreError;
use ma2h_protocol::time::Timestamp;
use rusqlite::ErrorCode;
use serde_json::Value;

/// The adapter's internal error: everything converts into it with `?` and leaves the crate as a
/// [`StoreError`].
#[derive(Debug, thiserror::Error)]
pub(crate) enum DbError {
    #[error(transparent)]
    Sqlite(#[from] rusqlite::Error),
    /// A stored value that does not decode into a record.
    #[error("{0}")]
    Corrupt(String),
    /// The database cannot be used by this build (e.g. a newer schema).
    #[error("{0}")]
    Unavailable(String),
}

impl From<DbError> for StoreError {
    fn from(e: DbError) -> Self {
        match e {
            DbError::Corrupt(m) => StoreError::Corrupt(m),
            DbError::Unavailable(m) => StoreError::Unavailable(m),
            DbError::Sqlite(e) => sqlite_error(e),
        }
    }
}

/// Busy/locked/IO/full/… are transient or environmental (`Unavailable`); a malformed file or a
/// value of the wrong type is `Corrupt`. Anything else (including constraint violations, which
/// only a caller bug such as a reused message id can cause) is reported as `Unavailable` with
/// SQLite's message.
fn sqlite_error(e: rusqlite::Error) -> StoreError {
    use rusqlite::Error as E;
    match &e {
        E::SqliteFailure(f, _) if matches!(f.code, ErrorCode::DatabaseCorrupt | ErrorCode::NotADatabase) => {
            StoreError::Corrupt(e.to_string())
        }
        E::FromSqlConversionFailure(..)
        | E::IntegralValueOutOfRange(..)
        | E::InvalidColumnType(..)
        | E::Utf8Error(..) => StoreError::Corrupt(e.to_string()),
        _ => StoreError::Unavailable(e.to_string()),
    }
}

/// A Hub timestamp as stored (Unix ms).
pub(crate) fn ms(ts: Timestamp) -> i64 {
    ts.timestamp_millis()
}

pub(crate) fn opt_ms(ts: Option<Timestamp>) -> Option<i64> {
    ts.map(ms)
}

/// A stored Unix-ms value back as a timestamp.
pub(crate) fn ts(ms: i64, what: &str) -> Result<Timestamp, DbError> {
    DateTime::from_timestamp_millis(ms)
        .ok_or_else(|| DbError::Corrupt(format!("{what}: {ms} is not a valid timestamp")))
}

pub(crate) fn opt_ts(ms: Option<i64>, what: &str) -> Result<Option<Timestamp>, DbError> {
    ms.map(|v| ts(v, what)).transpose()
}

/// JSON as stored: compact text. `serde_json` is built with `preserve_order`, so member order
/// survives the round trip and the GET body stays byte-identical (§8.2).
pub(crate) fn json_text(v: &Value) -> String {
    // straight into a buffer (`to_string` goes through `fmt::Display`, a write call per token)
    serde_json::to_string(v).expect("a serde_json::Value always serializes")
}

pub(crate) fn json_value(text: &str, what: &str) -> Result<Value, DbError> {
    serde_json::from_str(text).map_err(|e| DbError::Corrupt(format!("{what}: stored JSON does not parse: {e}")))
}

/// Parse a stored identifier/enum with `parse`, reporting `what` on failure.
pub(crate) fn parsed<T>(value: &str, what: &str, parse: impl FnOnce(&str) -> Option<T>) -> Result<T, DbError> {
    parse(value).ok_or_else(|| DbError::Corrupt(format!("{what}: unexpected stored value {value:?}")))
}

/// A `usize` limit as an SQL integer (saturating).
pub(crate) fn limit(n: usize) -> i64 {
    i64::try_from(n).unwrap_or(i64::MAX)
}

/// The five push columns of a row (`push_status`, `push_attempts`, `push_next_at`,
/// `push_last_error`, `push_delivered_at`, in that order), as stored.
pub(crate) struct RawPush {
    status: Option<String>,
    attempts: i64,
    next_at: Option<i64>,
    last_error: Option<String>,
    delivered_at: Option<i64>,
}

impl RawPush {
    /// Read the five columns starting at index `first`.
    pub(crate) fn read(r: &rusqlite::Row<'_>, first: usize) -> rusqlite::Result<Self> {
        Ok(Self {
            status: r.get(first)?,
            attempts: r.get(first + 1)?,
            next_at: r.get(first + 2)?,
            last_error: r.get(first + 3)?,
            delivered_at: r.get(first + 4)?,
        })
    }

    /// The push track, `None` when the message owes no push; `what` names a column in errors.
    pub(crate) fn decode(
        self,
        what: impl Fn(&str) -> String,
    ) -> Result<Option<ma2h_core::messages::records::PushTrack>, DbError> {
        use ma2h_core::messages::records::{PushStatus, PushTrack};
        let Some(status) = self.status else { return Ok(None) };
        Ok(Some(PushTrack {
            status: parsed(&status, &what("push_status"), PushStatus::parse)?,
            attempts: u32::try_from(self.attempts).map_err(|_| DbError::Corrupt(what("push_attempts")))?,
            next_attempt_at: opt_ts(self.next_at, &what("push_next_at"))?,
            last_error: self.last_error,
            delivered_at: opt_ts(self.delivered_at, &what("push_delivered_at"))?,
        }))
    }
}

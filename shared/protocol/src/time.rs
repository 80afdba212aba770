//! Timestamps on the wire: RFC 3339, UTC, millisecond precision (§9.5: the Hub clock decides).

use chrono::{DateTime, SecondsFormat, Utc};

pub type Timestamp = DateTime<Utc>;

/// Format a Hub timestamp for the wire (`2026-06-04T18:04:11.000Z`).
pub fn format(ts: Timestamp) -> String {
    ts.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// Parse an RFC 3339 timestamp from an envelope.
pub fn parse(s: &str) -> Option<Timestamp> {
    DateTime::parse_from_rfc3339(s).ok().map(|t| t.with_timezone(&Utc))
}

/// From Unix milliseconds (the stores keep integers).
pub fn from_millis(ms: i64) -> Timestamp {
    DateTime::from_timestamp_millis(ms).unwrap_or_default()
}

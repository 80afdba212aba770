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

/// `#[serde(with = "time::wire")]`: a Hub timestamp as [`format`] writes it; any RFC 3339 read.
pub mod wire {
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    use super::Timestamp;

    pub fn serialize<S: Serializer>(t: &Timestamp, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&super::format(*t))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Timestamp, D::Error> {
        let text = String::deserialize(d)?;
        super::parse(&text).ok_or_else(|| D::Error::custom(format!("not an RFC 3339 timestamp: {text}")))
    }
}

/// `#[serde(with = "time::wire_opt")]`: [`wire`] for an optional timestamp (`null` reads as none).
pub mod wire_opt {
    use serde::{Deserialize, Deserializer, Serializer, de::Error};

    use super::Timestamp;

    pub fn serialize<S: Serializer>(t: &Option<Timestamp>, s: S) -> Result<S::Ok, S::Error> {
        match t {
            Some(t) => s.serialize_str(&super::format(*t)),
            None => s.serialize_none(),
        }
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Timestamp>, D::Error> {
        match Option::<String>::deserialize(d)? {
            None => Ok(None),
            Some(text) => super::parse(&text)
                .map(Some)
                .ok_or_else(|| D::Error::custom(format!("not an RFC 3339 timestamp: {text}"))),
        }
    }
}

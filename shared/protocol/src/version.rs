//! `ma2h_version` handling (§10): `MAJOR.MINOR`, major = the integer before the first dot.

use std::fmt;

use crate::ProtocolError;

/// The highest version this Hub implements.
pub const HUB_VERSION: &str = "0.5";
/// The signature-break minor (§10 push parity): a push callback below it cannot be verified.
pub const PUSH_PARITY_MINOR: u32 = 3;

/// A parsed, canonical `0.x` version.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct Version {
    pub minor: u32,
}

impl Version {
    /// Check the major first (unknown major → `version_not_supported`), then the canonical minor
    /// spelling (`0.03` → `validation_error`, so it can never slip past the push-parity gate).
    pub fn parse(s: &str) -> Result<Self, ProtocolError> {
        let (major, minor) = s.split_once('.').unwrap_or((s, ""));
        if major != "0" {
            if !major.is_empty() && major.bytes().all(|b| b.is_ascii_digit()) {
                return Err(ProtocolError::VersionNotSupported(format!(
                    "`/ma2h_version`: major version {major} is not supported (this hub speaks 0.x up to {HUB_VERSION})"
                )));
            }
            return Err(ProtocolError::validation(format!("`/ma2h_version`: `{s}` is not a MAJOR.MINOR version")));
        }
        let canonical =
            minor == "0" || (!minor.is_empty() && !minor.starts_with('0') && minor.bytes().all(|b| b.is_ascii_digit()));
        if !canonical {
            return Err(ProtocolError::validation(format!(
                "`/ma2h_version`: `{s}` is not a canonical 0.x version (no leading zeros)"
            )));
        }
        let minor = minor
            .parse()
            .map_err(|_| ProtocolError::validation(format!("`/ma2h_version`: minor of `{s}` is out of range")))?;
        Ok(Self { minor })
    }

    pub fn supports_push(self) -> bool {
        self.minor >= PUSH_PARITY_MINOR
    }
}

impl fmt::Display for Version {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0.{}", self.minor)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unknown_major_is_version_not_supported() {
        assert!(matches!(Version::parse("1.0"), Err(ProtocolError::VersionNotSupported(_))));
        assert!(matches!(Version::parse("7"), Err(ProtocolError::VersionNotSupported(_))));
    }

    #[test]
    fn non_canonical_minor_is_a_validation_error() {
        for bad in ["0.03", "0.", "0.x", "0.3.1", "abc", ""] {
            assert!(matches!(Version::parse(bad), Err(ProtocolError::Validation { .. })), "{bad}");
        }
    }

    #[test]
    fn canonical_minors_parse_and_gate_push() {
        assert_eq!(Version::parse("0.5").unwrap().minor, 5);
        assert_eq!(Version::parse("0.0").unwrap().minor, 0);
        assert_eq!(Version::parse("0.12").unwrap().to_string(), "0.12");
        assert!(!Version::parse("0.2").unwrap().supports_push());
        assert!(Version::parse("0.3").unwrap().supports_push());
    }
}

//! The §7 state machines: statuses, per-verb resolutions, and the expiry clock rule.
//!
//! The atomic compare-and-set itself lives in the stores; this module decides *what* a transition
//! is allowed to be, with no I/O.

use serde::{Deserialize, Serialize};

use crate::envelope::MessageType;
use crate::time::Timestamp;

/// A message's lifecycle phase (§1: `status`). `Open` is the only non-terminal phase we store;
/// a human-inbox notify is `Delivered` (terminal on acceptance, §5.1).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    Open,
    Delivered,
    Answered,
    Declined,
    Cancelled,
    Expired,
    Completed,
    Dismissed,
    /// v0.5: an addressed notify's status mirrors its §14.2 mailbox track (§5.1, §8.2) — these
    /// three (with `delivered`/`expired`) are read from the track, never stored.
    Queued,
    Acknowledged,
    Bounced,
}

impl Status {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Open => "open",
            Self::Delivered => "delivered",
            Self::Answered => "answered",
            Self::Declined => "declined",
            Self::Cancelled => "cancelled",
            Self::Expired => "expired",
            Self::Completed => "completed",
            Self::Dismissed => "dismissed",
            Self::Queued => "queued",
            Self::Acknowledged => "acknowledged",
            Self::Bounced => "bounced",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        serde_json::from_value(serde_json::Value::String(s.to_owned())).ok()
    }

    pub fn is_open(self) -> bool {
        self == Self::Open
    }

    /// The resolution this status represents, for a resolved ask/task.
    pub fn resolution(self) -> Option<Resolution> {
        match self {
            Self::Open | Self::Delivered | Self::Queued | Self::Acknowledged | Self::Bounced => None,
            Self::Answered => Some(Resolution::Answered),
            Self::Declined => Some(Resolution::Declined),
            Self::Cancelled => Some(Resolution::Cancelled),
            Self::Expired => Some(Resolution::Expired),
            Self::Completed => Some(Resolution::Completed),
            Self::Dismissed => Some(Resolution::Dismissed),
        }
    }
}

/// The terminal outcome of an ask/task (§6): the single canonical value space.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Resolution {
    Answered,
    Declined,
    Cancelled,
    Expired,
    Completed,
    Dismissed,
}

impl Resolution {
    pub fn as_str(self) -> &'static str {
        self.status().as_str()
    }

    pub fn status(self) -> Status {
        match self {
            Self::Answered => Status::Answered,
            Self::Declined => Status::Declined,
            Self::Cancelled => Status::Cancelled,
            Self::Expired => Status::Expired,
            Self::Completed => Status::Completed,
            Self::Dismissed => Status::Dismissed,
        }
    }

    /// §6: ask → answered | declined | cancelled | expired; task → completed | dismissed | expired.
    pub fn valid_for(self, kind: MessageType) -> bool {
        match kind {
            MessageType::Notify => false,
            MessageType::Ask => matches!(self, Self::Answered | Self::Declined | Self::Cancelled | Self::Expired),
            MessageType::Task => matches!(self, Self::Completed | Self::Dismissed | Self::Expired),
        }
    }
}

/// The status a freshly accepted message starts in (§5.1, §7).
pub fn initial_status(kind: MessageType) -> Status {
    match kind {
        MessageType::Notify => Status::Delivered,
        MessageType::Ask | MessageType::Task => Status::Open,
    }
}

/// §7 expiry vs answer: an open message is overdue only *strictly after* `expires_at` on the Hub
/// clock — an answer or cancel at exactly `expires_at` still beats the default.
pub fn is_overdue(expires_at: Option<Timestamp>, now: Timestamp) -> bool {
    matches!(expires_at, Some(e) if now > e)
}

#[cfg(test)]
mod tests {
    use super::*;
    use chrono::Duration;

    #[test]
    fn resolutions_are_verb_specific() {
        assert!(Resolution::Answered.valid_for(MessageType::Ask));
        assert!(Resolution::Cancelled.valid_for(MessageType::Ask));
        assert!(!Resolution::Completed.valid_for(MessageType::Ask));
        assert!(Resolution::Completed.valid_for(MessageType::Task));
        assert!(!Resolution::Cancelled.valid_for(MessageType::Task), "cancelled is ask-only");
        assert!(!Resolution::Answered.valid_for(MessageType::Notify));
    }

    #[test]
    fn answer_at_expires_at_beats_the_default() {
        let e = chrono::Utc::now();
        assert!(!is_overdue(Some(e), e), "§7: at expires_at the answer wins");
        assert!(is_overdue(Some(e), e + Duration::milliseconds(1)));
        assert!(!is_overdue(None, e));
    }

    #[test]
    fn notify_is_delivered_on_acceptance() {
        assert_eq!(initial_status(MessageType::Notify), Status::Delivered);
        assert_eq!(initial_status(MessageType::Ask), Status::Open);
    }
}

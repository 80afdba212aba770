//! The operator API's bodies (Hub extensions): the message listing with its counts and the
//! account's inter-agent policy.

use std::collections::{BTreeMap, BTreeSet};

use serde::{Deserialize, Serialize};

use super::messages::PushTrackView;
use crate::envelope::{MessageType, Priority};
use crate::lifecycle::Status;
use crate::time::{self, Timestamp};

/// 200 to `GET /v1/operator/messages`: one page, the cursor of the next, and (with
/// `?counts=true` on the open listing) the open counts.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Listing {
    /// Rows on this page.
    pub count: usize,
    pub messages: Vec<SummaryRow>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub counts: Option<OpenCountsView>,
}

/// One listing row. Rows hold no `state`, `client_ref` or envelope (§9.1, §9.3). Unset members
/// are written as `null`, except `push` and the resolution block, written only when there is one.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SummaryRow {
    pub id: String,
    #[serde(rename = "type")]
    pub kind: MessageType,
    pub status: Status,
    pub title: String,
    pub priority: Priority,
    pub agent: RowAgent,
    pub tags: Vec<String>,
    #[serde(with = "time::wire")]
    pub created_at: Timestamp,
    #[serde(default, with = "time::wire_opt")]
    pub expires_at: Option<Timestamp>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push: Option<PushTrackView>,
    #[serde(flatten)]
    pub resolution: Option<RowResolution>,
}

/// `agent` of a listing row.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RowAgent {
    pub id: String,
    #[serde(default)]
    pub project: Option<String>,
}

/// The terminal of a resolved row (§6: `resolution` is the terminal status).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RowResolution {
    pub resolution: Status,
    pub resolution_id: String,
    #[serde(default)]
    pub actor: Option<String>,
    #[serde(default)]
    pub comment: Option<String>,
    #[serde(with = "time::wire")]
    pub resolved_at: Timestamp,
}

/// `counts`: every open message of the account, those matching the filter, and both by kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct OpenCountsView {
    pub open: u64,
    pub matching: u64,
    /// `matching` is a lower bound (a store that counts a filter by a bounded read stopped early).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub matching_partial: bool,
    pub priority: PriorityCounts,
    #[serde(rename = "type")]
    pub kind: TypeCounts,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PriorityCounts {
    pub urgent: u64,
    pub high: u64,
    pub normal: u64,
    pub low: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct TypeCounts {
    pub notify: u64,
    pub ask: u64,
    pub task: u64,
}

/// `GET`/`PATCH /v1/operator/inter-agent`: whether the leg is on for the account (its own
/// opt-in under the deployment's ceiling) and who may message whom. Allowlists are sorted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InterAgentPolicy {
    pub enabled: bool,
    pub account_opt_in: bool,
    pub deployment_enabled: bool,
    /// Destination agent id → the sender agent ids it accepts.
    pub allowlists: BTreeMap<String, BTreeSet<String>>,
    pub version: u64,
}

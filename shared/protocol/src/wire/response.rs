//! §6: the Response, built once at the terminal transition and signed (§9.2, §9.8).

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::envelope::ChecklistItem;
use crate::lifecycle::Resolution;

/// The §6 Response. The Hub stores the value it built and replays it as stored; clients read it
/// through this type and verify the signature over what they received.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Response {
    /// The answered message's own version (§10: the Hub answers at the version carried).
    pub ma2h_version: String,
    pub in_reply_to: String,
    pub resolution_id: String,
    #[serde(default)]
    pub agent: ResponseAgent,
    pub resolution: Resolution,
    /// Always present for an ask; for a task only with a comment or checklist.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub response: Option<ResponseDetail>,
    #[serde(default)]
    pub defaulted: bool,
    /// The envelope's `state`, verbatim: absent when it had none, `null` when it sent `null`.
    #[serde(default, deserialize_with = "super::present", skip_serializing_if = "Option::is_none")]
    pub state: Option<Value>,
}

/// `agent` of a Response: who asked.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ResponseAgent {
    pub id: String,
    #[serde(default)]
    pub run_id: String,
}

/// `response` of a Response: what was decided, by whom, when.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResponseDetail {
    #[serde(default, deserialize_with = "super::present", skip_serializing_if = "Option::is_none")]
    pub value: Option<Value>,
    /// Present exactly when the resolution is `answered`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub edited: Option<bool>,
    /// `type:id` of the attested actor.
    pub actor: String,
    /// Kept as written: it is bound by the signature (§9.2).
    pub resolved_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checklist: Option<Vec<ChecklistItem>>,
    /// Hub extension (issue 40; a v0.5 client ignores it, §10, and the signature covers it):
    /// every human whose approval made up a quorum, in order — the last is `actor`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approvals: Vec<Approval>,
    /// Hub extension (issue 40): `actor` answered as the delegate of this human (`human:<id>`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_behalf_of: Option<String>,
    /// Hub extension (issue 40): a standing grant answered this ask at once; `actor` is the human
    /// who granted it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub grant_id: Option<String>,
}

/// One approval of a quorum (a Hub extension, issue 40).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approval {
    /// `human:<id>` (or the attested actor that approved).
    pub actor: String,
    /// RFC 3339, as every time in a Response.
    pub approved_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    /// Whom the approver stood in for (delegation).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_behalf_of: Option<String>,
}

impl Response {
    /// As a JSON value (what the store keeps and every surface replays).
    pub fn to_value(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }
}

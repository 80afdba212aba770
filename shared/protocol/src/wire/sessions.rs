//! §16 sessions: the registration request, the session resource, its envelope and list.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::time::{self, Timestamp};

/// `POST /v1/sessions` (§16.1 `registerRequest`): every member optional, sent only when set;
/// the Hub clamps `ttl_seconds` into its advertised bounds.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RegisterSession {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub run_id: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    /// String-valued tags (sent only when non-empty).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub labels: BTreeMap<String, String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_seconds: Option<u64>,
}

/// §16.3: `active` until closed or expired; both terminals are immutable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SessionState {
    Active,
    Closed,
    Expired,
}

impl SessionState {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Active => "active",
            Self::Closed => "closed",
            Self::Expired => "expired",
        }
    }
}

/// The §16 session resource.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionObject {
    pub id: String,
    pub agent_id: String,
    #[serde(with = "time::wire")]
    pub created_at: Timestamp,
    #[serde(with = "time::wire")]
    pub expires_at: Timestamp,
    /// Always written by this Hub.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl_seconds: Option<u32>,
    #[serde(default, with = "time::wire_opt", skip_serializing_if = "Option::is_none")]
    pub closed_at: Option<Timestamp>,
    /// Written only when true (only on a `closed` session).
    #[serde(default, skip_serializing_if = "super::is_false")]
    pub closed_by_operator: bool,
    pub state: SessionState,
    #[serde(default, with = "time::wire_opt", skip_serializing_if = "Option::is_none")]
    pub last_seen: Option<Timestamp>,
    /// What the agent registered (`run_id`, `label`, `kind`, `project`, `labels`), as stored.
    #[serde(flatten)]
    pub meta: Map<String, Value>,
}

impl SessionObject {
    /// A string member the agent registered (`run_id`, `label`, `kind`, `project`).
    pub fn meta_str(&self, key: &str) -> Option<&str> {
        self.meta.get(key).and_then(Value::as_str)
    }

    /// The registered `labels` with string values.
    pub fn labels(&self) -> BTreeMap<String, String> {
        self.meta
            .get("labels")
            .and_then(Value::as_object)
            .map(|l| l.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned()))).collect())
            .unwrap_or_default()
    }
}

/// `{"session": …}`: the 201 to a registration, a read and a close.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionEnvelope {
    pub session: SessionObject,
}

/// Whose sessions a list shows.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SessionScope {
    /// The calling agent's own.
    Own,
    /// Every agent's of the account (an operator's list).
    Account,
}

/// 200 to `GET /v1/sessions`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SessionList {
    pub sessions: Vec<SessionObject>,
    /// Always written by this Hub; absent means unknown — never read as `account` (§16.4).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<SessionScope>,
}

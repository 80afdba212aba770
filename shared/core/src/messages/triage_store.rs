//! The triage record and its store port (issue 39): one record per message — the claim, the
//! per-operator snoozes and the triage events — replaced whole by compare-and-set on its
//! version. The use cases are in [`crate::messages::triage`].

use std::collections::BTreeMap;

use async_trait::async_trait;
use ma2h_protocol::ids::{AccountId, HumanId, MessageId};
use ma2h_protocol::time::Timestamp;
use serde::{Deserialize, Serialize};

use crate::kernel::error::StoreError;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Claim {
    pub by: HumanId,
    pub at: Timestamp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EventKind {
    Viewed,
    Claimed,
    Released,
    Snoozed,
    Unsnoozed,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TriageEvent {
    pub at: Timestamp,
    pub by: HumanId,
    pub kind: EventKind,
    /// A snooze's end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub until: Option<Timestamp>,
}

/// What the store keeps besides the version and keys (one JSON document).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct TriageData {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub claim: Option<Claim>,
    /// Operator id → snoozed until (a past instant is no snooze).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub snoozes: BTreeMap<String, Timestamp>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub events: Vec<TriageEvent>,
    /// Issue 40: approvals short of their quorum (`crate::decisions::quorum`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approvals: Vec<PendingApproval>,
}

/// One approval waiting for its quorum (kept in the triage record).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PendingApproval {
    /// The attested actor (`human:alice`).
    pub actor: String,
    pub value: serde_json::Value,
    pub at: Timestamp,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub comment: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub on_behalf_of: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TriageRecord {
    pub account: AccountId,
    pub message_id: MessageId,
    /// 1 for the first write; each write adds one.
    pub version: u64,
    pub data: TriageData,
    /// The store may drop the record after this (DynamoDB: its TTL).
    pub retain_until: Timestamp,
}

impl TriageRecord {
    /// Until when `human` snoozed the message, if that is still ahead of `now`.
    pub fn snoozed_by(&self, human: &HumanId, now: Timestamp) -> Option<Timestamp> {
        self.data.snoozes.get(human.as_str()).copied().filter(|until| *until > now)
    }

    pub fn viewed_by(&self, human: &HumanId) -> bool {
        self.data.events.iter().any(|e| e.kind == EventKind::Viewed && &e.by == human)
    }
}

/// The store port: one record per message, replaced whole by compare-and-set.
#[async_trait]
pub trait TriageStore: Send + Sync + 'static {
    /// The records of `ids` (in order; `None` where a message has none).
    async fn get_triage(&self, account: &AccountId, ids: &[MessageId])
    -> Result<Vec<Option<TriageRecord>>, StoreError>;
    /// Write `record` iff the stored version is `expected` (`None`: iff there is none); `false`
    /// when another write came first (nothing written).
    async fn put_triage(&self, record: &TriageRecord, expected: Option<u64>) -> Result<bool, StoreError>;
    /// Delete up to `limit` records whose `retain_until` is at or before `now`; a store whose
    /// records expire natively (DynamoDB TTL) does nothing and returns 0.
    async fn purge_triage(&self, now: Timestamp, limit: usize) -> Result<usize, StoreError>;
}

//! Per-account policy for the inter-agent leg (§8.0 `inter_agent`): the opt-in (default off — an
//! explicit act of the account's owner) and per-destination sender allowlists (§13.5).
//!
//! Stored as one small versioned document per account; every edit is a compare-and-set on the
//! version, so two concurrent operator edits never silently lose one.

use std::collections::{BTreeMap, BTreeSet};

use ma2h_protocol::ids::AccountId;
use ma2h_protocol::ids::AgentId;
use serde::{Deserialize, Serialize};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

/// Most destinations with an allowlist, and most senders on one list.
pub const MAX_ALLOWLISTS: usize = 500;
pub const MAX_SENDERS: usize = 200;
/// Largest stored policy document, in bytes.
pub const MAX_POLICY_BYTES: usize = 64 * 1024;

#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct AccountPolicy {
    /// Bumped by every write (the compare-and-set token); 0 = never written.
    #[serde(default)]
    pub version: u64,
    /// §8.0: the account opted in to `to`-addressed submits.
    #[serde(default)]
    pub inter_agent: bool,
    /// Destination agent id → the sender agent ids that may address it. A destination without an
    /// entry accepts any same-account sender.
    #[serde(default)]
    pub allowlists: BTreeMap<String, BTreeSet<String>>,
    /// Issue 20: where humans are told about new asks/tasks (Slack, webhook), and the Slack links.
    #[serde(default, skip_serializing_if = "crate::channels::config::ChannelsConfig::is_empty")]
    pub channels: crate::channels::config::ChannelsConfig,
    /// Issue 40: approval policies (quorum, separation of duties), the first match applies.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approvals: Vec<crate::decisions::policy::ApprovalPolicy>,
    /// Issue 40: operators away, by operator id, with their delegate.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub away: BTreeMap<String, crate::decisions::policy::Away>,
    /// Issue 42: the account's identity provider for the inbox, and its operator mapping.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sso: Option<crate::sso::SsoConfig>,
}

impl AccountPolicy {
    /// May `sender` address `destination`? (§13.5; a refusal reads exactly like an unknown
    /// destination, §8.0.)
    pub fn allows(&self, sender: &AgentId, destination: &AgentId) -> bool {
        self.allowlists.get(destination.as_str()).is_none_or(|senders| senders.contains(sender.as_str()))
    }

    /// The stored JSON form.
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|_| "{}".into())
    }

    pub fn from_json(text: &str) -> Option<Self> {
        serde_json::from_str(text).ok()
    }
}

/// Account policies read for the submit path, kept for `MA2H_CHANNELS_CACHE_MS` (an edit made
/// through this Hub clears its account at once).
#[derive(Default)]
pub struct PolicyCache(pub(crate) Mutex<HashMap<AccountId, (Arc<AccountPolicy>, Instant)>>);

impl PolicyCache {
    pub(crate) fn forget(&self, account: &AccountId) {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).remove(account);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_destination_without_a_list_accepts_any_sender_and_a_list_only_its_members() {
        let a = AgentId::parse("a").unwrap();
        let b = AgentId::parse("b").unwrap();
        let c = AgentId::parse("c").unwrap();
        let mut p = AccountPolicy::default();
        assert!(p.allows(&a, &b));
        p.allowlists.insert("b".into(), ["c".to_owned()].into());
        assert!(!p.allows(&a, &b));
        assert!(p.allows(&c, &b));
        assert_eq!(AccountPolicy::from_json(&p.to_json()), Some(p));
    }
}

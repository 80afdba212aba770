//! Approval policies (issue 40): which asks need more than one human, and who may never approve
//! them. Kept in the account's policy document (`AccountPolicy::approvals`), tried in order — the
//! first that matches an ask applies — and edited by compare-and-set like the routes.

use ma2h_protocol::envelope::Envelope;
use ma2h_protocol::ids::HumanId;
use serde::{Deserialize, Serialize};

/// Most policies per account.
pub const MAX_POLICIES: usize = 50;
/// The largest quorum.
pub const MAX_APPROVALS: u8 = 10;
/// Most humans one policy excludes by name.
pub const MAX_EXCLUDED: usize = 50;

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ApprovalPolicy {
    /// 1–64 of `[a-z0-9-]`, as route ids.
    pub id: String,
    /// Which asks it gates (stored as the policy's own members, as a route's).
    #[serde(flatten)]
    pub filter: crate::channels::config::MessageFilter,
    /// Distinct approvers an `answered` value needs (1–10; 1 only excludes).
    pub approvals: u8,
    /// Humans who may never answer a matching ask (separation of duties), by operator id.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<String>,
    /// An `agent.labels` key naming the human the run works for (e.g. `requested_by`): that human
    /// may not answer their own run's ask.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub exclude_label: Option<String>,
    /// Issue 41: an answer (anything but a decline) is applied only with a fresh passkey
    /// assertion of the human answering, made for this message.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub passkey: bool,
}

impl ApprovalPolicy {
    /// Does the policy apply to this ask? (Tasks and notifies are never gated.)
    pub fn matches(&self, envelope: &Envelope) -> bool {
        envelope.request().is_some() && self.filter.matches(envelope)
    }

    /// Why `human` may not answer this ask, if they may not: named by the policy, or named by the
    /// run's label the policy reads (`alice` or `human:alice`).
    pub fn excludes(&self, envelope: &Envelope, human: &HumanId) -> Option<String> {
        if self.exclude.iter().any(|h| h == human.as_str()) {
            return Some(format!("human:{human} may not approve asks under policy `{}`", self.id));
        }
        let label = self.exclude_label.as_deref()?;
        let owner = envelope.raw.get("agent")?.get("labels")?.get(label)?.as_str()?;
        let owner = owner.strip_prefix("human:").unwrap_or(owner);
        (owner == human.as_str()).then(|| {
            format!(
                "human:{human} requested this run (agent.labels.{label}) and may not approve it (policy `{}`)",
                self.id
            )
        })
    }
}

/// An operator away until a time, and who answers for them meanwhile
/// ([`crate::decisions::delegation`]); kept in the account's policy document.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Away {
    /// The operator id who answers meanwhile.
    pub delegate: String,
    pub since: ma2h_protocol::time::Timestamp,
    pub until: ma2h_protocol::time::Timestamp,
}

/// The first policy of `policies` that applies to `envelope`.
pub fn policy_for<'a>(policies: &'a [ApprovalPolicy], envelope: &Envelope) -> Option<&'a ApprovalPolicy> {
    policies.iter().find(|p| p.matches(envelope))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ask(labels: serde_json::Value, tags: &[&str]) -> Envelope {
        Envelope::from_value(json!({
            "ma2h_version": "0.5", "type": "ask", "created_at": "2026-06-04T12:00:00Z",
            "agent": {"id": "deploybot", "run_id": "r", "runtime": "cli", "labels": labels},
            "title": "Ship?", "priority": "high", "tags": tags, "idempotency_key": "k",
            "request": {"mode": "confirm", "allowed_resolvers": ["human:alice", "human:bob"]}
        }))
        .unwrap()
    }

    fn policy() -> ApprovalPolicy {
        ApprovalPolicy {
            id: "prod".into(),
            filter: crate::channels::config::MessageFilter {
                tag: Some("prod".into()),
                min_priority: Some(ma2h_protocol::envelope::Priority::High),
                ..Default::default()
            },
            approvals: 2,
            exclude: vec!["mallory".into()],
            exclude_label: Some("requested_by".into()),
            passkey: false,
        }
    }

    #[test]
    fn a_policy_matches_by_tag_and_priority_and_the_first_match_wins() {
        let p = policy();
        assert!(p.matches(&ask(json!({}), &["prod"])));
        assert!(!p.matches(&ask(json!({}), &["staging"])));
        let catch_all = ApprovalPolicy { id: "all".into(), filter: Default::default(), ..policy() };
        let list = [p.clone(), catch_all];
        assert_eq!(policy_for(&list, &ask(json!({}), &["staging"])).map(|p| p.id.as_str()), Some("all"));
        assert_eq!(policy_for(&list, &ask(json!({}), &["prod"])).map(|p| p.id.as_str()), Some("prod"));
    }

    #[test]
    fn the_runs_requester_and_named_humans_may_not_approve() {
        let p = policy();
        let env = ask(json!({"requested_by": "human:alice"}), &["prod"]);
        let h = |s| HumanId::parse(s).unwrap();
        assert!(p.excludes(&env, &h("alice")).unwrap().contains("requested this run"));
        assert!(p.excludes(&env, &h("mallory")).is_some());
        assert_eq!(p.excludes(&env, &h("bob")), None);
        assert_eq!(p.excludes(&ask(json!({"requested_by": "bob"}), &["prod"]), &h("alice")), None);
    }
}

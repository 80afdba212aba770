//! Quorum (issue 40): under an approval policy an `answered` value is one **approval** until
//! `approvals` distinct approvers gave the same value; the approval that completes the quorum
//! commits the terminal through the same §7 compare-and-set as any answer (so a cancel, an
//! expiry or a racing answer still leaves exactly one terminal), with that approver as `actor`
//! and every approver in `response.approvals` (a Hub extension the signature covers).
//!
//! Partial approvals live in the message's triage record (compare-and-set on its version): they
//! are no terminal, the agent sees the ask open, and the inbox and the operator API show them.
//! A decline by any allowed approver ends the ask at once (documented); a changed mind replaces
//! that approver's earlier approval.

use ma2h_protocol::envelope::Envelope;
use ma2h_protocol::ids::Actor;
use ma2h_protocol::response::{Extensions, Terminal};
use ma2h_protocol::time;
use ma2h_protocol::wire::Approval;
use serde_json::Value;

use crate::decisions::policy::{ApprovalPolicy, policy_for};
use crate::messages::lifecycle::apply_terminal;
use crate::messages::records::{Completion, MessageRecord};
pub use crate::messages::triage_store::PendingApproval;
use crate::messages::triage_store::{TriageData, TriageRecord};
use crate::{Hub, HubError};

/// An approval recorded short of its quorum.
#[derive(Debug, Clone, PartialEq)]
pub struct Pending {
    pub policy: String,
    pub required: u8,
    /// The approvals of this value so far, oldest first.
    pub approvals: Vec<Approval>,
}

/// The approval policy that applies to this open ask, if any (read from the account policy).
pub async fn policy_of(
    hub: &Hub,
    record: &MessageRecord,
    envelope: &Envelope,
) -> Result<Option<ApprovalPolicy>, HubError> {
    // through the account-policy cache: an edit reaches other processes within
    // MA2H_CHANNELS_CACHE_MS (5 s), as route edits do
    let policy = crate::channels::schedule::config(hub, &record.account).await?;
    Ok(policy_for(&policy.approvals, envelope).cloned())
}

fn wire(a: &PendingApproval) -> Approval {
    Approval {
        actor: a.actor.clone(),
        approved_at: time::format(a.at),
        comment: a.comment.clone(),
        on_behalf_of: a.on_behalf_of.clone(),
    }
}

/// Record `terminal` (an `answered` value by `terminal.actor`) as an approval under `policy`;
/// commit the terminal when it completes the quorum.
pub async fn approve(
    hub: &Hub,
    record: &MessageRecord,
    envelope: &Envelope,
    policy: &ApprovalPolicy,
    mut terminal: Terminal,
) -> Result<Result<Completion, Pending>, HubError> {
    let value = terminal.value.clone().unwrap_or(Value::Null);
    let me = PendingApproval {
        actor: terminal.actor.to_string(),
        value: value.clone(),
        at: terminal.resolved_at,
        comment: terminal.comment.clone(),
        on_behalf_of: terminal.ext.on_behalf_of.clone(),
    };
    let required = usize::from(policy.approvals.max(1));
    for _ in 0..8 {
        let current = hub.triage.get_triage(&record.account, std::slice::from_ref(&record.id)).await?.pop().flatten();
        let expected = current.as_ref().map(|r| r.version);
        let mut data: TriageData = current.map(|r| r.data).unwrap_or_default();
        data.approvals.retain(|a| a.actor != me.actor); // a changed mind replaces the earlier one
        let agreeing: Vec<&PendingApproval> = data.approvals.iter().filter(|a| a.value == value).collect();
        if agreeing.len() + 1 >= required {
            // The quorum: commit the terminal (§7 CAS); every approver goes into the Response.
            let mut approvals: Vec<Approval> = agreeing.iter().map(|a| wire(a)).collect();
            approvals.push(wire(&me));
            terminal.ext = Extensions { approvals, ..terminal.ext };
            return Ok(Ok(apply_terminal(hub, record, envelope, terminal).await?));
        }
        data.approvals.push(me.clone());
        let now = hub.clock.now();
        let next = TriageRecord {
            account: record.account.clone(),
            message_id: record.id.clone(),
            version: expected.unwrap_or(0) + 1,
            retain_until: crate::messages::triage::keep_until(hub, record, now),
            data,
        };
        let pending = Pending {
            policy: policy.id.clone(),
            required: policy.approvals,
            approvals: next.data.approvals.iter().filter(|a| a.value == value).map(wire).collect(),
        };
        // Issue 42: each approval short of the quorum is recorded in its own write.
        let mut event = crate::audit::Event::new("message.approved", &terminal.actor)
            .target(&record.id)
            .detail("policy", policy.id.to_string())
            .detail("have", pending.approvals.len())
            .detail("need", required);
        if let Some(on_behalf_of) = &me.on_behalf_of {
            event = event.detail("on_behalf_of", on_behalf_of.to_string());
        }
        if !envelope.sensitive {
            event = event.digest_of(&value);
        }
        let put = hub.triage.put_triage(&next, expected);
        if crate::audit::within(hub, &record.account, vec![event], put).await? {
            hub.changes.publish_account(&record.account);
            tracing::info!(message_id = %record.id, policy = %policy.id, have = pending.approvals.len(), need = required, "approval recorded");
            return Ok(Err(pending));
        }
    }
    Err(HubError::RateLimited { message: "approvals changed meanwhile; try again".into(), retry_after_secs: 1 })
}

/// §9.1 plus the policy's separation of duties: a human the policy excludes may not answer.
pub fn check_excluded(policy: &ApprovalPolicy, envelope: &Envelope, actor: &Actor) -> Result<(), HubError> {
    if let Actor::Human(h) = actor
        && let Some(why) = ma2h_protocol::ids::HumanId::parse(h).and_then(|h| policy.excludes(envelope, &h))
    {
        return Err(HubError::NotAuthorized(why));
    }
    Ok(())
}

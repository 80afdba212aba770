//! The operator's read of ONE message of their account, for the web inbox's message page: the
//! record (lazy expiry applied, §7) and what this operator may do with it — §9.1
//! `allowed_resolvers` (fail-closed default) combined with the request's `permissions` (§5.2).
//! Agents, other accounts and malformed ids all get the unknown-id 404 (§9.1).

use ma2h_protocol::envelope::{Envelope, Verb};
use ma2h_protocol::ids::MessageId;

use crate::kernel::auth::Principal;
use crate::kernel::credentials::PrincipalId;
use crate::messages::lifecycle::settle;
use crate::messages::records::{Lookup, MessageRecord};
use crate::messages::resolvers::Decision;
use crate::{Hub, HubError};

/// Which resolve affordances the operator is offered.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Affordances {
    /// Ask: `answered` (needs `permissions.allow_respond`).
    pub answer: bool,
    /// Ask: `declined` (needs `permissions.allow_ignore`).
    pub decline: bool,
    /// Task: `completed`.
    pub complete: bool,
    /// Task: `dismissed`.
    pub dismiss: bool,
}

/// What the operator may do with the message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Allowed {
    /// Open and resolvable by this operator, with these affordances.
    Resolve(Affordances),
    /// Open, but this operator may not resolve it (§9.1); the reason is shown instead of buttons.
    Denied(String),
    /// Nothing to do: a notify, or already terminal.
    Closed,
}

/// One message as the operator sees it.
#[derive(Debug, Clone)]
pub struct InboxMessage {
    pub record: MessageRecord,
    pub envelope: Envelope,
    pub allowed: Allowed,
    /// An addressed message's `message` entry: its outbound track (§8.2, §14.2) and attested
    /// `from` — agent↔agent traffic is auditable by the account's human (§8.7.1).
    pub outbound: Option<crate::mailbox::model::MailboxEntry>,
    /// The status the sender reads (an addressed notify mirrors its track, §5.1).
    pub status: ma2h_protocol::lifecycle::Status,
    /// Where the message was announced (Slack, webhooks) and how each step went (issue 20).
    pub notifications: Option<crate::channels::outbox::Notification>,
    /// Who is on it, who snoozed it, who viewed it (issue 39).
    pub triage: Option<crate::messages::triage::TriageRecord>,
    /// The approval policy gating this ask, if any (issue 40).
    pub approval_policy: Option<crate::decisions::policy::ApprovalPolicy>,
    /// The away operator this operator answers for here, as their delegate (issue 40).
    pub on_behalf_of: Option<String>,
}

/// Load message `id` of the operator's account and work out what they may do.
pub async fn view(hub: &Hub, principal: &Principal, id: &str) -> Result<InboxMessage, HubError> {
    if !matches!(principal.id, PrincipalId::Operator(_)) {
        return Err(HubError::NotFound);
    }
    let id = MessageId::parse(id).ok_or(HubError::NotFound)?;
    let record = match hub.lookup(&principal.account, &id).await? {
        Lookup::Found(rec) => settle(hub, rec).await?,
        Lookup::Gone { .. } => return Err(HubError::Gone),
        Lookup::Missing => return Err(HubError::NotFound),
    };
    let envelope = record.envelope()?;
    let (allowed, on_behalf_of) = allowed_with_delegation(hub, &record, &envelope, principal).await?;
    let outbound = crate::mailbox::undeliverable::outbound(hub, &record).await?;
    let status = crate::mailbox::addressed::status(&record, outbound.as_ref(), hub.clock.now());
    // A notification failure never hides the message: an unreadable item is just not shown.
    let notifications = hub.notifications.get_notification(&principal.account, &id).await.unwrap_or_else(|e| {
        tracing::warn!(message_id = %id, error = %e, "notification item unreadable");
        None
    });
    let triage = match hub.triage.get_triage(&principal.account, std::slice::from_ref(&id)).await {
        Ok(mut found) => found.pop().flatten(),
        Err(e) => {
            tracing::warn!(message_id = %id, error = %e, "triage record unreadable");
            None
        }
    };
    let approval_policy = match record.status.is_open() {
        true => crate::decisions::quorum::policy_of(hub, &record, &envelope).await?,
        false => None,
    };
    // Issue 40: a human the policy excludes sees why instead of buttons.
    let allowed = match (&allowed, &approval_policy, &principal.id) {
        (Allowed::Resolve(_), Some(p), PrincipalId::Operator(h)) => match p.excludes(&envelope, h) {
            Some(why) => Allowed::Denied(why),
            None => allowed,
        },
        _ => allowed,
    };
    Ok(InboxMessage {
        record,
        envelope,
        allowed,
        outbound,
        status,
        notifications,
        triage,
        approval_policy,
        on_behalf_of,
    })
}

/// [`allowed`], and where it is denied, what a delegate may do for an away operator the ask
/// lists (issue 40): that operator's affordances, and whom they are answered for.
async fn allowed_with_delegation(
    hub: &Hub,
    record: &MessageRecord,
    envelope: &Envelope,
    principal: &Principal,
) -> Result<(Allowed, Option<String>), HubError> {
    let mine = allowed(record, envelope, principal);
    if !matches!(mine, Allowed::Denied(_)) || !matches!(principal.id, PrincipalId::Operator(_)) {
        return Ok((mine, None));
    }
    let Some(absent) = crate::decisions::delegation::standing_in(hub, record, envelope, &principal.actor()).await?
    else {
        return Ok((mine, None));
    };
    let Some(human) = absent.strip_prefix("human:").and_then(ma2h_protocol::ids::HumanId::parse) else {
        return Ok((mine, None));
    };
    let as_them = Principal { id: PrincipalId::Operator(human), ..principal.clone() };
    Ok((allowed(record, envelope, &as_them), Some(absent)))
}

/// The §9.1 decision `resolve` enforces ([`Decision`]), combined with the §5.2 permissions.
pub fn allowed(record: &MessageRecord, envelope: &Envelope, principal: &Principal) -> Allowed {
    if !record.status.is_open() {
        return Allowed::Closed;
    }
    match Decision::of(record, envelope, principal, &principal.actor()) {
        Decision::Allowed => {}
        Decision::NotResolvable => return Allowed::Closed,
        Decision::NotListed { listed } => {
            return Allowed::Denied(format!(
                "{} is not listed in this message's allowed_resolvers ({}).",
                principal.actor(),
                listed.join(", ")
            ));
        }
        Decision::AddresseeOnly => {
            return Allowed::Denied(format!(
                "This agent-to-agent message ({} → {}) lists no allowed_resolvers, so only its addressee may resolve it (§9.1). To unstick it, close the addressee's session: its mail bounces and this resolves as undeliverable.",
                record.agent_id,
                envelope.to.as_deref().unwrap_or("?")
            ));
        }
        Decision::SubmitterOnly => {
            return Allowed::Denied(format!(
                "This message lists no allowed_resolvers, so only its submitting agent ({}) may resolve it (§9.1 fail-closed default).",
                record.agent_id
            ));
        }
    }
    let affordances = match &envelope.verb {
        Verb::Ask(req) => Affordances {
            answer: req.permissions.allow_respond,
            decline: req.permissions.allow_ignore,
            ..Affordances::default()
        },
        Verb::Task(_) => Affordances { complete: true, dismiss: true, ..Affordances::default() },
        Verb::Notify => return Allowed::Closed,
    };
    if affordances == Affordances::default() {
        return Allowed::Denied("The request's permissions allow neither an answer nor a decline.".into());
    }
    Allowed::Resolve(affordances)
}

/// Every agent of the operator's account (each that was ever issued a credential), sorted — the
/// Agents page (issue 39). Agents get the unknown-id answer: nothing.
pub async fn agents(hub: &Hub, principal: &Principal) -> Result<Vec<ma2h_protocol::ids::AgentId>, HubError> {
    if !matches!(principal.id, PrincipalId::Operator(_)) {
        return Err(HubError::NotFound);
    }
    Ok(hub.credentials.list_agents(&principal.account).await?)
}

/// A listed message as the inbox list shows it: its envelope (for the question, options and
/// stakes) and what this operator may do with it. `None` for a row that vanished meanwhile.
#[derive(Debug, Clone)]
pub struct Glance {
    pub envelope: Envelope,
    pub allowed: Allowed,
    /// The §6 Response once terminal (history shows the chosen option's label).
    pub response: Option<serde_json::Value>,
}

/// Load the listed messages `ids` of the operator's account at once (one page: at most the
/// listing's page size), so each row can preview its question and say whether *this* operator
/// may answer it. The store's summaries carry neither (they stay small, see docs/COST.md).
pub async fn glance(hub: &Hub, principal: &Principal, ids: &[MessageId]) -> Result<Vec<Option<Glance>>, HubError> {
    if !matches!(principal.id, PrincipalId::Operator(_)) {
        return Err(HubError::NotFound);
    }
    let loads = ids.iter().map(|id| hub.lookup(&principal.account, id));
    let mut out = Vec::with_capacity(ids.len());
    for found in futures_util::future::join_all(loads).await {
        out.push(match found? {
            Lookup::Found(rec) => {
                let envelope = rec.envelope()?;
                // §7: past its expiry (an answer AT it still wins) it is no longer answerable, swept or not.
                let due = rec.expires_at.is_some_and(|e| e < hub.clock.now());
                let allowed = match due {
                    true => Allowed::Closed,
                    false => allowed_with_delegation(hub, &rec, &envelope, principal).await?.0,
                };
                Some(Glance { envelope, allowed, response: rec.response })
            }
            Lookup::Gone { .. } | Lookup::Missing => None,
        });
    }
    Ok(out)
}

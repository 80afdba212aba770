//! `POST /v1/messages/{id}/resolve` (§8.8): an authorized human or agent resolves an ask/task.

use ma2h_protocol::envelope::Envelope;
use ma2h_protocol::ids::{Actor, MessageId};
use ma2h_protocol::lifecycle::Resolution;
use ma2h_protocol::resolve::ResolveRequest;
use ma2h_protocol::response::Terminal;

use crate::kernel::auth::Principal;
use crate::kernel::credentials::PrincipalId;
use crate::messages::lifecycle::{already_terminal, apply_terminal, settle};
use crate::messages::records::{Completion, Lookup, MessageRecord};
use crate::messages::resolvers::{Decision, is_submitter};
use crate::{Hub, HubError};

/// 200 `{id, status, resolution_id}`.
pub use ma2h_protocol::wire::ResolveResult as Resolved;

/// What an answer came to: a terminal, or (issue 40) one approval short of its quorum.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    Resolved(Resolved),
    Pending(crate::decisions::quorum::Pending),
}

/// [`resolve_outcome`] for callers that only act on terminals: an approval short of its quorum
/// reads as the message still open (no resolution id).
pub async fn resolve(
    hub: &Hub,
    principal: &Principal,
    session: Option<&str>,
    id: &str,
    body: &[u8],
) -> Result<Resolved, HubError> {
    Ok(match resolve_outcome(hub, principal, session, id, body).await? {
        Outcome::Resolved(r) => r,
        Outcome::Pending(_) => {
            Resolved { id: id.to_owned(), status: ma2h_protocol::lifecycle::Status::Open, resolution_id: String::new() }
        }
    })
}

/// `session`: the `?session=` an agent resolver presented (§8.8) — renewed, and the attested
/// actor becomes `agent:<id>#<sess>`.
pub async fn resolve_outcome(
    hub: &Hub,
    principal: &Principal,
    session: Option<&str>,
    id: &str,
    body: &[u8],
) -> Result<Outcome, HubError> {
    resolve_as(hub, principal, session, id, body, None).await
}

/// [`resolve_outcome`] with the answering operator's passkey step-up for this message (issue
/// 41): an approval policy with `passkey` applies an answer only with one.
pub async fn resolve_as(
    hub: &Hub,
    principal: &Principal,
    session: Option<&str>,
    id: &str,
    body: &[u8],
    step_up: Option<&crate::passkeys::ceremony::StepUp>,
) -> Result<Outcome, HubError> {
    let actor = match session {
        Some(raw) => Actor::parse(&crate::sessions::lease::present(hub, principal, raw).await?.address())
            .ok_or_else(|| HubError::Internal("a session address is not an actor".into()))?,
        None => principal.actor(),
    };
    let record = load_for_resolver(hub, principal, id).await?;
    let envelope = record.envelope()?;
    // Issue 40: a delegate answers for an away operator the ask lists (attested as themself,
    // `on_behalf_of` recorded).
    let on_behalf_of = match authorize(&record, &envelope, principal, &actor) {
        Ok(()) => None,
        Err(refused) => match crate::decisions::delegation::standing_in(hub, &record, &envelope, &actor).await? {
            Some(absent) => Some(absent),
            None => return Err(refused),
        },
    };

    let request = ResolveRequest::parse(body)?;
    if !record.status.is_open() {
        return Err(already_terminal(&record));
    }
    request.check_against(&envelope)?;
    // Issue 40: an approval policy may gate this ask (separation of duties for any answer; a
    // quorum for an `answered` value).
    let policy = crate::decisions::quorum::policy_of(hub, &record, &envelope).await?;
    if let Some(p) = &policy {
        // Issue 41: a decline never acts, so it needs no passkey; every other answer does.
        if p.passkey
            && request.resolution != Resolution::Declined
            && !step_up.is_some_and(|s| s.covers(principal, record.id.as_str()))
        {
            return Err(HubError::PasskeyRequired { policy: p.id.clone() });
        }
        crate::decisions::quorum::check_excluded(p, &envelope, &actor)?;
        // whom a delegate stands in for is held to the same rule
        if let Some(absent) = on_behalf_of.as_deref().and_then(Actor::parse) {
            crate::decisions::quorum::check_excluded(p, &envelope, &absent)?;
        }
    }
    // §6 `edited`: an answer that differs from the agent's proposal (the input schema's defaults).
    let proposal = envelope.request().and_then(|r| r.schema.as_ref()).and_then(ma2h_protocol::rules::proposal);
    let edited = matches!((&proposal, &request.value), (Some(p), Some(v)) if ma2h_protocol::rules::departs_from(p, v));

    let terminal = Terminal {
        resolution: request.resolution,
        actor,
        resolved_at: hub.clock.now(),
        resolution_id: hub.new_resolution_id(),
        value: request.value,
        comment: request.comment,
        checklist: request.checklist,
        defaulted: false,
        edited,
        ext: ma2h_protocol::response::Extensions { on_behalf_of, ..Default::default() },
    };
    let completion = match &policy {
        Some(p) if terminal.resolution == Resolution::Answered && p.approvals > 1 => {
            match crate::decisions::quorum::approve(hub, &record, &envelope, p, terminal).await? {
                Ok(c) => c,
                Err(pending) => return Ok(Outcome::Pending(pending)),
            }
        }
        _ => apply_terminal(hub, &record, &envelope, terminal).await?,
    };
    match completion {
        Completion::Applied(rec) => Ok(Outcome::Resolved(Resolved {
            id: rec.id.to_string(),
            status: rec.status,
            resolution_id: rec.resolution_id.map(|r| r.to_string()).unwrap_or_default(),
        })),
        Completion::AlreadyTerminal(rec) => Err(already_terminal(&rec)),
        Completion::Missing => Err(HubError::NotFound),
    }
}

/// Any message of the caller's account; lazy expiry applied (§7: an answer strictly after
/// `expires_at` loses to the default, which then reads as `already_terminal`).
async fn load_for_resolver(hub: &Hub, principal: &Principal, id: &str) -> Result<MessageRecord, HubError> {
    let id = MessageId::parse(id).ok_or(HubError::NotFound)?;
    match hub.lookup(&principal.account, &id).await? {
        Lookup::Found(rec) => settle(hub, rec).await,
        Lookup::Gone { agent_id } => {
            // Only parties who could see the message learn that it is gone.
            match &principal.id {
                PrincipalId::Agent(a) if a != &agent_id => Err(HubError::NotFound),
                _ => Err(HubError::Gone),
            }
        }
        Lookup::Missing => Err(HubError::NotFound),
    }
}

/// §9.1 resolver authorization ([`Decision`]). An agent that may not resolve — and did not
/// submit — gets the unknown-id 404 (no existence oracle); the account's operator and the
/// submitter get a 403 that says why.
fn authorize(
    record: &MessageRecord,
    envelope: &Envelope,
    principal: &Principal,
    actor: &Actor,
) -> Result<(), HubError> {
    let decision = Decision::of(record, envelope, principal, actor);
    if decision == Decision::Allowed {
        return Ok(());
    }
    if matches!(principal.id, PrincipalId::Agent(_)) && !is_submitter(record, principal) {
        return Err(HubError::NotFound);
    }
    Err(match decision {
        Decision::NotResolvable => HubError::invalid_field("`/resolution`: a notify is not resolvable"),
        Decision::AddresseeOnly => HubError::NotAuthorized(format!(
            "{actor} may not resolve this message: without allowed_resolvers only its addressee may (§9.1)"
        )),
        Decision::NotListed { .. } => HubError::NotAuthorized(format!("{actor} is not listed in allowed_resolvers")),
        _ => HubError::NotAuthorized(format!(
            "{actor} may not resolve this message: without allowed_resolvers only its submitting agent may (§9.1)"
        )),
    })
}

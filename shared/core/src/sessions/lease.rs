//! §16 sessions: registration, reads, close (the owner's, or the operator's kill-switch), the
//! touchpoints that present a session, and the §16.4.1 hard stop.
//!
//! A session belongs to the principal that registered it. Every other principal — another agent,
//! another account — reads a session id exactly like an unknown one (§9.1, §16.5). The account's
//! human may read and close any session of the account; an operator close also records the
//! principal's durable stop, which gates registration until a human lifts it.

use ma2h_protocol::ids::{AgentId, SessionId};
use ma2h_protocol::wire::SessionScope;
use serde_json::{Map, Value};

use crate::kernel::auth::Principal;
use crate::kernel::credentials::PrincipalId;
use crate::mailbox::model::Mailbox;
use crate::mailbox::undeliverable::bounce;
use crate::sessions::model::{EndKind, Ended, Registered, SessionEnd, SessionRecord, SessionState, StopRecord};
use crate::{Hub, HubError};

/// Most sessions one list returns (newest first).
pub const LIST_LIMIT: usize = 200;

/// `POST /v1/sessions` (§16.1): mint a session for the calling agent.
pub async fn register(hub: &Hub, principal: &Principal, body: &Value) -> Result<SessionRecord, HubError> {
    let mailbox = agent_mailbox(principal)?;
    let (meta, ttl) = parse_register(body)?;
    let settings = &hub.settings.sessions;
    let ttl_seconds = settings.clamp_ttl(ttl);
    let now = hub.clock.now();
    let session = SessionRecord {
        account: mailbox.account.clone(),
        agent: mailbox.agent.clone(),
        id: hub.new_session_id(),
        created_at: now,
        expires_at: now + chrono::Duration::seconds(i64::from(ttl_seconds)),
        ttl_seconds,
        last_seen: Some(now),
        meta,
        end: None,
        retain_until: None,
        bounce_pending: false,
    };
    // Issue 42: recorded in the registration's own write (a full or stopped agent writes none).
    let event = crate::audit::Event::new("session.opened", principal.actor())
        .target(&session.id)
        .detail("ttl_seconds", ttl_seconds);
    let put = hub.sessions.register(&session, settings.max_live_per_agent);
    match crate::audit::within(hub, &mailbox.account, vec![event], put).await? {
        Registered::New => {
            tracing::info!(agent_id = %session.agent, session_id = %session.id, ttl_seconds, "session registered");
            Ok(session)
        }
        Registered::Full => Err(HubError::RateLimited {
            message: format!(
                "this agent already holds {} live sessions (sessions.max_live_per_agent); close or let one lapse",
                settings.max_live_per_agent
            ),
            retry_after_secs: u64::from(settings.min_ttl_seconds),
        }),
        Registered::Stopped => Err(HubError::Stopped),
    }
}

/// The registration body: validated against our `registerRequest` schema (the one published
/// limit set; every violation listed), then its descriptive members kept. Unknown members are
/// ignored.
fn parse_register(body: &Value) -> Result<(Map<String, Value>, Option<u64>), HubError> {
    ma2h_protocol::schema::validate(ma2h_protocol::schema::SchemaKind::SessionRegister, body)?;
    let obj = body.as_object().ok_or_else(|| HubError::validation("`/`: the body must be a JSON object"))?;
    let meta = ["run_id", "label", "kind", "project", "labels"]
        .into_iter()
        .filter_map(|k| obj.get(k).filter(|v| !v.is_null()).map(|v| (k.to_owned(), v.clone())))
        .collect();
    Ok((meta, obj.get("ttl_seconds").and_then(Value::as_u64)))
}

/// `GET /v1/sessions`: an agent's own sessions (`scope: own`), or the whole account's for its
/// human (`scope: account`). Agents never get the account-wide grant here
/// (`sessions.agent_list_visibility: false`).
pub async fn list(hub: &Hub, principal: &Principal) -> Result<(Vec<SessionRecord>, SessionScope), HubError> {
    match &principal.id {
        PrincipalId::Agent(agent) => {
            Ok((hub.sessions.list_sessions(&principal.account, Some(agent), LIST_LIMIT).await?, SessionScope::Own))
        }
        PrincipalId::Operator(_) => {
            Ok((hub.sessions.list_sessions(&principal.account, None, LIST_LIMIT).await?, SessionScope::Account))
        }
    }
}

/// One agent's sessions, for its operator (the inbox's agent page).
pub async fn of_agent(hub: &Hub, principal: &Principal, agent: &AgentId) -> Result<Vec<SessionRecord>, HubError> {
    operator_only(principal)?;
    Ok(hub.sessions.list_sessions(&principal.account, Some(agent), LIST_LIMIT).await?)
}

/// `GET /v1/sessions/{id}`: the owner's or the account human's; anything else is 404.
pub async fn read(hub: &Hub, principal: &Principal, id: &str) -> Result<SessionRecord, HubError> {
    let id = SessionId::parse(id).ok_or(HubError::UnknownSession)?;
    match hub.sessions.get_session(&principal.account, &id).await? {
        Some(s) if visible(&s, principal) => Ok(s),
        _ => Err(HubError::UnknownSession),
    }
}

fn visible(session: &SessionRecord, principal: &Principal) -> bool {
    match &principal.id {
        PrincipalId::Agent(agent) => agent == &session.agent,
        PrincipalId::Operator(_) => true,
    }
}

/// `DELETE /v1/sessions/{id}` (§16.3, idempotent): the owner closes it, or the account's human
/// closes it as the kill-switch (§16.4) — which also records the principal's stop (§16.4.1).
pub async fn close(hub: &Hub, principal: &Principal, id: &str) -> Result<SessionRecord, HubError> {
    let session = read(hub, principal, id).await?;
    let now = hub.clock.now();
    let (kind, stop) = match &principal.id {
        PrincipalId::Agent(_) => (EndKind::Closed, None),
        PrincipalId::Operator(_) => {
            let stop = StopRecord { by: principal.actor().to_string(), at: now, session: Some(session.id.clone()) };
            (EndKind::ClosedByOperator, Some(stop))
        }
    };
    let ended = end(hub, &session, SessionEnd { at: now, kind }, stop.as_ref(), &principal.actor().to_string()).await?;
    if let (Some(stop), false) = (&stop, matches!(ended, Ended::Applied(_))) {
        // The session had already ended: the operator's intent to stop the principal still holds,
        // but a stop already in force is kept as first recorded (a repeated DELETE is idempotent).
        if hub.sessions.get_stop(&session.mailbox()).await?.is_none() {
            let events = vec![stopped_event(&session.mailbox(), stop)];
            crate::audit::within(hub, &session.account, events, hub.sessions.put_stop(&session.mailbox(), stop))
                .await?;
        }
    }
    match ended {
        Ended::Applied(s) | Ended::AlreadyTerminal(s) => Ok(s),
        Ended::Missing => Err(HubError::UnknownSession),
    }
}

/// The terminal CAS, then the §14.2 bounce of the session's mail (best-effort here; the sweeper
/// finishes whatever this does not).
async fn end(
    hub: &Hub,
    s: &SessionRecord,
    end: SessionEnd,
    stop: Option<&StopRecord>,
    by: &str,
) -> Result<Ended, HubError> {
    let retain_until = end.at + hub.settings.sessions.terminal_retention();
    // Issue 42: the close (and the stop it records) in the end's own write.
    let mut events = vec![
        crate::audit::Event::new("session.closed", by)
            .target(&s.id)
            .detail("agent", s.agent.to_string())
            .detail("how", end.kind.as_str()),
    ];
    events.extend(stop.map(|stop| stopped_event(&s.mailbox(), stop)));
    let put = hub.sessions.end_session(&s.account, &s.id, end, retain_until, stop);
    let ended = crate::audit::within(hub, &s.account, events, put).await?;
    if let Ended::Applied(rec) = &ended {
        tracing::info!(agent_id = %rec.agent, session_id = %rec.id, how = end.kind.as_str(), "session ended");
        if let Err(e) = bounce(hub, rec).await {
            tracing::warn!(session_id = %rec.id, error = %e, "bounce deferred to the sweeper");
        }
    }
    Ok(ended)
}

/// `POST /v1/agents/{agent}/stop` (§16.4.1): the account's human stops a principal entirely —
/// the durable stop, then every live session of it closed by the operator.
pub async fn stop_agent(hub: &Hub, principal: &Principal, agent: &str) -> Result<StopRecord, HubError> {
    let mailbox = operator_target(principal, agent)?;
    stop_mailbox(hub, &mailbox, principal.actor().to_string()).await
}

/// The stop itself, attributed to `by` (the operator, or `system:admin` from the admin CLI).
pub(crate) async fn stop_mailbox(hub: &Hub, mailbox: &Mailbox, by: String) -> Result<StopRecord, HubError> {
    let mailbox = mailbox.clone();
    let now = hub.clock.now();
    let stop = StopRecord { by, at: now, session: None };
    // Stop first: from here no registration can land, so the sweep below misses nothing.
    let events = vec![stopped_event(&mailbox, &stop)];
    crate::audit::within(hub, &mailbox.account, events, hub.sessions.put_stop(&mailbox, &stop)).await?;
    for s in hub.sessions.list_sessions(&mailbox.account, Some(&mailbox.agent), LIST_LIMIT).await? {
        if s.is_live(now) {
            end(hub, &s, SessionEnd { at: now, kind: EndKind::ClosedByOperator }, None, &stop.by).await?;
        }
    }
    tracing::info!(agent_id = %mailbox.agent, by = %stop.by, "agent stopped by the operator");
    Ok(stop)
}

/// `DELETE /v1/agents/{agent}/stop`: only the account's human lifts a stop (§16.4.1).
pub async fn lift_stop(hub: &Hub, principal: &Principal, agent: &str) -> Result<bool, HubError> {
    let mailbox = operator_target(principal, agent)?;
    lift_mailbox(hub, &mailbox, &principal.actor().to_string()).await
}

/// Lift, audited like the stop (§16.4.1: "SHOULD be audited like the close that created it").
pub(crate) async fn lift_mailbox(hub: &Hub, mailbox: &Mailbox, by: &str) -> Result<bool, HubError> {
    let event = crate::audit::Event::new("agent.stop_lifted", by).target(format!("agent:{}", mailbox.agent));
    let lifted = crate::audit::within(hub, &mailbox.account, vec![event], hub.sessions.lift_stop(mailbox)).await?;
    if lifted {
        tracing::info!(agent_id = %mailbox.agent, by, "agent stop lifted");
    }
    Ok(lifted)
}

/// Issue 42: the ledger's record of a stop (§16.4.1).
fn stopped_event(mailbox: &Mailbox, stop: &StopRecord) -> crate::audit::Event {
    let event = crate::audit::Event::new("agent.stopped", &stop.by).target(format!("agent:{}", mailbox.agent));
    match &stop.session {
        Some(session) => event.detail("session", session.to_string()),
        None => event,
    }
}

/// `GET /v1/agents/{agent}/stop`: the stop in effect, for the account's human.
pub async fn stop_status(hub: &Hub, principal: &Principal, agent: &str) -> Result<Option<StopRecord>, HubError> {
    let mailbox = operator_target(principal, agent)?;
    Ok(hub.sessions.get_stop(&mailbox).await?)
}

/// A session presented on a drain, ack or resolve (`?session=`, §8.7.1, §8.8): renewed and
/// returned if it is the caller's own and live; otherwise 404 (foreign or unknown) or 410
/// (`gone`, or `session_closed_by_operator`).
pub async fn present(hub: &Hub, principal: &Principal, raw: &str) -> Result<SessionRecord, HubError> {
    let mailbox = agent_mailbox(principal).map_err(|_| HubError::UnknownSession)?;
    match touch(hub, &mailbox, raw).await? {
        Touch::Live(s) => Ok(*s),
        Touch::Unknown => Err(HubError::UnknownSession),
        Touch::Ended(kind) => Err(HubError::SessionEnded { by_operator: kind == EndKind::ClosedByOperator }),
    }
}

/// A submit's `agent.session` (§4.1): renewed if own and live; foreign or unknown → 422; own but
/// ended → 410 `destination_gone`, or `session_closed_by_operator` after an operator close.
pub async fn named_in_submit(hub: &Hub, mailbox: &Mailbox, raw: &str) -> Result<SessionRecord, HubError> {
    match touch(hub, mailbox, raw).await? {
        Touch::Live(s) => Ok(*s),
        Touch::Unknown => Err(HubError::invalid_field("`/agent/session`: unknown session")),
        Touch::Ended(EndKind::ClosedByOperator) => Err(HubError::SessionEnded { by_operator: true }),
        Touch::Ended(_) => Err(HubError::DestinationGone("`/agent/session`: this session has ended".into())),
    }
}

enum Touch {
    Live(Box<SessionRecord>),
    Unknown,
    Ended(EndKind),
}

/// Renew first (one conditional write on the happy path); read only to explain a refusal.
async fn touch(hub: &Hub, mailbox: &Mailbox, raw: &str) -> Result<Touch, HubError> {
    let Some(id) = SessionId::parse(raw) else { return Ok(Touch::Unknown) };
    let now = hub.clock.now();
    if let Some(s) = hub.sessions.renew_session(&mailbox.account, &mailbox.agent, &id, now).await? {
        return Ok(Touch::Live(Box::new(s)));
    }
    Ok(match hub.sessions.get_session(&mailbox.account, &id).await? {
        Some(s) if s.agent == mailbox.agent => match s.state(now) {
            SessionState::Ended(end) => Touch::Ended(end.kind),
            // Renewal refused yet live at `now`: the lease lapsed between the two reads' clocks.
            SessionState::Active => Touch::Ended(EndKind::Expired),
        },
        _ => Touch::Unknown,
    })
}

fn agent_mailbox(principal: &Principal) -> Result<Mailbox, HubError> {
    match &principal.id {
        PrincipalId::Agent(agent) => Ok(Mailbox { account: principal.account.clone(), agent: agent.clone() }),
        PrincipalId::Operator(_) => Err(HubError::NotAuthorized("sessions are registered by agent credentials".into())),
    }
}

fn operator_only(principal: &Principal) -> Result<(), HubError> {
    match principal.id {
        PrincipalId::Operator(_) => Ok(()),
        // §16.4.1: no agent credential may reach a stop or resume affordance.
        PrincipalId::Agent(_) => Err(HubError::NotAuthorized("only the account's human may do this".into())),
    }
}

fn operator_target(principal: &Principal, agent: &str) -> Result<Mailbox, HubError> {
    operator_only(principal)?;
    let agent = AgentId::parse(agent).ok_or(HubError::NotFound)?;
    Ok(Mailbox { account: principal.account.clone(), agent })
}

//! §13 directives, the human side: an operator sends one agent a directive and reads its §14.2
//! delivery track. The spec leaves the authoring binding to the product; the Hub mints the id,
//! attests `from` and stamps the version — none of them is ever taken from the request: a value
//! the request carries for them is ignored, as an agent's submit ignores a `from` (§10: unknown
//! fields are ignored; §13.1/§8.7.1: `from` is Hub-attested, never request-supplied).

use ma2h_protocol::envelope::Priority;
use ma2h_protocol::error::FieldError;
use ma2h_protocol::ids::{AgentId, DirectiveId, SessionId};
use ma2h_protocol::time::{self, Timestamp};
use ma2h_protocol::version::HUB_VERSION;
use ma2h_protocol::{ProtocolError, schema};
use serde_json::{Map, Value, json};

use crate::kernel::auth::Principal;
use crate::kernel::credentials::PrincipalId;
use crate::mailbox::model::{Audience, Enqueued, EntryKind, Mailbox, MailboxEntry, Track};
use crate::{Hub, HubError};

/// §13.1: a directive title is one line of at most 200 characters.
pub const MAX_TITLE_CHARS: usize = 200;
/// Members a directive must not carry (§13.1: "MUST NOT carry `request`, `action` or `state`"):
/// refused. The Hub's own members (`from`, `id`, `type`, `ma2h_version`, `created_at`) in a
/// request are ignored — [`delivered_form`] sets them and copies only the authored members.
const REFUSED: [&str; 3] = ["request", "action", "state"];

/// The one answer for every undeliverable `to` — unknown agent, another account's, malformed,
/// an unknown session — so the endpoint is no existence oracle (§4, §13.2).
pub(crate) fn unknown_destination() -> HubError {
    HubError::UnknownDestination("`/to`: unknown destination".into())
}

fn operator_only(principal: &Principal) -> Result<(), HubError> {
    match principal.id {
        PrincipalId::Operator(_) => Ok(()),
        PrincipalId::Agent(_) => Err(HubError::NotAuthorized("directives are sent and read by operators".into())),
    }
}

/// Send a directive: validate the authored fields, check the destination, enqueue it durably,
/// and wake any drain waiting on that mailbox.
pub async fn create(hub: &Hub, principal: &Principal, body: &Value) -> Result<MailboxEntry, HubError> {
    operator_only(principal)?;
    let Some(input) = body.as_object() else {
        return Err(HubError::validation("`/`: the request body must be a JSON object"));
    };
    let mut fields: Vec<FieldError> = REFUSED
        .iter()
        .filter(|k| input.contains_key(**k))
        .map(|k| FieldError::new(format!("/{k}"), "is not allowed on a directive (§13.1)"))
        .collect();
    let to = input.get("to").and_then(Value::as_str);
    let agent_part = to.and_then(|t| t.strip_prefix("agent:")).filter(|rest| !rest.is_empty());
    if agent_part.is_none() {
        fields.push(FieldError::new("/to", "must be `agent:<id>`"));
    }
    match input.get("title").and_then(Value::as_str) {
        None => fields.push(FieldError::new("/title", "is required and must be a string")),
        Some(t) if t.trim().is_empty() => fields.push(FieldError::new("/title", "must not be empty")),
        Some(t) if t.chars().count() > MAX_TITLE_CHARS => {
            fields.push(FieldError::new("/title", format!("must be at most {MAX_TITLE_CHARS} characters")))
        }
        Some(t) if t.contains(['\n', '\r']) => fields.push(FieldError::new("/title", "must be one line")),
        Some(_) => {}
    }
    let expires_at = match input.get("expires_at") {
        None => None,
        Some(v) => match v.as_str().and_then(time::parse) {
            Some(t) => Some(t),
            None => {
                fields.push(FieldError::new("/expires_at", "must be an RFC 3339 date-time"));
                None
            }
        },
    };
    if let Some(p) = input.get("priority")
        && p.as_str().and_then(Priority::parse).is_none()
    {
        fields.push(FieldError::new("/priority", "must be one of low, normal, high, urgent"));
    }
    if !fields.is_empty() {
        return Err(ProtocolError::validation_at(fields).into());
    }

    let now = hub.clock.now();
    let id = hub.new_directive_id();
    let directive = delivered_form(input, &id, principal, now);
    // The delivered form must be what the §13.1 schema admits (parts, tags, types, lengths).
    schema::validate(schema::SchemaKind::Directive, &directive)?;
    check_sizes(hub, &directive)?;
    if let Some(e) = expires_at
        && e <= now
    {
        return Err(HubError::invalid_field("`/expires_at`: must be in the future"));
    }

    // `agent:<id>` or, §13.2 (v0.5), session-addressed `agent:<id>#sess_…`.
    let (agent_raw, session_raw) = match agent_part.and_then(|a| a.split_once('#')) {
        Some((a, s)) => (Some(a), Some(s)),
        None => (agent_part, None),
    };
    let Some(agent) = agent_raw.and_then(AgentId::parse) else { return Err(unknown_destination()) };
    // "Known" = the agent has a signing secret in this account: every agent credential creates
    // it, and it is the key its deliveries are signed with.
    let secret =
        hub.credentials.get_secret(&principal.account, &agent, crate::kernel::secrets::SIGNING_SECRET_NAME).await?;
    if secret.is_none() {
        return Err(unknown_destination());
    }

    let mailbox = Mailbox { account: principal.account.clone(), agent };
    let audience = match session_raw {
        None => Audience::Any,
        Some(raw) => {
            let id = SessionId::parse(raw).ok_or_else(unknown_destination)?;
            match hub.sessions.get_session(&mailbox.account, &id).await? {
                Some(s) if s.agent == mailbox.agent && s.is_live(now) => Audience::Session(id),
                // §13.2: a terminal session → 410, whoever ended it (§16.3).
                Some(s) if s.agent == mailbox.agent => {
                    return Err(HubError::DestinationGone("`/to`: that session has ended".into()));
                }
                _ => return Err(unknown_destination()),
            }
        }
    };
    let retention = chrono::Duration::days(i64::from(hub.settings.mailbox.retention_days));
    let deadline = expires_at.map_or(now + retention, |e| e.min(now + retention));
    let author = principal.actor().to_string();
    let entry = MailboxEntry::new(
        mailbox.clone(),
        id.to_string(),
        EntryKind::Directive,
        audience,
        directive,
        author,
        now,
        deadline,
    );
    // Issue 42: recorded in the enqueue's own write (a full mailbox writes none).
    let event = crate::audit::Event::new("directive.sent", principal.actor())
        .target(&entry.key)
        .digest_of(&entry.payload)
        .detail("agent", mailbox.agent.to_string());
    let enqueue = hub.mailbox.enqueue(&entry, hub.settings.mailbox.depth);
    match crate::audit::within(hub, &mailbox.account, vec![event], enqueue).await? {
        Enqueued::New => {}
        Enqueued::Full => {
            return Err(HubError::RateLimited {
                message: format!(
                    "the agent's mailbox holds {} undelivered or unacknowledged entries; retry later",
                    hub.settings.mailbox.depth
                ),
                retry_after_secs: hub.settings.mailbox.visibility_timeout.as_secs().max(1),
            });
        }
    }
    hub.changes.publish_mailbox(&mailbox);
    tracing::info!(directive_id = %entry.key, agent_id = %mailbox.agent, "directive queued");
    Ok(entry)
}

/// A directive and its track, for an operator of its account. Anything else — another account's,
/// unknown, malformed, purged — is 404.
pub async fn read(hub: &Hub, principal: &Principal, id: &str) -> Result<(MailboxEntry, Track), HubError> {
    operator_only(principal)?;
    let id = DirectiveId::parse(id).ok_or(HubError::NotFound)?;
    let entry = hub.mailbox.get_entry(&principal.account, id.as_str()).await?.ok_or(HubError::NotFound)?;
    let now = hub.clock.now();
    if entry.retain_until.is_some_and(|r| r <= now) {
        return Err(HubError::NotFound);
    }
    let track = entry.track(now);
    Ok((entry, track))
}

/// An agent's most recent directives (newest first) with their tracks, for an operator of its
/// account. An id that cannot be an agent's has none.
pub async fn recent(
    hub: &Hub,
    principal: &Principal,
    agent: &str,
    limit: usize,
) -> Result<Vec<(MailboxEntry, Track)>, HubError> {
    operator_only(principal)?;
    let Some(agent) = AgentId::parse(agent) else { return Ok(Vec::new()) };
    let mailbox = Mailbox { account: principal.account.clone(), agent };
    let now = hub.clock.now();
    let entries = hub.mailbox.recent_entries(&mailbox, limit).await?;
    Ok(entries
        .into_iter()
        // The mailbox also holds session `response` entries; this is the directives' history.
        .filter(|e| e.kind == EntryKind::Directive && e.retain_until.is_none_or(|r| r > now))
        .map(|e| {
            let t = e.track(now);
            (e, t)
        })
        .collect())
}

/// The §13.1 delivered form: the authored members as given, plus the Hub's own.
fn delivered_form(input: &Map<String, Value>, id: &DirectiveId, principal: &Principal, now: Timestamp) -> Value {
    let mut d = Map::new();
    d.insert("ma2h_version".into(), json!(HUB_VERSION));
    d.insert("type".into(), json!("directive"));
    d.insert("id".into(), json!(id.as_str()));
    d.insert("from".into(), json!(principal.actor().to_string()));
    d.insert("to".into(), input.get("to").cloned().unwrap_or(Value::Null));
    d.insert("created_at".into(), json!(time::format(now)));
    // Only members the author gave: §9.7 binds exactly the present ones, so nothing is defaulted in.
    for k in ["title", "body", "priority", "tags", "context", "expires_at", "sensitive"] {
        if let Some(v) = input.get(k) {
            d.insert(k.into(), v.clone());
        }
    }
    Value::Object(d)
}

/// §8.6 size limits, as on submit.
fn check_sizes(hub: &Hub, directive: &Value) -> Result<(), HubError> {
    let limits = &hub.settings.limits;
    let size = serde_json::to_vec(directive).map(|v| v.len()).unwrap_or(usize::MAX);
    if size > limits.max_envelope_bytes {
        return Err(HubError::invalid_field(format!(
            "`/`: {size} bytes exceeds max_envelope_bytes ({})",
            limits.max_envelope_bytes
        )));
    }
    if let Some(fields) = directive.as_object() {
        ma2h_protocol::rules::check_content_sizes(fields, limits)?;
    }
    Ok(())
}

//! Scoped grants (issue 40): an ask may carry a **grant key** (`request.grant_key`, a Hub
//! extension — the permission hook sets one from the tool and the command's program and
//! subcommand). When a human answers such an ask they may make the answer stand — for N minutes,
//! this session, this project, or this agent until revoked. A later ask of the same agent with
//! the same key inside the scope is then answered by the Hub at once: `answered` with the
//! granted value, attested to the granting human, `response.grant_id` naming the grant, signed
//! and delivered like every Response.
//!
//! Grants never widen: a `sensitive` ask and an ask under an approval policy are never
//! answered by a grant (nor can they create one); a granted value must still be a valid answer
//! of the new ask; a grant stops the moment it is revoked, expires, or its human no longer holds
//! an active operator credential.

use chrono::Duration;
use ma2h_protocol::envelope::Envelope;
use ma2h_protocol::ids::{Actor, HumanId};
use ma2h_protocol::lifecycle::Resolution;
use ma2h_protocol::response::{Extensions, Terminal};
use serde_json::{Value, json};

pub use crate::decisions::grant_store::{Grant, GrantScope, GrantStore, KEEP};
use crate::kernel::auth::Principal;
use crate::kernel::credentials::PrincipalId;
use crate::messages::lifecycle::apply_terminal;
use crate::messages::records::{Completion, MessageRecord};
use crate::{Hub, HubError};

/// The longest key an ask may carry.
pub const MAX_KEY_CHARS: usize = 200;
/// The longest timed grant.
pub const MAX_MINUTES: u32 = 7 * 24 * 60;
/// A session grant ends with its session, and after a day at the latest.
pub const SESSION_CAP: Duration = Duration::hours(24);
/// Grants listed at most.
pub const LIST_LIMIT: usize = 500;

/// How long the answer should stand, as the human chose it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Choice {
    Minutes(u32),
    Session,
    Project,
    Agent,
}

impl Choice {
    /// `15m`, `60m`, `session`, `project`, `agent` (the inbox's select); `once` is `None`.
    pub fn parse(s: &str) -> Result<Option<Self>, HubError> {
        Ok(Some(match s.trim() {
            "" | "once" => return Ok(None),
            "session" => Self::Session,
            "project" => Self::Project,
            "agent" => Self::Agent,
            m => match m.strip_suffix('m').and_then(|n| n.parse::<u32>().ok()) {
                Some(n) if (1..=MAX_MINUTES).contains(&n) => Self::Minutes(n),
                _ => return Err(HubError::validation("`grant`: once, <1–10080>m, session, project or agent")),
            },
        }))
    }
}

/// The ask's grant key, if it carries a usable one.
pub fn key_of(envelope: &Envelope) -> Option<String> {
    key_in(envelope.raw.get("request")?)
}

/// `request.grant_key` of a stored envelope's `request`.
fn key_in(request: &Value) -> Option<String> {
    let key = request.get("grant_key")?.as_str()?.trim();
    (!key.is_empty() && key.chars().count() <= MAX_KEY_CHARS && !key.chars().any(char::is_control))
        .then(|| key.to_owned())
}

/// Why this ask can never be answered by (or create) a grant, if it cannot.
async fn never(hub: &Hub, record: &MessageRecord, envelope: &Envelope) -> Result<Option<&'static str>, HubError> {
    if envelope.sensitive {
        return Ok(Some("a sensitive ask is never answered by a grant"));
    }
    if crate::decisions::quorum::policy_of(hub, record, envelope).await?.is_some() {
        return Ok(Some("an ask under an approval policy is never answered by a grant"));
    }
    Ok(None)
}

/// After `principal` answered `record` with `value`: make the answer stand under `choice`.
pub async fn grant(hub: &Hub, principal: &Principal, id: &str, choice: Choice) -> Result<Grant, HubError> {
    let PrincipalId::Operator(human) = &principal.id else {
        return Err(HubError::NotAuthorized("only a human grants".into()));
    };
    let mid = ma2h_protocol::ids::MessageId::parse(id).ok_or(HubError::NotFound)?;
    let record = match hub.lookup(&principal.account, &mid).await? {
        crate::messages::records::Lookup::Found(r) => r,
        crate::messages::records::Lookup::Gone { .. } => return Err(HubError::Gone),
        crate::messages::records::Lookup::Missing => return Err(HubError::NotFound),
    };
    let envelope = record.envelope()?;
    let key = key_of(&envelope).ok_or_else(|| HubError::validation("this ask carries no grant key"))?;
    let response = record.response.as_ref().and_then(|r| r.get("response"));
    let answered_by_me = record.status.resolution() == Some(Resolution::Answered)
        && response.and_then(|r| r["actor"].as_str()) == Some(principal.actor().to_string().as_str());
    if !answered_by_me {
        return Err(HubError::validation("a grant stands on your own answer of this ask"));
    }
    if let Some(why) = never(hub, &record, &envelope).await? {
        return Err(HubError::validation(why));
    }
    let value = response.and_then(|r| r.get("value")).cloned().unwrap_or(Value::Null);
    let now = hub.clock.now();
    let (scope, expires_at) = match choice {
        Choice::Minutes(n) => (GrantScope::Minutes, Some(now + Duration::minutes(i64::from(n)))),
        Choice::Session => {
            let s = envelope
                .agent
                .session
                .clone()
                .ok_or_else(|| HubError::validation("this ask was made outside a session"))?;
            (GrantScope::Session { session: s }, Some(now + SESSION_CAP))
        }
        Choice::Project => {
            let p = envelope.agent.project.clone().ok_or_else(|| HubError::validation("this ask names no project"))?;
            (GrantScope::Project { project: p }, None)
        }
        Choice::Agent => (GrantScope::Agent, None),
    };
    let g = Grant {
        id: format!("grt_{}", hub.new_resolution_id().as_str().trim_start_matches("res_")),
        account: principal.account.clone(),
        agent: record.agent_id.clone(),
        key,
        scope,
        value,
        granted_by: human.clone(),
        from_message: record.id.clone(),
        created_at: now,
        expires_at,
        revoked_at: None,
        revoked_by: None,
        uses: 0,
        last_used_at: None,
    };
    // Issue 42: recorded in the grant's own write.
    let event = crate::audit::Event::new("grant.issued", format!("human:{human}"))
        .target(&g.id)
        .digest_of(&g.value)
        .detail("agent", g.agent.to_string())
        .detail("key", g.key.as_str())
        .detail("message", g.from_message.to_string());
    crate::audit::within(hub, &principal.account, vec![event], hub.grants.put_grant(&g)).await?;
    hub.changes.publish_account(&principal.account);
    tracing::info!(grant_id = %g.id, agent_id = %g.agent, human = %human, key = %g.key, scope = ?g.scope, "grant issued");
    Ok(g)
}

/// At submit: answer a new ask at once from a standing grant, if one applies. Returns the grant
/// used. Never fails the submit: a problem is logged and the ask stays open for a human.
pub async fn auto_answer(hub: &Hub, record: &MessageRecord) -> Option<Grant> {
    // most asks carry no key: decided from the stored JSON before anything is parsed or read
    key_in(&record.envelope["request"])?;
    let envelope = record.envelope().ok()?;
    match try_auto_answer(hub, record, &envelope).await {
        Ok(g) => g,
        Err(e) => {
            tracing::warn!(message_id = %record.id, error = %e, "grant lookup failed; the ask waits for a human");
            None
        }
    }
}

async fn try_auto_answer(hub: &Hub, record: &MessageRecord, envelope: &Envelope) -> Result<Option<Grant>, HubError> {
    let Some(key) = key_of(envelope) else { return Ok(None) };
    let now = hub.clock.now();
    let mut candidates: Vec<Grant> = hub
        .grants
        .grants_for(&record.account, &record.agent_id, &key)
        .await?
        .into_iter()
        .filter(|g| g.is_active(now) && g.covers(envelope.agent.session.as_deref(), envelope.agent.project.as_deref()))
        .collect();
    if candidates.is_empty() || never(hub, record, envelope).await?.is_some() {
        return Ok(None);
    }
    candidates.sort_by_key(|g| std::cmp::Reverse(g.created_at)); // the newest decision first
    for g in candidates {
        // the granting human must still hold an active operator credential (as a Slack link)
        let creds =
            hub.credentials.credentials_of(&record.account, &PrincipalId::Operator(g.granted_by.clone())).await?;
        if !creds.iter().any(|c| c.is_active(now)) {
            continue;
        }
        // the value must be a valid answer of this ask (§8.8 rules), and the human an allowed resolver
        let body = json!({"resolution": "answered", "value": g.value});
        let Ok(request) = ma2h_protocol::resolve::ResolveRequest::parse(body.to_string().as_bytes()) else { continue };
        if request.check_against(envelope).is_err() {
            continue;
        }
        let actor = Actor::Human(g.granted_by.to_string());
        let listed = envelope.allowed_resolvers().is_some_and(|l| l.iter().any(|e| actor.matches_entry(e)));
        if !listed {
            continue;
        }
        let terminal = Terminal {
            resolution: Resolution::Answered,
            actor,
            resolved_at: now,
            resolution_id: hub.new_resolution_id(),
            value: request.value,
            comment: Some(format!("answered by grant {} of human:{}", g.id, g.granted_by)),
            checklist: None,
            defaulted: false,
            edited: false,
            ext: Extensions { grant_id: Some(g.id.clone()), ..Extensions::default() },
        };
        return match apply_terminal(hub, record, envelope, terminal).await? {
            Completion::Applied(_) => {
                if let Err(e) = hub.grants.record_grant_use(&g, now).await {
                    tracing::warn!(grant_id = %g.id, error = %e, "grant use not counted");
                }
                tracing::info!(message_id = %record.id, grant_id = %g.id, "answered by a standing grant");
                Ok(Some(g))
            }
            _ => Ok(None),
        };
    }
    Ok(None)
}

fn operator(principal: &Principal) -> Result<&HumanId, HubError> {
    match &principal.id {
        PrincipalId::Operator(h) => Ok(h),
        PrincipalId::Agent(_) => Err(HubError::NotAuthorized("grants need an operator credential".into())),
    }
}

pub fn grant_json(g: &Grant, now: ma2h_protocol::time::Timestamp) -> Value {
    let mut v = serde_json::to_value(g).unwrap_or_default();
    v["active"] = json!(g.is_active(now));
    v["granted_by"] = json!(format!("human:{}", g.granted_by));
    v
}

/// The account's grants, newest first.
pub async fn list(hub: &Hub, principal: &Principal) -> Result<Vec<Grant>, HubError> {
    operator(principal)?;
    Ok(hub.grants.list_grants(&principal.account, LIST_LIMIT).await?)
}

/// Revoke a grant at once (any operator of the account; idempotent).
pub async fn revoke(hub: &Hub, principal: &Principal, id: &str) -> Result<Grant, HubError> {
    let me = operator(principal)?;
    revoke_as(hub, &principal.account, id, &format!("human:{me}")).await
}

/// Revoke as `by` (`human:<id>`, or `admin` from the admin CLI).
pub async fn revoke_as(
    hub: &Hub,
    account: &ma2h_protocol::ids::AccountId,
    id: &str,
    by: &str,
) -> Result<Grant, HubError> {
    let mut g = hub.grants.get_grant(account, id).await?.ok_or(HubError::NotFound)?;
    let now = hub.clock.now();
    let event = crate::audit::Event::new("grant.revoked", by).target(&g.id);
    if g.revoked_at.is_none()
        && crate::audit::within(hub, account, vec![event], hub.grants.revoke_grant(&g, now, by)).await?
    {
        tracing::info!(grant_id = %g.id, by = %by, "grant revoked");
        g.revoked_at = Some(now);
        g.revoked_by = Some(by.to_owned());
        hub.changes.publish_account(account);
    }
    Ok(g)
}

/// The account's grants (the admin CLI).
pub async fn list_account(hub: &Hub, account: &ma2h_protocol::ids::AccountId) -> Result<Vec<Grant>, HubError> {
    Ok(hub.grants.list_grants(account, LIST_LIMIT).await?)
}

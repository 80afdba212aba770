//! The inbox's Audit page (issue 42): an account's recent entries, newest first, filtered by
//! actor, agent, kind and time — read from every chain of the account over the window (on
//! DynamoDB one `Query` per shard: a page for people, not a request path).

use ma2h_protocol::time::Timestamp;

use super::store::AuditRecord;
use crate::kernel::auth::Principal;
use crate::kernel::credentials::PrincipalId;
use crate::{Hub, HubError};

/// Most entries one view shows.
pub const SHOWN: usize = 200;
/// Most entries read from one chain for one view: past it the page says to narrow the window.
const READ_PER_SHARD: usize = 2_000;

/// What the page asks for; empty fields filter nothing.
#[derive(Debug, Clone, Default)]
pub struct Filter {
    /// The principal exactly (`human:alice`, `agent:bot`, `system:admin`).
    pub actor: Option<String>,
    /// Entries about this agent: by it, naming it as target, or in their `agent` detail.
    pub agent: Option<String>,
    /// A kind (`message.resolved`), or a family (`message.`).
    pub kind: Option<String>,
    pub since: Option<Timestamp>,
    pub until: Option<Timestamp>,
}

/// The entries shown, and whether the window held more than was read or shown.
#[derive(Debug, Clone, Default)]
pub struct View {
    pub entries: Vec<AuditRecord>,
    pub since: Option<Timestamp>,
    pub until: Option<Timestamp>,
    pub more: bool,
}

/// Kinds the page offers as a filter (families first).
pub const KINDS: &[&str] = &[
    "message.",
    "message.submitted",
    "message.approved",
    "message.resolved",
    "message.cancelled",
    "message.expired",
    "push.",
    "directive.",
    "session.",
    "agent.",
    "grant.",
    "credential.",
    "secret.",
    "binding.",
    "policy.changed",
    "channel.",
    "route.changed",
    "delegation.changed",
    "login",
    "logout",
];

impl Filter {
    fn keeps(&self, r: &AuditRecord) -> bool {
        let kind_ok = self.kind.as_deref().is_none_or(|k| match k.ends_with('.') {
            true => r.kind.starts_with(k),
            false => r.kind == k,
        });
        let actor_ok = self.actor.as_deref().is_none_or(|a| r.principal == a);
        let agent_ok = self.agent.as_deref().is_none_or(|a| {
            let named = format!("agent:{a}");
            r.principal == named
                || r.target.as_deref() == Some(named.as_str())
                || r.detail.get("agent").and_then(|v| v.as_str()) == Some(a)
        });
        kind_ok && actor_ok && agent_ok
    }
}

/// The calling operator's account, filtered; the default window is the last 24 hours.
pub async fn browse(hub: &Hub, principal: &Principal, filter: &Filter) -> Result<View, HubError> {
    if !matches!(principal.id, PrincipalId::Operator(_)) {
        return Err(HubError::NotAuthorized("the audit ledger needs an operator credential".into()));
    }
    let now = hub.clock.now();
    let until = filter.until.map_or(now, |u| u.min(now));
    let since = filter.since.unwrap_or(until - chrono::Duration::hours(24));
    if since > until {
        return Err(HubError::validation("`since` must be before `until`"));
    }
    // sort keys start with the time in ms: every key of the window sorts after this one
    let after = format!("{:013}", since.timestamp_millis().max(1) - 1);
    let mut more = false;
    let mut entries = Vec::new();
    for shard in 0..hub.audit.audit_shards() {
        let read = hub.audit.audit_entries(&principal.account, shard, Some(&after), until, READ_PER_SHARD).await?;
        more |= read.len() == READ_PER_SHARD;
        entries.extend(read.into_iter().filter(|r| r.at >= since && filter.keeps(r)));
    }
    entries.sort_by(|a, b| (b.at, &b.id).cmp(&(a.at, &a.id)));
    more |= entries.len() > SHOWN;
    entries.truncate(SHOWN);
    Ok(View { entries, since: Some(since), until: Some(until), more })
}

//! §15 presence: a best-effort "is this agent listening" derived only from the agent's own
//! authenticated traffic (drains, `?wait=` long-polls) — never from a heartbeat the Hub invents.

use ma2h_protocol::ids::AgentId;

use crate::Hub;
use crate::kernel::auth::Principal;
use crate::kernel::credentials::PrincipalId;
use crate::mailbox::model::Mailbox;

/// Cached write times kept per process before the cache is reset (bounded memory).
const CACHE_LIMIT: usize = 10_000;

/// The §15.3 read.
pub use ma2h_protocol::wire::Presence;
/// §15.2 states.
pub use ma2h_protocol::wire::Reach as PresenceState;

/// Record activity of `mailbox`'s agent now. Written at most once per granularity per process,
/// so a stored `last_seen` lags the truth by less than that and can only make presence read
/// `offline` early, never `online` late. A failed write is logged, never fails the request.
pub async fn seen(hub: &Hub, mailbox: &Mailbox) {
    let now = hub.clock.now();
    let granularity =
        chrono::Duration::from_std(hub.settings.mailbox.presence_granularity()).unwrap_or(chrono::Duration::seconds(1));
    let key = mailbox.key();
    {
        let mut cache = hub.presence_written.lock().expect("presence cache poisoned");
        if cache.get(&key).is_some_and(|last| now - *last < granularity) {
            return;
        }
        if cache.len() >= CACHE_LIMIT {
            cache.clear();
        }
        cache.insert(key, now);
    }
    if let Err(e) = hub.mailbox.touch_presence(mailbox, now).await {
        tracing::warn!(agent_id = %mailbox.agent, error = %e, "presence not recorded");
    }
}

/// The agent's latest activity: its presence record (drains and long-polls without a session)
/// or the latest renewal of one of its sessions — a renewal stamps the session, not the presence
/// record, so an agent that always drains with a session costs one write per poll, not two.
async fn last_seen(hub: &Hub, mailbox: &Mailbox) -> Result<Option<chrono::DateTime<chrono::Utc>>, crate::HubError> {
    let own = hub.mailbox.last_seen(mailbox).await?;
    let sessions = hub.sessions.list_sessions(&mailbox.account, Some(&mailbox.agent), RECENT_SESSIONS).await?;
    Ok(sessions.iter().filter_map(|s| s.last_seen).chain(own).max())
}

/// Sessions read for presence: the newest (an agent with more live sessions than this is seen
/// through its presence record or one of these).
const RECENT_SESSIONS: usize = 16;

/// `GET /v1/agents/{agent_id}/presence`: an operator of the agent's account reads its state;
/// every other caller gets `unknown` without `last_seen` — "not yours" and "never seen" are one
/// answer (§15.3: owner-only, indistinguishable).
pub async fn read(hub: &Hub, principal: &Principal, agent_id: &str) -> Result<Presence, crate::HubError> {
    let window = hub.settings.mailbox.presence_freshness;
    let mut presence = Presence {
        agent_id: agent_id.to_owned(),
        state: PresenceState::Unknown,
        last_seen: None,
        freshness_seconds: window.as_secs(),
    };
    let (PrincipalId::Operator(_), Some(agent)) = (&principal.id, AgentId::parse(agent_id)) else {
        return Ok(presence);
    };
    let mailbox = Mailbox { account: principal.account.clone(), agent };
    let Some(last_seen) = last_seen(hub, &mailbox).await? else { return Ok(presence) };
    let age = hub.clock.now() - last_seen;
    presence.state =
        if age.to_std().unwrap_or_default() <= window { PresenceState::Online } else { PresenceState::Offline };
    presence.last_seen = Some(last_seen);
    Ok(presence)
}

//! Operator presence (issue 40): when each human was last active in the inbox, the operator API
//! or a channel (a Slack press, a mail's answer link). Only their own authenticated requests
//! count — a live tab polling in the background does not — and it is written at most once a
//! minute per operator per process, so a stored time lags the truth by under a minute. An
//! on-call ladder ([`crate::channels::ladder`]) skips an operator who is away or offline.

use chrono::Duration;
use ma2h_protocol::ids::{AccountId, HumanId};
use ma2h_protocol::time::{self, Timestamp};
use serde_json::{Value, json};

use crate::inter_agent::policy::AccountPolicy;
use crate::{Hub, HubError};

/// How often one process writes one operator's activity.
pub const GRANULARITY: Duration = Duration::minutes(1);
/// An operator seen within this long reads `online` in the team listing.
pub const ONLINE: Duration = Duration::minutes(15);
/// Cached write times kept per process before the cache is reset (bounded memory).
const CACHE_LIMIT: usize = 10_000;

/// Record that `human` of `account` is active now. A failed write is logged, never fails the
/// request it came with.
pub async fn seen(hub: &Hub, account: &AccountId, human: &HumanId) {
    let now = hub.clock.now();
    // Operator keys cannot collide with the agents' `mbx:` keys in the shared cache.
    let key = format!("op:{}/{}", ma2h_protocol::ids::key_part(account.as_str()), human.as_str());
    {
        let mut cache = hub.presence_written.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if cache.get(&key).is_some_and(|last| now - *last < GRANULARITY) {
            return;
        }
        if cache.len() >= CACHE_LIMIT {
            cache.clear();
        }
        cache.insert(key, now);
    }
    if let Err(e) = hub.credentials.touch_operator(account, human, now).await {
        tracing::warn!(account = %account, human = %human, error = %e, "operator activity not recorded");
    }
}

/// How an operator stands for a ladder at `now`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Standing {
    /// Away with a delegate: reach the delegate instead.
    Away {
        delegate: String,
        until: Timestamp,
    },
    /// Not active within the window (or never seen).
    Offline {
        last_seen: Option<Timestamp>,
    },
    Available,
}

/// Where `human` stands: away (a running absence) first, then offline when not active within
/// `window`.
pub fn standing(
    policy: &AccountPolicy,
    seen: &[(HumanId, Timestamp)],
    human: &str,
    window: Duration,
    now: Timestamp,
) -> Standing {
    if let Some(a) = policy.away.get(human).filter(|a| a.since <= now && now < a.until) {
        return Standing::Away { delegate: a.delegate.clone(), until: a.until };
    }
    let last_seen = last_seen(seen, human);
    if last_seen.is_none_or(|t| now - t > window) {
        return Standing::Offline { last_seen };
    }
    Standing::Available
}

pub fn last_seen(seen: &[(HumanId, Timestamp)], human: &str) -> Option<Timestamp> {
    seen.iter().find(|(h, _)| h.as_str() == human).map(|(_, t)| *t)
}

/// One row of the team listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Member {
    pub human: String,
    pub last_seen: Option<Timestamp>,
    /// A running absence: (delegate, until).
    pub away: Option<(String, Timestamp)>,
}

impl Member {
    pub fn state(&self, now: Timestamp) -> &'static str {
        match (&self.away, self.last_seen) {
            (Some(_), _) => "away",
            (None, Some(t)) if now - t <= ONLINE => "online",
            (None, Some(_)) => "offline",
            (None, None) => "unknown",
        }
    }
}

/// The account's operators as presence knows them: everyone seen, away, or on a route's
/// ladder, by id.
pub async fn team(hub: &Hub, account: &AccountId) -> Result<Vec<Member>, HubError> {
    let seen = hub.credentials.operators_seen(account).await?;
    // read as stored (a listing, not a hot path): an absence just set shows at once
    let policy = hub.credentials.get_account_policy(account).await?.unwrap_or_default();
    Ok(members(&policy, &seen, hub.clock.now()))
}

pub fn members(policy: &AccountPolicy, seen: &[(HumanId, Timestamp)], now: Timestamp) -> Vec<Member> {
    let mut names: Vec<String> = seen.iter().map(|(h, _)| h.to_string()).collect();
    names.extend(policy.away.iter().filter(|(_, a)| a.until > now).map(|(h, _)| h.clone()));
    names.extend(policy.channels.routes.iter().flat_map(|r| r.ladder.iter().cloned()));
    names.sort();
    names.dedup();
    names
        .into_iter()
        .map(|human| Member {
            last_seen: last_seen(seen, &human),
            away: policy
                .away
                .get(&human)
                .filter(|a| a.since <= now && now < a.until)
                .map(|a| (a.delegate.clone(), a.until)),
            human,
        })
        .collect()
}

/// The operator API's body: `{"operators": [{human, state, last_seen?, away?}]}`.
pub fn team_json(members: &[Member], now: Timestamp) -> Value {
    let list: Vec<Value> = members
        .iter()
        .map(|m| {
            let mut v = json!({"human": format!("human:{}", m.human), "state": m.state(now)});
            if let Some(t) = m.last_seen {
                v["last_seen"] = json!(time::format(t));
            }
            if let Some((delegate, until)) = &m.away {
                v["away"] = json!({"delegate": format!("human:{delegate}"), "until": time::format(*until)});
            }
            v
        })
        .collect();
    json!({ "operators": list })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::decisions::policy::Away;

    fn at(minutes: i64) -> Timestamp {
        time::from_millis(1_800_000_000_000) + Duration::minutes(minutes)
    }

    fn h(s: &str) -> HumanId {
        HumanId::parse(s).unwrap()
    }

    #[test]
    fn away_comes_before_offline_and_an_old_visit_is_offline() {
        let mut policy = AccountPolicy::default();
        policy.away.insert("alice".into(), Away { delegate: "dave".into(), since: at(-10), until: at(60) });
        let seen = vec![(h("alice"), at(0)), (h("bob"), at(-5)), (h("carol"), at(-90))];
        let window = Duration::minutes(60);
        assert_eq!(
            standing(&policy, &seen, "alice", window, at(0)),
            Standing::Away { delegate: "dave".into(), until: at(60) }
        );
        assert_eq!(standing(&policy, &seen, "alice", window, at(60)), Standing::Available, "the absence ended");
        assert_eq!(standing(&policy, &seen, "bob", window, at(0)), Standing::Available);
        assert_eq!(standing(&policy, &seen, "carol", window, at(0)), Standing::Offline { last_seen: Some(at(-90)) });
        assert_eq!(standing(&policy, &seen, "erin", window, at(0)), Standing::Offline { last_seen: None });
    }

    #[test]
    fn the_team_lists_the_seen_the_away_and_the_ladder_once_each() {
        let mut policy = AccountPolicy::default();
        policy.away.insert("alice".into(), Away { delegate: "dave".into(), since: at(-10), until: at(60) });
        policy.away.insert("old".into(), Away { delegate: "dave".into(), since: at(-100), until: at(-50) });
        policy.channels.routes = vec![
            serde_json::from_value(serde_json::json!({"id":"r","targets":["x"],"ladder":["bob","erin"]})).unwrap(),
        ];
        let seen = vec![(h("alice"), at(-1)), (h("bob"), at(-30))];
        let team = members(&policy, &seen, at(0));
        let names: Vec<_> = team.iter().map(|m| m.human.as_str()).collect();
        assert_eq!(names, ["alice", "bob", "erin"], "an ended absence is not listed");
        let states: Vec<_> = team.iter().map(|m| m.state(at(0))).collect();
        assert_eq!(states, ["away", "offline", "unknown"]);
        let body = team_json(&team, at(0));
        assert_eq!(body["operators"][0]["away"]["delegate"], "human:dave");
        assert!(body["operators"][2].get("last_seen").is_none());
    }
}

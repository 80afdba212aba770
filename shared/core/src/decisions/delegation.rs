//! Delegation while away (issue 40): an operator marks themself away until a time and names a
//! delegate; until then an ask that lists them (`allowed_resolvers` names `human:<them>`) may be
//! answered by the delegate — attested as the delegate, with `on_behalf_of` recorded in the
//! Response (a Hub extension). It ends on time, or when lifted. Kept in the account's policy
//! document (`AccountPolicy::away`), edited by compare-and-set.

use chrono::Duration;
use ma2h_protocol::ids::{Actor, HumanId};
use ma2h_protocol::time::Timestamp;
use serde_json::{Value, json};

use crate::decisions::manage::edit_policy;
use crate::inter_agent::policy::AccountPolicy;
use crate::kernel::auth::Principal;
use crate::kernel::credentials::PrincipalId;
use crate::{Hub, HubError};

/// The longest absence one record covers.
pub const MAX_AWAY: Duration = Duration::days(90);

pub use crate::decisions::policy::Away;

/// The human `actor` may stand in for on an ask listing `listed`: a listed `human:<x>` who is
/// away now with `actor` as delegate. Returns `human:<x>`.
pub fn stands_in_for(policy: &AccountPolicy, listed: &[String], actor: &Actor, now: Timestamp) -> Option<String> {
    let Actor::Human(me) = actor else { return None };
    listed.iter().filter_map(|entry| entry.strip_prefix("human:")).find_map(|absent| {
        let away = policy.away.get(absent)?;
        (away.delegate == *me && away.since <= now && now < away.until).then(|| format!("human:{absent}"))
    })
}

/// The away human the attested `actor` may answer for on this ask, if any (`human:<x>`): the ask
/// must list humans explicitly. Reads the account policy through its cache.
pub async fn standing_in(
    hub: &Hub,
    record: &crate::messages::records::MessageRecord,
    envelope: &ma2h_protocol::envelope::Envelope,
    actor: &Actor,
) -> Result<Option<String>, HubError> {
    let (Actor::Human(_), Some(listed)) = (actor, envelope.allowed_resolvers()) else { return Ok(None) };
    let policy = crate::channels::schedule::config(hub, &record.account).await?;
    Ok(stands_in_for(&policy, listed, actor, hub.clock.now()))
}

/// The running absences of the account (ended ones are not shown).
pub fn running(policy: &AccountPolicy, now: Timestamp) -> Vec<(String, Away)> {
    policy.away.iter().filter(|(_, a)| a.until > now).map(|(h, a)| (h.clone(), a.clone())).collect()
}

pub fn away_json(policy: &AccountPolicy, now: Timestamp) -> Value {
    let list: Vec<Value> = running(policy, now)
        .into_iter()
        .map(|(h, a)| {
            json!({"human": format!("human:{h}"), "delegate": format!("human:{}", a.delegate),
                   "since": ma2h_protocol::time::format(a.since), "until": ma2h_protocol::time::format(a.until)})
        })
        .collect();
    json!({ "away": list })
}

fn me(principal: &Principal) -> Result<&HumanId, HubError> {
    match &principal.id {
        PrincipalId::Operator(h) => Ok(h),
        PrincipalId::Agent(_) => Err(HubError::NotAuthorized("only an operator can be away".into())),
    }
}

/// Mark `human` away until `until`, answered for by `delegate` (an operator of the account who
/// holds an active credential). The API and the inbox mark the caller; the admin CLI anyone.
pub async fn set_away(
    hub: &Hub,
    by: &str,
    account: &ma2h_protocol::ids::AccountId,
    human: &HumanId,
    delegate: &str,
    until: Timestamp,
) -> Result<Value, HubError> {
    let now = hub.clock.now();
    let delegate = delegate.trim();
    let delegate = HumanId::parse(delegate.strip_prefix("human:").unwrap_or(delegate))
        .ok_or_else(|| HubError::validation("`delegate`: an operator id"))?;
    if &delegate == human {
        return Err(HubError::validation("`delegate`: someone else"));
    }
    if until <= now || until - now > MAX_AWAY {
        return Err(HubError::validation("`until`: a time in the next 90 days"));
    }
    let creds = hub.credentials.credentials_of(account, &PrincipalId::Operator(delegate.clone())).await?;
    if !creds.iter().any(|c| c.is_active(now)) {
        return Err(HubError::validation(format!(
            "`delegate`: human:{delegate} holds no active operator credential in this account"
        )));
    }
    let event = crate::audit::Event::new("delegation.changed", by)
        .target(format!("human:{human}"))
        .detail("action", "away")
        .detail("delegate", format!("human:{delegate}"))
        .detail("until", ma2h_protocol::time::format(until));
    let saved = edit_policy(hub, account, event, |p| {
        p.away.retain(|_, a| a.until > now);
        p.away.insert(human.to_string(), Away { delegate: delegate.to_string(), since: now, until });
        Ok(())
    })
    .await?;
    tracing::info!(account = %account, human = %human, delegate = %delegate, until = %ma2h_protocol::time::format(until), "operator away with a delegate");
    Ok(away_json(&saved, now))
}

/// End `human`'s absence now (idempotent).
pub async fn lift(
    hub: &Hub,
    by: &str,
    account: &ma2h_protocol::ids::AccountId,
    human: &HumanId,
) -> Result<Value, HubError> {
    let now = hub.clock.now();
    let event =
        crate::audit::Event::new("delegation.changed", by).target(format!("human:{human}")).detail("action", "back");
    let saved = edit_policy(hub, account, event, |p| {
        p.away.retain(|h, a| a.until > now && h != human.as_str());
        Ok(())
    })
    .await?;
    tracing::info!(account = %account, human = %human, "operator back: delegation lifted");
    Ok(away_json(&saved, now))
}

/// The caller marks themself away.
pub async fn set_mine(hub: &Hub, principal: &Principal, delegate: &str, until: Timestamp) -> Result<Value, HubError> {
    set_away(hub, &principal.actor().to_string(), &principal.account, me(principal)?, delegate, until).await
}

pub async fn lift_mine(hub: &Hub, principal: &Principal) -> Result<Value, HubError> {
    lift(hub, &principal.actor().to_string(), &principal.account, me(principal)?).await
}

pub async fn show(hub: &Hub, account: &ma2h_protocol::ids::AccountId) -> Result<Value, HubError> {
    let policy = hub.credentials.get_account_policy(account).await?.unwrap_or_default();
    Ok(away_json(&policy, hub.clock.now()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_delegate_stands_in_only_for_a_listed_human_away_now() {
        let now = ma2h_protocol::time::parse("2026-12-04T10:00:00Z").unwrap();
        let mut p = AccountPolicy::default();
        p.away.insert(
            "alice".into(),
            Away { delegate: "bob".into(), since: now - Duration::hours(1), until: now + Duration::hours(1) },
        );
        let listed = vec!["human:alice".to_owned(), "agent:bot".to_owned()];
        let bob = Actor::Human("bob".into());
        assert_eq!(stands_in_for(&p, &listed, &bob, now).as_deref(), Some("human:alice"));
        assert_eq!(stands_in_for(&p, &listed, &Actor::Human("carol".into()), now), None, "not the delegate");
        assert_eq!(stands_in_for(&p, &["human:dave".into()], &bob, now), None, "alice is not listed");
        assert_eq!(stands_in_for(&p, &listed, &bob, now + Duration::hours(2)), None, "the absence ended");
    }
}

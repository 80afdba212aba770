//! Credentials: API keys are random 256-bit tokens shown once; the store keeps only their
//! SHA-256 (high-entropy keys need no slow hash). Lookups go by hash, so comparison never touches
//! the plaintext.

use std::net::IpAddr;

use base64::Engine;
use chrono::Timelike;
use ma2h_protocol::ids::{AccountId, Actor, key_part};
use sha2::{Digest, Sha256};

use crate::HubError;
use crate::kernel::credentials::PrincipalId;
use crate::kernel::hub::Hub;

const AGENT_KEY_PREFIX: &str = "ma2h_ak_";
const OPERATOR_KEY_PREFIX: &str = "ma2h_op_";

/// An authenticated caller.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Principal {
    pub account: AccountId,
    pub id: PrincipalId,
    pub credential_id: String,
}

impl Principal {
    /// The Hub-attested actor for this caller (§9.1: never from a request body).
    pub fn actor(&self) -> Actor {
        match &self.id {
            PrincipalId::Agent(a) => Actor::agent(a),
            PrincipalId::Operator(h) => Actor::human(h),
        }
    }
}

/// SHA-256 (hex) of a presented key.
pub fn hash_key(key: &str) -> String {
    hex::encode(Sha256::digest(key.as_bytes()))
}

/// A fresh random token with a readable prefix (`ma2h_ak_…`, `ma2h_op_…`, `whsec_…`).
pub fn new_token(hub: &Hub, prefix: &str) -> String {
    let mut bytes = [0u8; 32];
    hub.random.fill(&mut bytes);
    format!("{prefix}{}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes))
}

pub fn key_prefix(principal: &PrincipalId) -> &'static str {
    match principal {
        PrincipalId::Agent(_) => AGENT_KEY_PREFIX,
        PrincipalId::Operator(_) => OPERATOR_KEY_PREFIX,
    }
}

/// Resolve a presented key to its principal: unknown, revoked or expired → 401.
pub async fn authenticate(hub: &Hub, presented: Option<&str>) -> Result<Principal, HubError> {
    authenticate_from(hub, presented, None).await
}

/// [`authenticate`] for a request from `client`: its failures are counted per client per minute,
/// and past `MA2H_AUTH_FAILURES_PER_MINUTE` a failure is a 429 with `Retry-After` instead of a
/// 401, logged once when the client crosses the limit (never with the key). A valid key is never
/// refused, so a client sharing an address with an attacker is not locked out — and a failure
/// costs one counter write, a success nothing.
pub async fn authenticate_from(
    hub: &Hub,
    presented: Option<&str>,
    client: Option<IpAddr>,
) -> Result<Principal, HubError> {
    match lookup(hub, presented).await {
        Err(HubError::Unauthenticated) if presented.is_some() => Err(count_failure(hub, client).await?),
        other => other,
    }
}

async fn lookup(hub: &Hub, presented: Option<&str>) -> Result<Principal, HubError> {
    let key = presented.map(str::trim).filter(|k| !k.is_empty()).ok_or(HubError::Unauthenticated)?;
    if key.len() > 256 {
        return Err(HubError::Unauthenticated);
    }
    let hash = hash_key(key);
    let record = match hub.credential_cache.get(&hash) {
        Some(r) => r,
        None => {
            let r =
                std::sync::Arc::new(hub.credentials.credential_by_hash(&hash).await?.ok_or(HubError::Unauthenticated)?);
            hub.credential_cache.put(std::sync::Arc::clone(&r));
            r
        }
    };
    // judged on every use, cached or not: a rotated key's overlap ends on time
    if !record.is_active(hub.clock.now()) {
        return Err(HubError::Unauthenticated);
    }
    Ok(Principal { account: record.account.clone(), id: record.principal.clone(), credential_id: record.id.clone() })
}

/// Count one failed authentication of `client`; the error to answer with.
async fn count_failure(hub: &Hub, client: Option<IpAddr>) -> Result<HubError, HubError> {
    let limit = hub.settings.auth_failures_per_minute;
    let Some(client) = client.filter(|_| limit > 0) else { return Ok(HubError::Unauthenticated) };
    let now = hub.clock.now();
    let window_end = now + chrono::Duration::seconds(60 - i64::from(now.second()));
    let who = client_bucket(client);
    let key = format!("authfail/{}/{}", key_part(&who), now.timestamp().div_euclid(60));
    let failures = hub.messages.incr_counter(&key, window_end, now).await?;
    tracing::info!(client = %who, failures, "authentication failed");
    if failures <= u64::from(limit) {
        return Ok(HubError::Unauthenticated);
    }
    if failures == u64::from(limit) + 1 {
        tracing::warn!(client = %who, limit, "failed authentications over the limit; answering 429 until the minute ends");
    }
    Ok(HubError::RateLimited {
        message: format!("more than {limit} failed authentications per minute from this client"),
        retry_after_secs: u64::try_from((window_end - now).num_seconds().max(1)).unwrap_or(1),
    })
}

/// The unit a failure is counted against: an IPv4 address, or an IPv6 /64 (one subscriber's
/// allocation — counting single v6 addresses would let one client rotate through billions).
fn client_bucket(ip: IpAddr) -> String {
    match ip {
        IpAddr::V4(v4) => v4.to_string(),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => v4.to_string(),
            None => {
                let s = v6.segments();
                format!("{:x}:{:x}:{:x}:{:x}::/64", s[0], s[1], s[2], s[3])
            }
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn v6_clients_are_counted_per_64_and_mapped_v4_as_v4() {
        let a: IpAddr = "2001:db8:1:2:aaaa::1".parse().unwrap();
        let b: IpAddr = "2001:db8:1:2:bbbb::2".parse().unwrap();
        assert_eq!(client_bucket(a), client_bucket(b));
        assert_eq!(client_bucket("::ffff:192.0.2.7".parse().unwrap()), "192.0.2.7");
        assert_ne!(client_bucket("2001:db8:1:3::1".parse().unwrap()), client_bucket(a));
    }
}

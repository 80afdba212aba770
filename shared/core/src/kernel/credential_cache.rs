//! Verified credentials by key hash, kept in process for a moment so an agent's requests do not
//! each read the credential store (it was 8 % of a submit's CPU on the local Hub, docs/BENCHMARKS.md).
//!
//! * **Revocation.** A revoke or rotate through this Hub (`admin`) clears the cache at once. One
//!   made by another process — the `ma2h-hub admin` CLI beside a running server, the admin
//!   function beside warm Lambdas — takes effect when the entry ages out: within the TTL
//!   (`MA2H_CREDENTIAL_CACHE_MS`, default [`DEFAULT_TTL`]; 0 turns the cache off).
//! * **Expiry** is judged on every use against the cached record (`is_active(now)`), so a
//!   rotated key's overlap window ends on time.
//! * Only credentials that exist are cached: an unknown key always reaches the store (and the
//!   §8.6-style failure counter), so a guessed key gains nothing here.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::kernel::credentials::CredentialRecord;

/// How long another process's revoke may go unseen, by default (`MA2H_CREDENTIAL_CACHE_MS`).
pub const DEFAULT_TTL: Duration = Duration::from_secs(1);
/// Entries kept at most (stale ones are dropped first, then everything).
const CAP: usize = 4096;

pub struct CredentialCache {
    ttl: Duration,
    entries: Mutex<HashMap<String, (Arc<CredentialRecord>, Instant)>>,
}

impl Default for CredentialCache {
    fn default() -> Self {
        Self::new(DEFAULT_TTL)
    }
}

impl CredentialCache {
    /// A cache keeping entries for `ttl` (zero: nothing is kept).
    pub fn new(ttl: Duration) -> Self {
        Self { ttl, entries: Mutex::default() }
    }

    /// The record for `key_hash` if it was read from the store less than the TTL ago.
    pub fn get(&self, key_hash: &str) -> Option<Arc<CredentialRecord>> {
        let entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        entries.get(key_hash).filter(|(_, at)| at.elapsed() < self.ttl).map(|(r, _)| Arc::clone(r))
    }

    pub fn put(&self, record: Arc<CredentialRecord>) {
        if self.ttl.is_zero() {
            return;
        }
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if entries.len() >= CAP {
            let ttl = self.ttl;
            entries.retain(|_, (_, at)| at.elapsed() < ttl);
            if entries.len() >= CAP {
                entries.clear();
            }
        }
        entries.insert(record.key_hash.clone(), (record, Instant::now()));
    }

    /// Forget everything (a credential changed through this process).
    pub fn clear(&self) {
        self.entries.lock().unwrap_or_else(PoisonError::into_inner).clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernel::credentials::PrincipalId;

    fn record(hash: &str) -> Arc<CredentialRecord> {
        Arc::new(CredentialRecord {
            id: format!("cred_{hash}"),
            account: ma2h_protocol::ids::AccountId::parse("acme").unwrap(),
            principal: PrincipalId::Agent(ma2h_protocol::ids::AgentId::parse("bot").unwrap()),
            key_hash: hash.into(),
            label: None,
            created_at: chrono::Utc::now(),
            expires_at: None,
            revoked_at: None,
        })
    }

    #[test]
    fn an_entry_is_served_until_it_ages_out_or_the_cache_is_cleared() {
        let c = CredentialCache::default();
        assert!(c.get("h1").is_none());
        c.put(record("h1"));
        assert_eq!(c.get("h1").unwrap().id, "cred_h1");
        c.clear();
        assert!(c.get("h1").is_none());
        c.put(record("h1"));
        std::thread::sleep(DEFAULT_TTL + Duration::from_millis(50));
        assert!(c.get("h1").is_none(), "another process's revoke is seen within the TTL");
    }

    #[test]
    fn a_zero_ttl_keeps_nothing() {
        let c = CredentialCache::new(Duration::ZERO);
        c.put(record("h1"));
        assert!(c.get("h1").is_none());
    }

    #[test]
    fn the_cache_never_grows_past_its_cap() {
        let c = CredentialCache::default();
        for i in 0..CAP + 10 {
            c.put(record(&format!("h{i}")));
        }
        assert!(c.entries.lock().unwrap().len() <= CAP);
        assert!(c.get(&format!("h{}", CAP + 9)).is_some());
    }
}

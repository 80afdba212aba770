//! The audit ledger (issue 42, docs/design/audit.md): records ([`store::AuditRecord`]) kept per
//! account in [`SHARDS`] chains, sealed by signed checkpoints ([`seal`]), exported as JSON Lines
//! that `ma2h audit verify` checks ([`export`]).

pub mod browse;
pub mod export;
pub mod retention;
pub mod scope;
pub mod seal;
pub mod store;

use std::future::Future;

use ma2h_protocol::ids::AccountId;
use serde_json::{Map, Value};

use crate::Hub;
use store::AuditRecord;

pub use store::SHARDS;

/// Entries younger than this are not sealed yet: longer than any write takes between reading the
/// clock and committing (a Lambda function times out first), so no entry can land before a
/// checkpoint that has already passed its place.
pub const SETTLE: chrono::Duration = chrono::Duration::minutes(2);

/// What an event is, in the ledger's words.
#[derive(Debug, Clone, Default)]
pub struct Event {
    pub kind: &'static str,
    /// `agent:…`, `human:…`, `system:…` or `admin`.
    pub principal: String,
    pub target: Option<String>,
    /// SHA-256 (hex) of the JCS of the bodies concerned — never the bodies (§9.6).
    pub digest: Option<String>,
    pub detail: Map<String, Value>,
}

impl Event {
    pub fn new(kind: &'static str, principal: impl ToString) -> Self {
        Event { kind, principal: principal.to_string(), ..Event::default() }
    }

    pub fn target(mut self, target: impl ToString) -> Self {
        self.target = Some(target.to_string());
        self
    }

    /// The digest of `body` (its JCS), with any top-level `state` left out (§9.6: never `state`).
    pub fn digest_of(mut self, body: &Value) -> Self {
        // streamed: no copy of the body (a submit's envelope), no canonical buffer
        self.digest = Some(ma2h_protocol::jcs::canonical_sha256_omitting(body, &["state"]));
        self
    }

    pub fn detail(mut self, name: &str, value: impl Into<Value>) -> Self {
        self.detail.insert(name.to_owned(), value.into());
        self
    }
}

/// Run `f` — the store call that commits `events` — with their records pending for the write
/// that commits it ([`scope`]): an event that commits has its entries, one that does not has none.
pub async fn within<F: Future>(hub: &Hub, account: &AccountId, events: Vec<Event>, f: F) -> F::Output {
    if !hub.settings.audit.enabled {
        return f.await;
    }
    let records = events.into_iter().map(|e| record(hub, account, e)).collect();
    scope::with(records, f).await
}

/// How the ledger names something it must not spell out (a session id, a provider's subject):
/// the first 16 hex digits of its SHA-256.
pub fn short_digest(value: &str) -> String {
    ma2h_protocol::jcs::sha256_hex(value.as_bytes())[..16].to_owned()
}

/// Record `event` in a write of its own, for an event that is no other store write: a login
/// (the cookie it sets is not stored). The caller lets the event happen only once this returned.
pub async fn record_now(hub: &Hub, account: &AccountId, event: Event) -> Result<(), crate::HubError> {
    if !hub.settings.audit.enabled {
        return Ok(());
    }
    hub.audit.append_audit(&[record(hub, account, event)]).await?;
    Ok(())
}

/// A new record of `event` in `account`, stamped now, on a random shard.
pub fn record(hub: &Hub, account: &AccountId, event: Event) -> AuditRecord {
    let mut b = [0u8; 12];
    hub.random.fill(&mut b);
    let shard = u16::from_be_bytes([b[0], b[1]]) % hub.audit.audit_shards().max(1);
    // to the millisecond: the export's time and the sort key's, so every store reads back the same
    let at = ma2h_protocol::time::from_millis(hub.clock.now().timestamp_millis());
    let id = format!("aud_{:013}{}", at.timestamp_millis().max(0), hex::encode(&b[2..]));
    AuditRecord {
        id,
        account: account.clone(),
        shard,
        at,
        kind: event.kind.to_owned(),
        principal: event.principal,
        target: event.target,
        digest: event.digest,
        detail: event.detail,
    }
}

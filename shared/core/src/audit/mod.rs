//! The audit ledger (issue 42, docs/design/audit.md): records ([`store::AuditRecord`]) kept per
//! account in [`SHARDS`] chains, sealed by signed checkpoints ([`seal`]), exported as JSON Lines
//! that `ma2h audit verify` checks ([`export`]).

pub mod export;
pub mod seal;
pub mod store;

use ma2h_protocol::ids::AccountId;
use serde_json::{Map, Value};

use crate::Hub;
use store::AuditRecord;

/// Chains per account: an event goes to one at random, so no single partition takes an
/// account's whole ledger (DynamoDB: ~1,000 writes/s per partition).
pub const SHARDS: u16 = 16;

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

/// A new record of `event` in `account`, stamped now, on a random shard.
pub fn record(hub: &Hub, account: &AccountId, event: Event) -> AuditRecord {
    let mut b = [0u8; 12];
    hub.random.fill(&mut b);
    let shard = u16::from_be_bytes([b[0], b[1]]) % SHARDS;
    let at = hub.clock.now();
    let id = format!("aud_{:013}{}", at.timestamp_millis().max(0), hex_lower(&b[2..]));
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

fn hex_lower(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

//! # ma2h-store-dynamodb
//!
//! The Hub's store on one DynamoDB table (design and access patterns: `docs/dynamodb.md`; table
//! definition: `infra/dynamodb-table.json`, shared with SAM and the LocalStack init script).
//!
//! * Every state transition is a conditional write — the §7 compare-and-set — and writes that
//!   must land together (message + idempotency claim + open counter + tombstone) are one
//!   `TransactWriteItems`.
//! * Due work is read from sparse GSIs ordered by time (`due`, `push`, `retain`): never a Scan.
//! * Retention: the sweeper deletes messages past `retain_until` (found through `retain`),
//!   leaving the tombstone that answers 410; a TTL attribute is the backstop.
//! * Secrets are stored sealed by the caller (XChaCha20-Poly1305 under the master key), never in
//!   plaintext.

mod codec;
mod credentials;
mod insert;
mod listing;
mod mailbox;
mod messages;
pub mod provision;
mod sessions;
mod terminal;

use aws_sdk_dynamodb::Client;
use ma2h_core::ports::StoreError;

/// The DynamoDB adapter: a client and the table name.
#[derive(Debug, Clone)]
pub struct DynamoStore {
    client: Client,
    table: String,
    /// Index entries one listing page may read (`listing::MAX_SCANNED_PER_PAGE`).
    max_scanned: i32,
}

impl DynamoStore {
    pub fn new(client: Client, table: impl Into<String>) -> Self {
        Self { client, table: table.into(), max_scanned: listing::MAX_SCANNED_PER_PAGE }
    }

    /// Lower the entries one listing page may read (tests reach the limit with few messages).
    pub fn with_max_scanned(mut self, n: i32) -> Self {
        self.max_scanned = n.max(1);
        self
    }

    pub fn table(&self) -> &str {
        &self.table
    }

    pub fn client(&self) -> &Client {
        &self.client
    }
}

impl DynamoStore {
    /// A strongly consistent `GetItem`.
    pub(crate) async fn get(&self, k: codec::Item) -> Result<Option<codec::Item>, StoreError> {
        let out = self
            .client
            .get_item()
            .table_name(&self.table)
            .set_key(Some(k))
            .consistent_read(true)
            .send()
            .await
            .map_err(|e| unavailable("GetItem", e))?;
        Ok(out.item)
    }
}

/// Map an SDK error to the port's error (the cause is kept for the log, never for a client).
pub(crate) fn unavailable<E: std::fmt::Debug>(what: &str, e: E) -> StoreError {
    StoreError::Unavailable(format!("dynamodb {what}: {e:?}"))
}

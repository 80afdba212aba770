//! The `Hub`: the ports plus settings every use case runs against. Binaries build one with the
//! adapters they chose; tests build one over a fresh store.

use std::sync::Arc;

use ma2h_protocol::ids::{MessageId, ResolutionId};

use crate::keys::HubKeys;
use crate::ports::{ChangeFeed, Clock, CredentialStore, MessageStore, PushQueue, Random};
use crate::secrets::MasterKey;
use crate::settings::Settings;

#[derive(Clone)]
pub struct Hub {
    pub messages: Arc<dyn MessageStore>,
    pub credentials: Arc<dyn CredentialStore>,
    pub clock: Arc<dyn Clock>,
    pub random: Arc<dyn Random>,
    pub changes: Arc<dyn ChangeFeed>,
    pub settings: Arc<Settings>,
    pub master_key: MasterKey,
    /// Where committed push obligations are announced (§8.3).
    pub push_queue: Arc<dyn PushQueue>,
    /// The Hub's Ed25519 keys (§9.2).
    pub keys: Arc<HubKeys>,
}

impl Hub {
    fn random_u80(&self) -> u128 {
        let mut b = [0u8; 10];
        self.random.fill(&mut b);
        b.iter().fold(0u128, |acc, x| (acc << 8) | u128::from(*x))
    }

    fn now_ms(&self) -> u64 {
        u64::try_from(self.clock.now().timestamp_millis()).unwrap_or(0)
    }

    /// A new sortable, unguessable message id.
    pub fn new_message_id(&self) -> MessageId {
        MessageId::from_parts(self.now_ms(), self.random_u80())
    }

    pub fn new_resolution_id(&self) -> ResolutionId {
        ResolutionId::from_parts(self.now_ms(), self.random_u80())
    }

    pub fn poll_url(&self, id: &MessageId) -> String {
        format!("{}/v1/messages/{id}", self.settings.public_url)
    }

    pub fn review_url(&self, id: &MessageId) -> String {
        format!("{}/inbox/{id}", self.settings.public_url)
    }

    /// Read a message as clients may see it: past `retain_until` it is gone (§8.2 410) even if
    /// the store has not purged it yet (the sweeper and DynamoDB's TTL both run late).
    pub async fn lookup(
        &self,
        account: &ma2h_protocol::ids::AccountId,
        id: &MessageId,
    ) -> Result<crate::records::Lookup, crate::HubError> {
        use crate::records::Lookup;
        Ok(match self.messages.get_message(account, id).await? {
            Lookup::Found(rec) if rec.retain_until.is_some_and(|r| r <= self.clock.now()) => {
                Lookup::Gone { agent_id: rec.agent_id }
            }
            other => other,
        })
    }

    pub fn retention(&self) -> chrono::Duration {
        chrono::Duration::days(i64::from(self.settings.retention_days))
    }
}

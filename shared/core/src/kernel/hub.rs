//! The `Hub`: the ports plus settings every use case runs against. Binaries build one with the
//! adapters they chose; tests build one over a fresh store.

use std::sync::Arc;

use ma2h_protocol::ids::{DirectiveId, MessageId, ResolutionId, SessionId};
use ma2h_protocol::time::Timestamp;

use crate::kernel::changes::ChangeFeed;
use crate::kernel::clock::{Clock, OsRandom, Random, SystemClock};
use crate::kernel::credentials::CredentialStore;
use crate::kernel::keys::HubKeys;
use crate::kernel::secrets::MasterKey;
use crate::kernel::settings::Settings;
use crate::mailbox::store::MailboxStore;
use crate::messages::store::MessageStore;
use crate::push::queue::PushQueue;
use crate::sessions::store::SessionStore;

/// Cheap to clone (one reference count): axum clones the state for every extractor and layer of
/// every request, and a clone of the parts was 30 atomic operations (1.5 % of a submit's CPU).
/// Fields read through `Deref`; a test's `hub.clock = …` before sharing edits it in place.
#[derive(Clone)]
pub struct Hub(Arc<HubParts>);

impl std::ops::Deref for Hub {
    type Target = HubParts;
    fn deref(&self) -> &HubParts {
        &self.0
    }
}

impl std::ops::DerefMut for Hub {
    /// Copy-on-write: a hub already shared keeps its parts; this handle gets its own.
    fn deref_mut(&mut self) -> &mut HubParts {
        Arc::make_mut(&mut self.0)
    }
}

/// What a [`Hub`] holds: the ports, settings and caches.
#[derive(Clone)]
pub struct HubParts {
    pub messages: Arc<dyn MessageStore>,
    pub credentials: Arc<dyn CredentialStore>,
    /// The §8.7 agent mailboxes and §15 presence.
    pub mailbox: Arc<dyn MailboxStore>,
    /// §16 sessions and §16.4.1 stop records.
    pub sessions: Arc<dyn SessionStore>,
    /// The channel notification outbox (issue 20).
    pub notifications: Arc<dyn crate::channels::outbox::NotificationStore>,
    /// Claims, snoozes and triage events (issue 39).
    pub triage: Arc<dyn crate::messages::triage_store::TriageStore>,
    /// Standing grants (issue 40).
    pub grants: Arc<dyn crate::decisions::grant_store::GrantStore>,
    /// The audit ledger (issue 42).
    pub audit: Arc<dyn crate::audit::store::AuditStore>,
    pub clock: Arc<dyn Clock>,
    pub random: Arc<dyn Random>,
    pub changes: Arc<dyn ChangeFeed>,
    pub settings: Arc<Settings>,
    pub master_key: MasterKey,
    /// Where committed push obligations are announced (§8.3).
    pub push_queue: Arc<dyn PushQueue>,
    /// The Hub's Ed25519 keys (§9.2).
    pub keys: Arc<HubKeys>,
    /// Outbound HTTP for request-time replies (a Slack interaction's ephemeral answer), behind
    /// the §9.4 egress guard; `None` in a process that sends nothing.
    pub outbound: Option<Arc<dyn crate::push::queue::PushSender>>,
    /// When this process last wrote each mailbox's presence (writes are throttled, §15.1).
    pub(crate) presence_written: Arc<std::sync::Mutex<std::collections::HashMap<String, Timestamp>>>,
    /// Credentials recently read by key hash (cleared by every credential change made here).
    pub(crate) credential_cache: Arc<crate::kernel::credential_cache::CredentialCache>,
    /// Account policies (channels and routes) recently read, for the submit path.
    pub(crate) policy_cache: Arc<crate::inter_agent::policy::PolicyCache>,
}

impl Hub {
    /// The one constructor every binary and test uses: one store serving both store ports, the
    /// system clock and OS randomness ([`Self::with_clock`] swaps the clock for tests).
    pub fn new<S>(
        store: Arc<S>,
        settings: Settings,
        master_key: MasterKey,
        keys: HubKeys,
        changes: Arc<dyn ChangeFeed>,
        push_queue: Arc<dyn PushQueue>,
    ) -> Self
    where
        S: MessageStore
            + CredentialStore
            + MailboxStore
            + SessionStore
            + crate::channels::outbox::NotificationStore
            + crate::messages::triage_store::TriageStore
            + crate::decisions::grant_store::GrantStore
            + crate::audit::store::AuditStore
            + 'static,
    {
        let credential_cache =
            Arc::new(crate::kernel::credential_cache::CredentialCache::new(settings.credential_cache));
        Self(Arc::new(HubParts {
            messages: store.clone(),
            credentials: store.clone(),
            mailbox: store.clone(),
            notifications: store.clone(),
            triage: store.clone(),
            grants: store.clone(),
            audit: store.clone(),
            sessions: store,
            clock: Arc::new(SystemClock),
            random: Arc::new(OsRandom),
            changes,
            settings: Arc::new(settings),
            master_key,
            push_queue,
            keys: Arc::new(keys),
            outbound: None,
            presence_written: Arc::default(),
            credential_cache,
            policy_cache: Arc::default(),
        }))
    }

    /// The sender for request-time replies (see [`Self::outbound`]).
    pub fn with_outbound(mut self, sender: Arc<dyn crate::push::queue::PushSender>) -> Self {
        self.outbound = Some(sender);
        self
    }

    pub fn with_clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.clock = clock;
        self
    }

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

    pub fn new_directive_id(&self) -> DirectiveId {
        DirectiveId::from_parts(self.now_ms(), self.random_u80())
    }

    pub fn new_receipt_id(&self) -> ma2h_protocol::ids::ReceiptId {
        ma2h_protocol::ids::ReceiptId::from_parts(self.now_ms(), self.random_u80())
    }

    pub fn new_session_id(&self) -> SessionId {
        SessionId::from_parts(self.now_ms(), self.random_u80())
    }

    /// A fresh §9.2 nonce, `jti_` + 128 random bits (every push and every mailbox delivery).
    pub fn new_jti(&self) -> String {
        use base64::Engine as _;
        let mut b = [0u8; 16];
        self.random.fill(&mut b);
        format!("jti_{}", base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(b))
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
    ) -> Result<crate::messages::records::Lookup, crate::HubError> {
        use crate::messages::records::Lookup;
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

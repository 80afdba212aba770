//! # ma2h-core
//!
//! The Hub's use cases, written once over port traits. The local server and every Lambda call
//! these same functions; only the adapters behind the ports differ.
//!
//! One module per feature, each holding its model, its port and its use cases, over a shared
//! [`kernel`] (the [`Hub`] value, auth, clock, errors, secrets, settings):
//!
//! | module | what |
//! |---|---|
//! | [`messages`] | §8.1–§8.4 submit, get, cancel, resolve, the operator listing, the expiry sweep |
//! | [`push`] | §8.3 signed push of a Response, its queue and its worker |
//! | [`mailbox`] | §8.7 the agent mailbox: directives, addressed messages, drain, acks, presence |
//! | [`sessions`] | §16 session leases and the §16.4.1 operator stop |
//! | [`inter_agent`] | §13.5 the account's inter-agent policy and its rules |
//! | [`channels`] | Slack, email and webhook notifications to humans, and their outbox |
//! | [`admin`] | credentials, callback bindings, signing keys and secrets |
//! | [`audit`] | the tamper-evident audit ledger: records, signed checkpoints, exports (issue 42) |
//! | [`sso`] | single sign-on for the inbox: OpenID Connect login, identity → operator mapping |
//!
//! Imports run down the table's dependencies, never in a circle of more than two files
//! (`scripts/import_graph.py shared/core/src` checks it; `make lint` runs it).

pub mod admin;
pub mod audit;
pub mod channels;
pub mod decisions;
pub mod inter_agent;
pub mod kernel;
pub mod mailbox;
pub mod messages;
pub mod passkeys;
pub mod push;
pub mod sessions;
pub mod sso;

pub use kernel::error::HubError;
pub use kernel::hub::Hub;
pub use kernel::settings;

/// Every port trait in one place, for the adapter crates that implement them. Code inside this
/// crate names each port where its feature keeps it.
pub mod ports {
    pub use crate::channels::mailer::{Mail, MailError, MailSender};
    pub use crate::kernel::changes::{ChangeFeed, Subscription};
    pub use crate::kernel::clock::{Clock, ManualClock, OsRandom, Random, SystemClock};
    pub use crate::kernel::credentials::{AgentMaterial, CredentialStore};
    pub use crate::kernel::error::StoreError;
    pub use crate::mailbox::store::MailboxStore;
    pub use crate::messages::store::{Admission, MessageStore};
    pub use crate::push::queue::{
        FetchReply, FetchRequest, MAX_FETCH_BYTES, PushOutcome, PushQueue, PushRequest, PushSender, QueueError,
        WakeWorker,
    };
    pub use crate::sessions::store::SessionStore;
}

//! # ma2h-core
//!
//! The Hub's use cases — submit, get (with long-poll), cancel, resolve, sweep, the operator
//! listing and credential administration — written once over port traits. The local server and
//! every Lambda call these same functions; only the adapters behind the ports differ.

pub mod auth;
pub mod changes;
pub mod channels;
pub mod credential_cache;
pub mod display;
pub mod error;
pub mod hub;
pub mod keys;
pub mod listing;
pub mod mailbox;
pub mod metrics;
pub mod notifications;
pub mod policy;
pub mod ports;
pub mod records;
pub mod secrets;
pub mod session;
pub mod settings;
pub mod telemetry;
mod usecases;

pub use error::HubError;
pub use hub::Hub;
pub use usecases::{
    addressed, admin, cancel, directives, drain, email, get, inbox, inter_agent, list, notify, presence, push, receipt,
    resolve, sessions, slack, stream, submit, sweep,
};

/// The use-case modules, for `use ma2h_core::usecases_prelude::*`.
pub mod usecases_prelude {
    pub use crate::usecases::{cancel, channels, get, resolve, submit};
}

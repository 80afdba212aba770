//! Messages (§8.1–§8.4, §7): what the store keeps of one, submit, get with long-poll, cancel,
//! resolve, the lifecycle rules they share, the operator listing and the expiry sweep.

pub mod cancel;
pub mod get;
pub(crate) mod lifecycle;
pub mod list;
pub mod listing;
pub mod pulse;
pub mod receipt;
pub mod records;
pub mod resolve;
pub(crate) mod resolvers;
pub mod search;
pub mod store;
pub mod submit;
pub mod sweep;
pub mod triage;
pub mod triage_store;

//! The agent mailbox (§8.7): operator directives, addressed messages between agents, session
//! responses and bounce receipts; the drain, its stream, acks (§14) and presence (§15).

pub mod addressed;
pub mod directives;
pub mod drain;
pub mod inbox;
pub mod model;
pub mod presence;
pub mod store;
pub mod stream;
pub(crate) mod undeliverable;

//! `ma2h-conformance`: a black-box conformance runner for MA2H Hubs (spec v0.5).
//!
//! It talks to a live Hub over HTTP only — base URL plus credentials — and reports pass/fail per
//! spec obligation (§7, §8.0–§8.8, §9.1, §10, the §8.3/§9.2 push obligations when it can run its
//! own callback receiver, and the human→agent leg: §8.7 mailbox, §9.7 directive signatures, §13
//! directives, §14 acks, §15 presence) and §16 sessions (with the §9.8 response entry and the
//! §16.4.1 hard stop). The only project code it uses is `ma2h-protocol`'s JSON Schemas (`schema`)
//! and §9.2/§9.7/§9.8 verifiers (`signature`, `inbound`, `entries`, `jcs`) — never the Hub's
//! internals.

pub mod checks;
pub mod client;
pub mod config;
pub mod receiver;
pub mod report;
pub mod vectors;

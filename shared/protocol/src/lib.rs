//! # ma2h-protocol
//!
//! The pure protocol layer of the MA2H Hub (spec v0.5): identifiers and enums parsed at the edge,
//! envelope parsing and validation (JSON Schema + the cross-field rules the schema cannot express),
//! the §7 lifecycle rules, the §6 Response, RFC 8785 canonical JSON and the §9.2/§9.7/§9.8 signatures.
//!
//! Nothing here performs I/O: the use-case crate feeds it bytes, times and random ids.

pub mod egress;
pub mod entries;
pub mod envelope;
pub mod error;
pub mod ids;
pub mod inbound;
pub mod inter_agent;
pub mod jcs;
pub mod lifecycle;
pub mod resolve;
pub mod response;
pub mod rules;
pub mod schema;
pub mod signature;
pub mod time;
pub mod verbatim;
pub mod version;
pub mod wire;

pub use error::ProtocolError;

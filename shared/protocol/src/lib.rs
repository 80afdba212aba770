//! # ma2h-protocol
//!
//! The pure protocol layer of the MA2H Hub (spec v0.5): identifiers and enums parsed at the edge,
//! envelope parsing and validation (JSON Schema + the cross-field rules the schema cannot express),
//! the §7 lifecycle rules, the §6 Response, RFC 8785 canonical JSON and the §9.2/§9.7/§9.8 signatures.
//!
//! Nothing here performs I/O: the use-case crate feeds it bytes, times and random ids.
//!
//! ## Spec citations
//!
//! The protocol is [MA2H v0.5](https://github.com/autnmy/ma2h-protocol/blob/main/spec/v0.5.md)
//! (`spec/v0.5.md` in `autnmy/ma2h-protocol`; its JSON Schemas are in `schema/v0.5/`). A `§N.M`
//! anywhere in this workspace — code, tests, docs — names the heading numbered `N.M` in that file:
//! `§8.1` is "8.1 Submit — `POST /v1/messages`", `§9.2` is "9.2 Response integrity". `§8.1 (v0.5)`
//! marks a rule v0.5 added to an older section; `RFC 8785 §3.2.3` is a section of that RFC. The
//! table of top-level sections is in `docs/ARCHITECTURE.md` ("Spec citations").

pub mod audit;
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
pub mod standard_webhooks;
pub mod time;
pub mod verbatim;
pub mod version;
pub mod wire;

pub use error::ProtocolError;

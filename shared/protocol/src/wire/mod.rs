//! The bodies the Hub sends and the few it receives besides the envelope, as typed resources
//! shared by the Hub (which serializes them) and its clients (which deserialize them), so one
//! field lives in one place.
//!
//! Wire bytes are part of the contract: fields are declared in the order the Hub writes them
//! (`serde_json` keeps insertion order in this workspace), an optional member is either omitted
//! (`skip_serializing_if`) or written as `null` exactly where the published bodies do, and Hub
//! timestamps are written by [`crate::time::format`] (`…T18:04:11.000Z`).
//!
//! Three kinds of body stay `serde_json::Value` on purpose, each where it is embedded:
//! - the stored §6 Response and the stored mailbox payloads are served **as stored** (signed,
//!   and written by earlier Hub versions too), so they are never re-serialized — [`Response`] is
//!   how they are built and read, not how they are replayed;
//! - an addressed `message` entry and the GET body keep the **submitter's** member order (§10
//!   extensions included), so they are merged maps, not structs ([`MessageTracks`]).

mod capability;
mod error;
mod mailbox;
mod messages;
mod operator;
mod response;
mod sessions;

pub use capability::*;
pub use error::*;
pub use mailbox::*;
pub use messages::*;
pub use operator::*;
pub use response::*;
pub use sessions::*;

use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// A member that may be present as `null` (`Some(Value::Null)`) or absent (`None`): serde's
/// `Option` alone reads both as `None`. Use with `#[serde(default, deserialize_with = …)]`.
pub(crate) fn present<'de, D: Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

/// `skip_serializing_if` for members written only when true.
pub(crate) fn is_false(b: &bool) -> bool {
    !*b
}

#[cfg(test)]
mod tests;

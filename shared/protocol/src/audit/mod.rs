//! The audit ledger's export format (issue 42): entries in per-shard hash chains, Hub-signed
//! checkpoints over the chains' heads, and an export seal — JSON Lines, one [`Line`] each.
//! Pure: the Hub writes these, `ma2h audit verify` checks them ([`verify`]). The design and what
//! a verified file proves: docs/design/audit.md.
//!
//! * An entry's `hash` is SHA-256(`prev` ‖ JCS(the entry without `prev` and `hash`)); the first
//!   entry of a shard (`seq` 0) has 32 zero bytes as `prev`. Hashes are lowercase hex.
//! * A checkpoint (or the export seal) is signed with the Hub's Ed25519 key over the JCS of
//!   everything but its `signature` (base64url, the §9.2 `v1` encoding); its own hash — what the
//!   next one names as `prev` — is SHA-256 of the JCS of the whole signed line.

mod chain;
mod verify;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use sha2::{Digest as _, Sha256};

use crate::jcs;
use crate::signature::{SigningKey, VerifyingKey, sign_canonical, verify_canonical};

pub use chain::Chainer;
pub use verify::{Failure, Report, verify};

/// `prev` of a shard's first entry.
pub const GENESIS: [u8; 32] = [0; 32];

/// One recorded event, as it is hashed (without its chain fields). (Unknown members are refused
/// per line by the verifier: `serde` cannot deny them through `flatten`.)
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub account: String,
    pub shard: u16,
    /// Position in its shard's chain: 0, 1, 2, …
    pub seq: u64,
    pub id: String,
    /// RFC 3339, the Hub clock (§9.5).
    pub at: String,
    pub kind: String,
    /// Who acted: `agent:…`, `human:…`, `system:…`, `admin`.
    pub principal: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target: Option<String>,
    /// Lowercase-hex SHA-256 of the JCS of the bodies the event concerns (never the bodies).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub digest: Option<String>,
    #[serde(default, skip_serializing_if = "Map::is_empty")]
    pub detail: Map<String, Value>,
}

impl Entry {
    /// SHA-256(`prev` ‖ JCS(self)).
    pub fn chain_hash(&self, prev: &[u8; 32]) -> [u8; 32] {
        let body = serde_json::to_value(self).unwrap_or(Value::Null);
        let mut h = Sha256::new();
        h.update(prev);
        h.update(jcs::canonicalize(&body));
        h.finalize().into()
    }

    /// This entry as an export line, chained onto `prev`.
    pub fn chained(self, prev: &[u8; 32]) -> ChainedEntry {
        let hash = self.chain_hash(prev);
        ChainedEntry { entry: self, prev: hex::encode(prev), hash: hex::encode(hash) }
    }
}

/// An entry with its chain fields, as exported.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChainedEntry {
    #[serde(flatten)]
    pub entry: Entry,
    pub prev: String,
    pub hash: String,
}

/// A shard's head as a checkpoint signs it: `count` entries so far, the last one's hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ShardHead {
    pub shard: u16,
    pub count: u64,
    pub head: String,
}

/// What a checkpoint or an export seal signs.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checkpoint {
    pub account: String,
    /// Checkpoints: 0, 1, 2, …; an export seal repeats the last checkpoint's (or 0).
    pub seq: u64,
    pub at: String,
    /// The previous checkpoint's hash (zeros for the first).
    pub prev: String,
    /// Every shard that has entries, by shard number.
    pub shards: Vec<ShardHead>,
    /// The signing key's id (§8.0 `signing_keys[].kid`), informative: verification tries every key.
    pub key_id: String,
}

/// A signed checkpoint or export seal.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SignedCheckpoint {
    #[serde(flatten)]
    pub body: Checkpoint,
    pub signature: String,
}

/// One line of an export.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Line {
    Entry(ChainedEntry),
    Checkpoint(SignedCheckpoint),
    /// The last line: signed at export time over the file's final heads.
    Export(SignedCheckpoint),
}

/// The members each kind of line may have (anything else is refused: it would be unsigned).
const ENTRY_KEYS: &[&str] =
    &["type", "account", "shard", "seq", "id", "at", "kind", "principal", "target", "digest", "detail", "prev", "hash"];
const CHECKPOINT_KEYS: &[&str] = &["type", "account", "seq", "at", "prev", "shards", "key_id", "signature"];

impl Line {
    /// Parse one line, refusing members the line's kind does not have.
    pub fn parse(text: &str) -> Result<Self, String> {
        let value: Value = serde_json::from_str(text).map_err(|e| format!("not JSON: {e}"))?;
        let allowed = match value.get("type").and_then(Value::as_str) {
            Some("entry") => ENTRY_KEYS,
            Some("checkpoint" | "export") => CHECKPOINT_KEYS,
            _ => return Err("`type` must be entry, checkpoint or export".into()),
        };
        if let Some(extra) = value.as_object().and_then(|o| o.keys().find(|k| !allowed.contains(&k.as_str()))) {
            return Err(format!("unexpected member `{extra}`"));
        }
        serde_json::from_value(value).map_err(|e| format!("malformed: {e}"))
    }

    /// The line as written in an export (compact JSON, no newline).
    pub fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_default()
    }
}

/// The bytes a checkpoint (`export: false`) or export seal signs: the JCS of its body with its
/// `type`, so one can never stand for the other.
fn signing_bytes(body: &Checkpoint, export: bool) -> Vec<u8> {
    let mut v = serde_json::to_value(body).unwrap_or(Value::Null);
    v["type"] = Value::String(if export { "export" } else { "checkpoint" }.into());
    jcs::canonicalize(&v)
}

/// Sign a checkpoint (`export: false`) or an export seal with the Hub's key.
pub fn sign(body: Checkpoint, export: bool, key: &SigningKey) -> SignedCheckpoint {
    let signature = sign_canonical(&signing_bytes(&body, export), key);
    SignedCheckpoint { body, signature }
}

/// Whether one of `keys` signed it.
pub fn signature_ok(cp: &SignedCheckpoint, export: bool, keys: &[VerifyingKey]) -> bool {
    verify_canonical(&signing_bytes(&cp.body, export), &cp.signature, keys).is_ok()
}

/// A checkpoint's hash, as the next one names it in `prev`.
pub fn checkpoint_hash(cp: &SignedCheckpoint) -> [u8; 32] {
    let line = Line::Checkpoint(cp.clone());
    Sha256::digest(jcs::canonicalize(&serde_json::to_value(&line).unwrap_or(Value::Null))).into()
}

/// A 32-byte hash from its hex form.
pub fn parse_hash(hex_str: &str) -> Option<[u8; 32]> {
    let mut out = [0u8; 32];
    (hex_str.len() == 64 && hex_str.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f')))
        .then(|| hex::decode_to_slice(hex_str, &mut out).ok())
        .flatten()
        .map(|()| out)
}

#[cfg(test)]
mod tests;

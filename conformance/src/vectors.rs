//! The project's own conformance vectors (`conformance/vectors/*.json`): one envelope per spec
//! rule, with the expected schema verdict and the expected live status/code (§12 class 1, and
//! the same envelopes driven through the live submit path).
//!
//! File format: `{ "id", "rule", "section", "envelope", "expect": { "schema": "valid"|"invalid",
//! "status": 202|400|403|422…, "code"?: "<§8.5 code>" } }`. In `envelope`, `agent.id` may be the
//! placeholder `$AGENT` (the configured agent) or `$OTHER_AGENT` (the second agent), and an
//! `idempotency_key` is suffixed per run so vectors never replay each other (§8.1).

use std::path::{Path, PathBuf};

use anyhow::{Context, bail};
use serde_json::Value;

/// Placeholder for the configured agent id.
pub const AGENT: &str = "$AGENT";
/// Placeholder for the second agent's id.
pub const OTHER_AGENT: &str = "$OTHER_AGENT";

/// One vector.
#[derive(Debug, Clone)]
pub struct Vector {
    pub file: PathBuf,
    pub id: String,
    pub rule: String,
    pub section: String,
    pub envelope: Value,
    /// `expect.schema == "valid"`.
    pub schema_valid: bool,
    pub status: u16,
    pub code: Option<String>,
}

impl Vector {
    /// The envelope with placeholders filled in and the idempotency key made unique by `nonce`.
    pub fn instantiate(&self, agent_id: &str, other_agent_id: &str, nonce: &str) -> Value {
        let mut e = self.envelope.clone();
        if let Some(id) = e.pointer_mut("/agent/id") {
            match id.as_str() {
                Some(AGENT) => *id = Value::String(agent_id.to_owned()),
                Some(OTHER_AGENT) => *id = Value::String(other_agent_id.to_owned()),
                _ => {}
            }
        }
        if let Some(Value::String(k)) = e.get_mut("idempotency_key") {
            k.push('-');
            k.push_str(nonce);
        }
        e
    }
}

/// Load every `*.json` under `dir`, sorted by file name.
pub fn load_dir(dir: &Path) -> anyhow::Result<Vec<Vector>> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("reading vectors from {}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    files.sort();
    files.into_iter().map(|f| load(&f)).collect()
}

fn load(file: &Path) -> anyhow::Result<Vector> {
    let text = std::fs::read_to_string(file).with_context(|| format!("reading {}", file.display()))?;
    let doc: Value = serde_json::from_str(&text).with_context(|| format!("parsing {}", file.display()))?;
    let s = |p: &str| doc.pointer(p).and_then(Value::as_str).map(str::to_owned);
    let need = |p: &str| s(p).with_context(|| format!("{}: missing string {p}", file.display()));
    let schema_valid = match need("/expect/schema")?.as_str() {
        "valid" => true,
        "invalid" => false,
        other => bail!("{}: expect.schema must be valid|invalid, not {other}", file.display()),
    };
    let status = doc
        .pointer("/expect/status")
        .and_then(Value::as_u64)
        .and_then(|n| u16::try_from(n).ok())
        .with_context(|| format!("{}: missing expect.status", file.display()))?;
    let envelope = doc.get("envelope").filter(|e| e.is_object()).cloned();
    Ok(Vector {
        file: file.to_owned(),
        id: need("/id")?,
        rule: need("/rule")?,
        section: need("/section")?,
        envelope: envelope.with_context(|| format!("{}: missing envelope object", file.display()))?,
        schema_valid,
        status,
        code: s("/expect/code"),
    })
}

//! `ma2h audit verify FILE` (issue 42): check an audit ledger export — every entry's hash and
//! link, every checkpoint's Hub signature and heads, the export seal — and name the first line
//! that fails (docs/design/audit.md §3). Exit 0: it verifies; 5: it does not.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use ma2h_client::verify;
use ma2h_client::{Client, Config};
use ma2h_protocol::audit;

use crate::exit::{self, usage};

#[derive(Subcommand, Debug)]
pub enum AuditCommand {
    /// Verify an export (`ma2h-hub admin audit export`, `GET /v1/operator/audit`): exit 0 when every
    /// link and signature holds, 5 with the first bad line named.
    Verify(VerifyArgs),
}

#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// The JSON Lines file (`-` for stdin).
    pub file: PathBuf,
    /// The Hub's Ed25519 public key, base64url (repeatable: old and new during a rotation).
    #[arg(long = "ed25519-key")]
    pub ed25519_keys: Vec<String>,
    /// Trust the keys the Hub at MA2H_HUB_URL publishes in /.well-known/ma2h `signing_keys`.
    #[arg(long)]
    pub discover_keys: bool,
}

pub async fn run(cmd: &AuditCommand, config: &Config, json: bool) -> Result<u8> {
    let AuditCommand::Verify(a) = cmd;
    let mut keys = Vec::new();
    for k in &a.ed25519_keys {
        keys.push(verify::ed25519_key(k).ok_or_else(|| usage(format!("--ed25519-key `{k}` is not a key")))?);
    }
    if a.discover_keys {
        let hub = config.hub_url().map_err(|e| usage(e.to_string()))?;
        let doc = Client::new(hub, "")?.discover().await.map_err(exit::client)?;
        keys.extend(verify::keys_from_capability(&doc));
    }
    if keys.is_empty() {
        return Err(usage("no Hub key to check signatures with: pass --ed25519-key or --discover-keys"));
    }
    let text = if a.file.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin()).context("reading stdin")?
    } else {
        std::fs::read_to_string(&a.file).with_context(|| format!("reading {}", a.file.display()))?
    };
    match audit::verify(text.lines(), &keys) {
        Ok(r) => {
            if json {
                let v = serde_json::json!({"verified": true, "account": r.account, "entries": r.entries,
                    "checkpoints": r.checkpoints, "shards": r.shards, "first_at": r.first_at, "last_at": r.last_at});
                println!("{v}");
            } else {
                println!(
                    "verified: account {}, {} entries in {} shard chains, {} checkpoints, {} … {}",
                    r.account,
                    r.entries,
                    r.shards,
                    r.checkpoints,
                    r.first_at.as_deref().unwrap_or("-"),
                    r.last_at.as_deref().unwrap_or("-")
                );
            }
            Ok(exit::OK)
        }
        Err(f) => {
            if json {
                let v = serde_json::json!({"verified": false, "line": f.line, "entry": f.entry, "reason": f.reason});
                println!("{v}");
            }
            eprintln!("not verified: {f}");
            Ok(exit::REJECTED)
        }
    }
}

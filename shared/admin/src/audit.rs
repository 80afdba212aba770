//! `ma2h-hub admin audit …` / `ma2h-admin-aws audit …` (issue 42): export an account's audit
//! ledger as JSON Lines (for `ma2h audit verify`), seal settled entries under a checkpoint now,
//! and prune past the ledger's retention now (both what the sweeper does on its own).

use std::io::Write as _;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use ma2h_core::Hub;
use ma2h_core::audit::seal::{Sealed, seal_account};
use ma2h_protocol::ids::AccountId;
use serde_json::{Value, json};

#[derive(Args)]
pub struct AuditArgs {
    #[command(subcommand)]
    pub command: AuditCommand,
    /// Accepted for symmetry with the other admin commands: `seal` always prints JSON, `export`
    /// JSON Lines.
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(Subcommand)]
pub enum AuditCommand {
    /// Write the account's ledger as JSON Lines (entries, checkpoints, a seal signed now).
    Export {
        #[arg(long)]
        account: String,
        /// Start at the last checkpoint made at or before this time (RFC 3339).
        #[arg(long)]
        since: Option<String>,
        /// Stop at this time (RFC 3339; default now).
        #[arg(long)]
        until: Option<String>,
        /// Write here instead of stdout.
        #[arg(long)]
        output: Option<PathBuf>,
    },
    /// Checkpoint the settled entries of one account (or of every account) now. Prints JSON.
    Seal {
        #[arg(long)]
        account: Option<String>,
    },
    /// Prune what the last checkpoint older than MA2H_AUDIT_RETENTION_DAYS covers, for one
    /// account (or every account) now — what the sweeper does once a day. Prints JSON.
    Prune {
        #[arg(long)]
        account: Option<String>,
    },
}

fn account_id(s: &str) -> Result<AccountId> {
    AccountId::parse(s).ok_or_else(|| anyhow::anyhow!("--account: not an account id"))
}

/// `--account`, or every account with a ledger.
async fn accounts(hub: &Hub, account: Option<String>) -> Result<Vec<AccountId>> {
    Ok(match account {
        Some(a) => vec![account_id(&a)?],
        None => hub.audit.audit_accounts().await?,
    })
}

fn when(flag: &str, v: Option<&str>) -> Result<Option<ma2h_protocol::time::Timestamp>> {
    v.map(|s| ma2h_protocol::time::parse(s).ok_or_else(|| anyhow::anyhow!("{flag}: not an RFC 3339 time"))).transpose()
}

fn sealed_json(account: &AccountId, s: Sealed) -> Value {
    let (outcome, seq, entries) = match s {
        Sealed::Checkpoint { seq, entries } => ("checkpoint", Some(seq), entries),
        Sealed::NothingNew => ("nothing_new", None, 0),
        Sealed::Lost => ("made_by_another_sealer", None, 0),
        Sealed::NoKey => ("no_signing_key", None, 0),
    };
    json!({"account": account.as_str(), "outcome": outcome, "seq": seq, "entries": entries})
}

/// Run one command; `export` writes its lines itself and returns `None`.
pub async fn execute(hub: &Hub, cmd: AuditCommand) -> Result<Option<Value>> {
    match cmd {
        AuditCommand::Export { account, since, until, output } => {
            let account = account_id(&account)?;
            let (since, until) = (when("--since", since.as_deref())?, when("--until", until.as_deref())?);
            let lines = ma2h_core::audit::export::export(hub, &account, since, until).await?;
            let mut text = lines.join("\n");
            text.push('\n');
            match output {
                Some(path) => std::fs::write(&path, text).with_context(|| format!("writing {}", path.display()))?,
                None => std::io::stdout().write_all(text.as_bytes())?,
            }
            Ok(None)
        }
        AuditCommand::Seal { account } => {
            let mut out = Vec::new();
            for a in accounts(hub, account).await? {
                let s = seal_account(hub, &a).await?;
                out.push(sealed_json(&a, s));
            }
            Ok(Some(json!({ "sealed": out })))
        }
        AuditCommand::Prune { account } => {
            let mut out = Vec::new();
            for a in accounts(hub, account).await? {
                let deleted = ma2h_core::audit::retention::prune(hub, &a).await?;
                out.push(json!({"account": a.as_str(), "entries_pruned": deleted}));
            }
            Ok(Some(json!({ "pruned": out, "retention_days": hub.settings.audit.retention_days })))
        }
    }
}

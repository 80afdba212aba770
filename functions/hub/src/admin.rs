//! `ma2h-hub admin …`: non-interactive credential administration against the Hub's store.
//! Every command prints text, or JSON with `--json`.

use anyhow::Result;
use clap::{Args, Subcommand};
use ma2h_core::admin;
use ma2h_core::settings::Settings;
use serde_json::json;

#[derive(Subcommand)]
pub enum AdminCommand {
    /// Create an agent credential for an `agent.id` (prints the API key and signing secret once).
    CreateAgent {
        #[arg(long)]
        agent: String,
        #[command(flatten)]
        common: Common,
    },
    /// Create an operator credential for `human:<id>` (prints the API key once).
    CreateOperator {
        #[arg(long)]
        human: String,
        #[command(flatten)]
        common: Common,
    },
    /// List credentials (never keys or secrets).
    List {
        #[arg(long)]
        json: bool,
    },
    /// Revoke a credential at once.
    Revoke {
        credential_id: String,
        #[arg(long)]
        json: bool,
    },
    /// Issue a new key for the same principal; the old key keeps working for the overlap.
    Rotate {
        credential_id: String,
        /// Overlap in hours during which the old key still works.
        #[arg(long, default_value_t = 24)]
        overlap_hours: u32,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args)]
pub struct Common {
    /// The account the principal belongs to.
    #[arg(long, default_value = "default")]
    account: String,
    /// A free-form label shown by `list`.
    #[arg(long)]
    label: Option<String>,
    #[arg(long)]
    json: bool,
}

pub async fn run(settings: Settings, cmd: AdminCommand) -> Result<()> {
    let hub = crate::app::build_hub(settings)?;
    let (value, json) = match cmd {
        AdminCommand::CreateAgent { agent, common } => {
            let c = admin::create_agent(&hub, &common.account, &agent, common.label).await?;
            (serde_json::to_value(c)?, common.json)
        }
        AdminCommand::CreateOperator { human, common } => {
            let c = admin::create_operator(&hub, &common.account, &human, common.label).await?;
            (serde_json::to_value(c)?, common.json)
        }
        AdminCommand::List { json } => (json!({ "credentials": admin::list(&hub).await? }), json),
        AdminCommand::Revoke { credential_id, json } => {
            (serde_json::to_value(admin::revoke(&hub, &credential_id).await?)?, json)
        }
        AdminCommand::Rotate { credential_id, overlap_hours, json } => {
            let overlap = chrono::Duration::hours(i64::from(overlap_hours));
            (serde_json::to_value(admin::rotate(&hub, &credential_id, overlap).await?)?, json)
        }
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        print_text(&value);
    }
    Ok(())
}

fn print_text(value: &serde_json::Value) {
    if let Some(list) = value.get("credentials").and_then(|v| v.as_array()) {
        for c in list {
            println!(
                "{}  {:<30} account={} active={}",
                c["credential_id"].as_str().unwrap_or(""),
                c["principal"].as_str().unwrap_or(""),
                c["account"].as_str().unwrap_or(""),
                c["active"]
            );
        }
        return;
    }
    if let Some(obj) = value.as_object() {
        for (k, v) in obj {
            println!("{k}: {}", v.as_str().map_or_else(|| v.to_string(), str::to_owned));
        }
    }
}

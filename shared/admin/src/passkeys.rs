//! `ma2h-hub admin passkeys …` (issue 41): an operator's passkeys — list them, remove one (it
//! logs in and confirms answers no more, at once). Passkeys are added by the operator from the
//! inbox's Devices page (a browser ceremony); the admin only sees and removes. Always prints JSON.

use anyhow::Result;
use clap::{Args, Subcommand};
use ma2h_core::Hub;
use ma2h_core::passkeys::{self, Passkey};
use ma2h_protocol::ids::{AccountId, HumanId};
use serde_json::{Value, json};

#[derive(Args)]
pub struct PasskeysArgs {
    #[command(subcommand)]
    pub command: PasskeysCommand,
    /// Accepted for symmetry with the other admin commands: the output is always JSON.
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(Subcommand)]
pub enum PasskeysCommand {
    /// An operator's passkeys: id, name, when added and last used.
    List {
        #[arg(long)]
        account: String,
        /// The operator id (`alice` or `human:alice`).
        #[arg(long)]
        human: String,
    },
    /// Remove one of an operator's passkeys.
    Remove {
        #[arg(long)]
        account: String,
        #[arg(long)]
        human: String,
        /// The passkey's id, as `list` shows it.
        #[arg(long)]
        id: String,
    },
}

fn who(account: &str, human: &str) -> Result<(AccountId, HumanId)> {
    let account = AccountId::parse(account).ok_or_else(|| anyhow::anyhow!("--account: not an account id"))?;
    let human = human.strip_prefix("human:").unwrap_or(human);
    let human = HumanId::parse(human).ok_or_else(|| anyhow::anyhow!("--human: not an operator id"))?;
    Ok((account, human))
}

fn listing(keys: &[Passkey]) -> Value {
    let one = |p: &Passkey| {
        json!({
            "id": p.id,
            "name": p.name,
            "created_at": ma2h_protocol::time::format(p.created_at),
            "last_used_at": p.last_used_at.map(ma2h_protocol::time::format),
        })
    };
    json!({ "passkeys": keys.iter().map(one).collect::<Vec<_>>() })
}

pub async fn execute(hub: &Hub, cmd: PasskeysCommand) -> Result<Value> {
    Ok(match cmd {
        PasskeysCommand::List { account, human } => {
            let (account, human) = who(&account, &human)?;
            listing(&passkeys::of(hub, &account, &human).await?)
        }
        PasskeysCommand::Remove { account, human, id } => {
            let (account, human) = who(&account, &human)?;
            passkeys::remove_of(hub, &account, &human, &id).await?;
            listing(&passkeys::of(hub, &account, &human).await?)
        }
    })
}

//! `ma2h-hub admin approvals …` (issue 40): an account's approval policies — how many distinct
//! approvers an ask matching a policy needs, and who may never approve it (docs/decisions.md).
//! Always prints the account's policies as JSON.

use anyhow::Result;
use clap::{Args, Subcommand};
use ma2h_core::Hub;
use ma2h_core::decisions::manage::{self, PolicySpec};
use ma2h_core::decisions::{delegation, grants};
use ma2h_protocol::ids::{AccountId, HumanId};
use serde_json::Value;

#[derive(Args)]
pub struct ApprovalsArgs {
    #[command(subcommand)]
    pub command: ApprovalsCommand,
    /// Accepted for symmetry with the other admin commands: the output is always JSON.
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(Subcommand)]
pub enum ApprovalsCommand {
    /// Show the account's approval policies (in the order they are tried).
    Show {
        #[arg(long)]
        account: String,
    },
    /// Add a policy, or replace the one with this id in place.
    Add {
        #[arg(long)]
        account: String,
        /// 1–64 of a-z, 0-9 and -.
        #[arg(long)]
        id: String,
        /// Distinct approvers the same answer needs (1–10; 1 only excludes).
        #[arg(long)]
        approvals: u8,
        /// Only this agent's asks.
        #[arg(long)]
        agent: Option<String>,
        /// Only asks whose `agent.project` is this.
        #[arg(long)]
        project: Option<String>,
        /// Only asks carrying this tag.
        #[arg(long)]
        tag: Option<String>,
        /// Only this priority or a more urgent one (low, normal, high, urgent).
        #[arg(long)]
        min_priority: Option<String>,
        /// An operator who may never answer a matching ask; repeat for several.
        #[arg(long = "exclude")]
        exclude: Vec<String>,
        /// The `agent.labels` key naming the human a run works for, who may not answer it.
        #[arg(long)]
        exclude_label: Option<String>,
        /// Only sensitive asks.
        #[arg(long)]
        sensitive: bool,
        /// An answer (but a decline) needs a fresh passkey assertion, from the inbox.
        #[arg(long)]
        passkey: bool,
    },
    Remove {
        #[arg(long)]
        account: String,
        #[arg(long)]
        id: String,
    },
}

/// `ma2h-hub admin away …` (issue 40): an operator away until a time, with a delegate who
/// answers the asks that list them meanwhile.
#[derive(Args)]
pub struct AwayArgs {
    #[command(subcommand)]
    pub command: AwayCommand,
    /// Accepted for symmetry with the other admin commands: the output is always JSON.
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(Subcommand)]
pub enum AwayCommand {
    /// The account's operators away now.
    Show {
        #[arg(long)]
        account: String,
    },
    /// Mark `--human` away until `--until` (RFC 3339), answered for by `--delegate`.
    Set {
        #[arg(long)]
        account: String,
        #[arg(long)]
        human: String,
        #[arg(long)]
        delegate: String,
        #[arg(long)]
        until: String,
    },
    /// `--human` is back.
    Lift {
        #[arg(long)]
        account: String,
        #[arg(long)]
        human: String,
    },
}

fn ids(account: &str, human: &str) -> Result<(AccountId, HumanId)> {
    let account = AccountId::parse(account).ok_or_else(|| anyhow::anyhow!("--account: not an account id"))?;
    let human = HumanId::parse(human.strip_prefix("human:").unwrap_or(human))
        .ok_or_else(|| anyhow::anyhow!("--human: not an operator id"))?;
    Ok((account, human))
}

pub async fn execute_away(hub: &Hub, cmd: AwayCommand) -> Result<Value> {
    Ok(match cmd {
        AwayCommand::Show { account } => {
            let account = AccountId::parse(&account).ok_or_else(|| anyhow::anyhow!("--account: not an account id"))?;
            delegation::show(hub, &account).await?
        }
        AwayCommand::Set { account, human, delegate, until } => {
            let (account, human) = ids(&account, &human)?;
            let until =
                ma2h_protocol::time::parse(&until).ok_or_else(|| anyhow::anyhow!("--until: an RFC 3339 time"))?;
            delegation::set_away(hub, ma2h_core::admin::ADMIN_ACTOR, &account, &human, &delegate, until).await?
        }
        AwayCommand::Lift { account, human } => {
            let (account, human) = ids(&account, &human)?;
            delegation::lift(hub, ma2h_core::admin::ADMIN_ACTOR, &account, &human).await?
        }
    })
}

/// `ma2h-hub admin grants …` (issue 40): the account's standing grants.
#[derive(Args)]
pub struct GrantsArgs {
    #[command(subcommand)]
    pub command: GrantsCommand,
    /// Accepted for symmetry with the other admin commands: the output is always JSON.
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(Subcommand)]
pub enum GrantsCommand {
    /// The account's grants, newest first (active and recently ended).
    Show {
        #[arg(long)]
        account: String,
    },
    /// Revoke a grant at once (recorded as revoked by `admin`).
    Revoke {
        #[arg(long)]
        account: String,
        #[arg(long)]
        id: String,
    },
}

pub async fn execute_grants(hub: &Hub, cmd: GrantsCommand) -> Result<Value> {
    let now = hub.clock.now();
    let account_of = |a: &str| AccountId::parse(a).ok_or_else(|| anyhow::anyhow!("--account: not an account id"));
    Ok(match cmd {
        GrantsCommand::Show { account } => {
            let list = grants::list_account(hub, &account_of(&account)?).await?;
            serde_json::json!({ "grants": list.iter().map(|g| grants::grant_json(g, now)).collect::<Vec<_>>() })
        }
        GrantsCommand::Revoke { account, id } => {
            grants::grant_json(&grants::revoke_as(hub, &account_of(&account)?, &id, "admin").await?, now)
        }
    })
}

pub async fn execute(hub: &Hub, cmd: ApprovalsCommand) -> Result<Value> {
    Ok(match cmd {
        ApprovalsCommand::Show { account } => manage::show(hub, &account).await?,
        ApprovalsCommand::Add {
            account,
            id,
            approvals,
            agent,
            project,
            tag,
            min_priority,
            exclude,
            exclude_label,
            sensitive,
            passkey,
        } => {
            let spec = PolicySpec {
                id,
                agent,
                project,
                tag,
                min_priority,
                approvals,
                exclude,
                exclude_label,
                sensitive,
                passkey,
            };
            manage::put(hub, ma2h_core::admin::ADMIN_ACTOR, &account, spec).await?
        }
        ApprovalsCommand::Remove { account, id } => {
            manage::remove(hub, ma2h_core::admin::ADMIN_ACTOR, &account, &id).await?
        }
    })
}

//! # ma2h-admin
//!
//! `ma2h-hub admin …` and `ma2h-admin-aws …`: non-interactive administration against the Hub's store — credentials,
//! per-agent callback secrets, callback bindings (§9.4) and signing. Every command prints text,
//! or JSON with `--json`.
//!
//! A library of its own so the local binary (SQLite) and `ma2h-admin-aws` (DynamoDB) share the
//! commands without linking each other's store. It prints, so it uses `anyhow` like a binary.

use std::io::Read;

pub mod approvals;
pub mod audit;
pub mod channels;
pub mod passkeys;
pub mod sso;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use ma2h_core::{Hub, admin};
use serde_json::{Value, json};

#[derive(Subcommand)]
pub enum AdminCommand {
    /// Create an agent credential for an `agent.id` (prints the API key once, and the agent's
    /// signing secret with its first credential only).
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
    /// Revoke a credential (a running Hub refuses it within a second: it caches verified keys for 1 s).
    Revoke {
        credential_id: String,
        #[arg(long)]
        json: bool,
    },
    /// Issue a new key for the same principal; the old key keeps working for the overlap (the
    /// signing secret is unchanged: see `rotate-signing-secret`).
    Rotate {
        credential_id: String,
        /// Overlap in hours during which the old key still works (at most a year).
        #[arg(long, default_value_t = 24, value_parser = clap::value_parser!(u32).range(0..=8760))]
        overlap_hours: u32,
        #[arg(long)]
        json: bool,
    },
    /// Replace an agent's Hub-issued signing secret and print the new one once (pushes signed
    /// from now on verify only with it).
    RotateSigningSecret {
        #[command(flatten)]
        target: Agent,
    },
    /// Register a secret an agent's callbacks reference by name (`secret_ref` / `token_ref`).
    PutSecret {
        #[command(flatten)]
        target: Agent,
        #[arg(long)]
        name: String,
        /// The value; prefer `--value-stdin` so it stays out of shell history.
        #[arg(long, conflicts_with = "value_stdin")]
        value: Option<String>,
        /// Read the value from standard input (trailing newline removed).
        #[arg(long)]
        value_stdin: bool,
    },
    /// Remove an agent's secret.
    DeleteSecret {
        #[command(flatten)]
        target: Agent,
        #[arg(long)]
        name: String,
    },
    /// List an agent's secret names (never values).
    ListSecrets {
        #[command(flatten)]
        target: Agent,
    },
    /// Approve a host for an agent's push callbacks (§9.4 operator approval).
    BindCallback {
        #[command(flatten)]
        target: Agent,
        /// Host only: `agent.example.com` (no scheme, port or path; a binding covers every port).
        #[arg(long)]
        host: String,
    },
    /// Remove a callback binding.
    UnbindCallback {
        #[command(flatten)]
        target: Agent,
        #[arg(long)]
        host: String,
    },
    /// List an agent's callback bindings.
    ListBindings {
        #[command(flatten)]
        target: Agent,
    },
    /// Stop an agent (§16.4.1): close its live sessions and refuse new ones until lifted.
    StopAgent {
        #[command(flatten)]
        target: Agent,
    },
    /// Lift an agent's stop (set by an operator's kill-switch or `stop-agent`).
    LiftStop {
        #[command(flatten)]
        target: Agent,
    },
    /// Show whether an agent is stopped, by whom and since when.
    StopStatus {
        #[command(flatten)]
        target: Agent,
    },
    /// Show the account's inter-agent policy (§8.0); `--enable`/`--disable` opts the account in
    /// or out of agent-to-agent messaging (off by default).
    InterAgent {
        #[arg(long, default_value = "default")]
        account: String,
        #[arg(long, conflicts_with = "disable")]
        enable: bool,
        #[arg(long)]
        disable: bool,
        #[arg(long)]
        json: bool,
    },
    /// Restrict who may address an agent (§13.5): only the `--sender` agents may send to
    /// `--agent`; `--clear` removes the list (any same-account agent may again).
    AllowSenders {
        #[command(flatten)]
        target: Agent,
        /// A sender agent id; repeat for several.
        #[arg(long = "sender", required_unless_present = "clear")]
        senders: Vec<String>,
        #[arg(long, conflicts_with = "senders")]
        clear: bool,
    },
    /// Slack and webhook channels, routes, reminders and escalation (docs/channels.md). Always
    /// prints JSON.
    Channels(Box<crate::channels::ChannelsArgs>),
    /// Approval policies: a quorum of distinct approvers, who may never approve (issue 40,
    /// docs/decisions.md). Always prints JSON.
    Approvals(crate::approvals::ApprovalsArgs),
    /// An operator away until a time, with a delegate (issue 40). Always prints JSON.
    Away(crate::approvals::AwayArgs),
    /// Standing grants: show, revoke (issue 40). Always prints JSON.
    Grants(crate::approvals::GrantsArgs),
    /// An operator's passkeys: list, remove (issue 41; operators add them in the inbox). Always
    /// prints JSON.
    Passkeys(crate::passkeys::PasskeysArgs),
    /// Single sign-on to the inbox: the account's OpenID Connect provider, subject links, key
    /// login on/off (issue 42). Always prints JSON, never the client secret.
    Sso(crate::sso::SsoArgs),
    /// The audit ledger (issue 42): `export` as JSON Lines for `ma2h audit verify`; `seal`
    /// settled entries under a checkpoint now.
    Audit(crate::audit::AuditArgs),
    /// When each operator was last active in the inbox or a channel, and who is away (issue 40:
    /// what on-call ladders read). Always prints JSON.
    Presence {
        #[arg(long, default_value = "default")]
        account: String,
        /// Accepted for symmetry with the other admin commands: the output is always JSON.
        #[arg(long)]
        json: bool,
    },
    /// Add the Standard Webhooks headers (webhook-id, webhook-timestamp, webhook-signature) to an
    /// agent's pushes: `--enable` prints a fresh `whsec_` secret once (again: replaces it);
    /// `--disable` stops them. The §9.2 MA2H-Signature is sent either way.
    StandardWebhooks {
        #[command(flatten)]
        target: Agent,
        #[arg(long, conflicts_with = "disable", required_unless_present = "disable")]
        enable: bool,
        #[arg(long)]
        disable: bool,
    },
    /// Choose how an agent's bearer/apikey pushes are signed: hmac-sha256 (default) or ed25519.
    SetSigning {
        #[command(flatten)]
        target: Agent,
        #[arg(long)]
        alg: String,
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

#[derive(Args)]
pub struct Agent {
    #[arg(long, default_value = "default")]
    account: String,
    #[arg(long)]
    agent: String,
    #[arg(long)]
    json: bool,
}

/// Run one admin command against `hub` (any store) and print its result: text, or JSON with
/// `--json`.
pub async fn execute(hub: &Hub, cmd: AdminCommand) -> Result<()> {
    // A note, never a refusal: the lookup's own failure does not stop the write.
    if let Some(t) = cmd.writes_for_agent()
        && matches!(admin::agent_is_known(hub, &t.account, &t.agent).await, Ok(false))
    {
        // Stored all the same (settings may be provisioned before the agent's first key).
        eprintln!(
            "note: account `{}` has never issued agent `{}` a credential — stored for when it has one \
             (`admin list` shows the agents; `admin create-agent` creates one)",
            t.account, t.agent
        );
    }
    let (value, json): (Value, bool) = match cmd {
        AdminCommand::CreateAgent { agent, common } => {
            let c = admin::create_agent(hub, &common.account, &agent, common.label).await?;
            (serde_json::to_value(c)?, common.json)
        }
        AdminCommand::CreateOperator { human, common } => {
            let c = admin::create_operator(hub, &common.account, &human, common.label).await?;
            (serde_json::to_value(c)?, common.json)
        }
        AdminCommand::List { json } => (json!({ "credentials": admin::list(hub).await? }), json),
        AdminCommand::Revoke { credential_id, json } => {
            (serde_json::to_value(admin::revoke(hub, &credential_id).await?)?, json)
        }
        AdminCommand::Rotate { credential_id, overlap_hours, json } => {
            let overlap = chrono::Duration::hours(i64::from(overlap_hours));
            (serde_json::to_value(admin::rotate(hub, &credential_id, overlap).await?)?, json)
        }
        AdminCommand::RotateSigningSecret { target: t } => {
            let secret = admin::rotate_signing_secret(hub, &t.account, &t.agent).await?;
            (json!({ "account": t.account, "agent": t.agent, "signing_secret": secret }), t.json)
        }
        AdminCommand::PutSecret { target: t, name, value, value_stdin } => {
            let value = match (value, value_stdin) {
                (Some(v), false) => v,
                (None, true) => {
                    let mut s = String::new();
                    std::io::stdin().read_to_string(&mut s).context("reading the secret from stdin")?;
                    s.trim_end_matches(['\r', '\n']).to_owned()
                }
                _ => bail!("give the secret with --value or --value-stdin"),
            };
            admin::put_secret(hub, &t.account, &t.agent, &name, &value).await?;
            (json!({ "account": t.account, "agent": t.agent, "secret": name, "stored": true }), t.json)
        }
        AdminCommand::DeleteSecret { target: t, name } => {
            let deleted = admin::delete_secret(hub, &t.account, &t.agent, &name).await?;
            (json!({ "account": t.account, "agent": t.agent, "secret": name, "deleted": deleted }), t.json)
        }
        AdminCommand::ListSecrets { target: t } => (
            json!({ "account": t.account, "agent": t.agent, "secrets": admin::list_secrets(hub, &t.account, &t.agent).await? }),
            t.json,
        ),
        AdminCommand::BindCallback { target: t, host } => {
            let host = admin::bind_callback(hub, &t.account, &t.agent, &host).await?;
            (json!({ "account": t.account, "agent": t.agent, "host": host, "bound": true }), t.json)
        }
        AdminCommand::UnbindCallback { target: t, host } => {
            let removed = admin::unbind_callback(hub, &t.account, &t.agent, &host).await?;
            (json!({ "account": t.account, "agent": t.agent, "host": host, "removed": removed }), t.json)
        }
        AdminCommand::ListBindings { target: t } => (
            json!({ "account": t.account, "agent": t.agent, "hosts": admin::list_bindings(hub, &t.account, &t.agent).await? }),
            t.json,
        ),
        AdminCommand::InterAgent { account, enable, disable, json } => {
            let patch = match (enable, disable) {
                (true, _) => json!({ "enabled": true }),
                (_, true) => json!({ "enabled": false }),
                _ => json!({}),
            };
            (policy_json(&account, &admin::inter_agent(hub, &account, patch).await?), json)
        }
        AdminCommand::AllowSenders { target: t, senders, clear } => {
            let list = if clear { Value::Null } else { json!(senders) };
            let patch = json!({ "allowlists": { t.agent.clone(): list } });
            (policy_json(&t.account, &admin::inter_agent(hub, &t.account, patch).await?), t.json)
        }
        AdminCommand::StopAgent { target: t } => {
            let stop = admin::stop_agent(hub, &t.account, &t.agent).await?;
            (stop_json(&t, Some(&stop)), t.json)
        }
        AdminCommand::LiftStop { target: t } => {
            let lifted = admin::lift_stop(hub, &t.account, &t.agent).await?;
            let mut v = stop_json(&t, None);
            v["lifted"] = json!(lifted);
            (v, t.json)
        }
        AdminCommand::StopStatus { target: t } => {
            let stop = admin::stop_status(hub, &t.account, &t.agent).await?;
            (stop_json(&t, stop.as_ref()), t.json)
        }
        AdminCommand::Approvals(args) => (crate::approvals::execute(hub, args.command).await?, true),
        AdminCommand::Away(args) => (crate::approvals::execute_away(hub, args.command).await?, true),
        AdminCommand::Grants(args) => (crate::approvals::execute_grants(hub, args.command).await?, true),
        AdminCommand::Passkeys(args) => (crate::passkeys::execute(hub, args.command).await?, true),
        AdminCommand::Sso(args) => (crate::sso::execute(hub, args.command).await?, true),
        AdminCommand::Audit(args) => match crate::audit::execute(hub, args.command).await? {
            Some(v) => (v, true),
            None => return Ok(()), // the export wrote its lines
        },
        AdminCommand::Presence { account, .. } => {
            let account = ma2h_protocol::ids::AccountId::parse(&account)
                .ok_or_else(|| anyhow::anyhow!("--account: not an account id"))?;
            let team = ma2h_core::decisions::presence::team(hub, &account).await?;
            (ma2h_core::decisions::presence::team_json(&team, hub.clock.now()), true)
        }
        AdminCommand::Channels(args) => {
            (crate::channels::execute(hub, args.command, args.allow_empty_account).await?, true)
        }
        AdminCommand::StandardWebhooks { target: t, enable, .. } => {
            let secret = admin::set_standard_webhooks(hub, &t.account, &t.agent, enable).await?;
            (json!({ "account": t.account, "agent": t.agent, "standard_webhooks": enable, "secret": secret }), t.json)
        }
        AdminCommand::SetSigning { target: t, alg } => {
            admin::set_signing_alg(hub, &t.account, &t.agent, &alg).await?;
            (json!({ "account": t.account, "agent": t.agent, "signing_alg": alg }), t.json)
        }
    };
    if json {
        println!("{}", serde_json::to_string_pretty(&value)?);
    } else {
        print_text(&value);
    }
    Ok(())
}

impl AdminCommand {
    /// The agent a per-agent write names (reads and removals never warn).
    fn writes_for_agent(&self) -> Option<&Agent> {
        match self {
            Self::RotateSigningSecret { target }
            | Self::PutSecret { target, .. }
            | Self::BindCallback { target, .. }
            | Self::AllowSenders { target, .. }
            | Self::StopAgent { target }
            | Self::SetSigning { target, .. }
            | Self::StandardWebhooks { target, .. } => Some(target),
            _ => None,
        }
    }
}

fn stop_json(t: &Agent, stop: Option<&ma2h_core::sessions::model::StopRecord>) -> Value {
    let mut v =
        serde_json::to_value(ma2h_core::sessions::model::StopRecord::status(&t.agent, stop)).unwrap_or_default();
    v["account"] = json!(t.account);
    v
}

fn print_text(value: &Value) {
    if let Some(list) = value.get("credentials").and_then(Value::as_array) {
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

fn policy_json(account: &str, p: &ma2h_core::inter_agent::policy::AccountPolicy) -> Value {
    json!({ "account": account, "inter_agent": p.inter_agent, "allowlists": p.allowlists })
}

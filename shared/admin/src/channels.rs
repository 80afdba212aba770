//! `ma2h-hub admin channels …`: an account's Slack and webhook channels, its routes (which
//! messages are announced where, reminders, escalation) and the Slack user ↔ operator links
//! (issue 20; docs/channels.md). Credentials are sealed before they are stored and never printed.

use anyhow::Result;
use clap::{Args, Subcommand};
use ma2h_core::Hub;
use ma2h_core::admin;
use ma2h_core::channels::manage;
use ma2h_core::channels::manage::RouteSpec;
use serde_json::Value;

#[derive(Args)]
pub struct ChannelsArgs {
    #[command(subcommand)]
    pub command: ChannelsCommand,
    /// Accepted for symmetry with the other admin commands: the output is always JSON.
    #[arg(long, global = true)]
    pub json: bool,
    /// Configure an account that has no operator or agent yet (otherwise refused: nothing
    /// would ever be announced there — most often a mistyped or defaulted `--account`).
    #[arg(long, global = true)]
    pub allow_empty_account: bool,
}

impl ChannelsCommand {
    /// The account the command acts on, and whether it changes anything.
    fn account(&self) -> (&str, bool) {
        match self {
            Self::Show { account } => (account, false),
            Self::AddSlack { account, .. }
            | Self::AddWebhook { account, .. }
            | Self::AddEmail { account, .. }
            | Self::AddWebpush { account, .. }
            | Self::RemoveChannel { account, .. }
            | Self::AddRoute { account, .. }
            | Self::RemoveRoute { account, .. }
            | Self::LinkSlack { account, .. }
            | Self::UnlinkSlack { account, .. } => (account, true),
        }
    }
}

/// Issue 39: a channel stored in an account nobody uses is a silent no-op; refuse the write
/// (unless asked for) and say which accounts exist. `show` only notes it.
async fn check_account(hub: &Hub, cmd: &ChannelsCommand, allow_empty: bool) -> Result<()> {
    let (account, writes) = cmd.account();
    if admin::account_is_known(hub, account).await? {
        return Ok(());
    }
    let mut known: Vec<String> = admin::list(hub).await?.into_iter().map(|c| c.account).collect();
    known.sort();
    known.dedup();
    let known = if known.is_empty() { "none yet".to_owned() } else { known.join(", ") };
    let why = format!(
        "account `{account}` has no operator or agent, so nothing configured there is ever announced or answered \
         (accounts with credentials: {known}; `make run`'s dev credentials are in `dev`)"
    );
    match (writes, allow_empty) {
        (true, false) => anyhow::bail!(
            "{why}. Name the account with --account, create its first credential (`admin create-operator --account \
             {account} --human …`), or pass --allow-empty-account to configure it ahead of that"
        ),
        _ => {
            eprintln!("note: {why}");
            Ok(())
        }
    }
}

#[derive(Subcommand)]
pub enum ChannelsCommand {
    /// Show the account's channels (never their credentials), routes and Slack links.
    Show {
        #[arg(long, default_value = "default")]
        account: String,
    },
    /// Add or replace a Slack channel (a Slack app's bot posts there; its buttons answer asks).
    AddSlack {
        #[arg(long, default_value = "default")]
        account: String,
        /// This channel's id in the Hub (a-z, 0-9, -), named by routes.
        #[arg(long)]
        id: String,
        /// The Slack workspace id (T…).
        #[arg(long)]
        team: String,
        /// The Slack conversation id (C…) the bot posts to (invite the bot there).
        #[arg(long)]
        channel: String,
        /// The app's bot token (xoxb-…); prefer the environment variable.
        #[arg(long, env = "MA2H_SLACK_BOT_TOKEN", hide_env_values = true)]
        bot_token: String,
        /// The app's signing secret (Basic Information → App Credentials).
        #[arg(long, env = "MA2H_SLACK_SIGNING_SECRET", hide_env_values = true)]
        signing_secret: String,
    },
    /// Add or replace a generic webhook channel (signed JSON events; PagerDuty, ntfy, …).
    AddWebhook {
        #[arg(long, default_value = "default")]
        account: String,
        #[arg(long)]
        id: String,
        /// https URL (http only in dev mode); checked by the §9.4 egress guard at every send.
        #[arg(long)]
        url: String,
        /// The HMAC key of the `MA2H-Signature` header; prefer the environment variable. A
        /// Standard Webhooks secret (`whsec_` + base64) also adds the Standard Webhooks headers.
        #[arg(long, env = "MA2H_WEBHOOK_SECRET", hide_env_values = true, required_unless_present = "generate_secret")]
        secret: Option<String>,
        /// Generate a Standard Webhooks secret (`whsec_…`), printed once as `secret`.
        #[arg(long, conflicts_with = "secret")]
        generate_secret: bool,
    },
    /// Add or replace an email channel: an SMTP relay and the operators it mails (each mail's
    /// answer links act as its recipient).
    AddEmail {
        #[arg(long, default_value = "default")]
        account: String,
        #[arg(long)]
        id: String,
        #[arg(long)]
        smtp_host: String,
        #[arg(long, default_value_t = 587)]
        smtp_port: u16,
        /// tls (implicit, port 465), starttls (required, port 587) or none (a relay on this host).
        #[arg(long, default_value = "starttls")]
        security: String,
        #[arg(long)]
        username: Option<String>,
        /// The SMTP password; prefer the environment variable.
        #[arg(long, env = "MA2H_SMTP_PASSWORD", hide_env_values = true)]
        password: Option<String>,
        /// The sender, e.g. `MA2H Hub <hub@example.com>`.
        #[arg(long)]
        from: String,
        /// `human=address`, e.g. `alice=alice@example.com`; repeat for several.
        #[arg(long = "recipient", required = true)]
        recipients: Vec<String>,
    },
    /// Add or replace a Web Push channel (issue 41): a notification on every device each
    /// recipient subscribed from the inbox (its Devices page), with answer buttons for small asks.
    AddWebpush {
        #[arg(long, default_value = "default")]
        account: String,
        #[arg(long)]
        id: String,
        /// An operator notified (`alice` or `human:alice`); repeat for several.
        #[arg(long = "recipient", required = true)]
        recipients: Vec<String>,
    },
    /// Remove a channel (refused while a route names it).
    RemoveChannel {
        #[arg(long, default_value = "default")]
        account: String,
        #[arg(long)]
        id: String,
    },
    /// Add or replace a route: which asks/tasks are announced to which channels, with an
    /// optional reminder and escalation. Routes are tried in order; the first match wins.
    AddRoute {
        #[arg(long, default_value = "default")]
        account: String,
        #[arg(long)]
        id: String,
        /// Only this agent's messages.
        #[arg(long)]
        agent: Option<String>,
        /// Only messages whose `agent.project` is this.
        #[arg(long)]
        project: Option<String>,
        /// Only messages carrying this tag.
        #[arg(long)]
        tag: Option<String>,
        /// Only this priority or a more urgent one (low, normal, high, urgent).
        #[arg(long)]
        min_priority: Option<String>,
        /// A channel id to announce to; repeat for several.
        #[arg(long = "to", required = true)]
        targets: Vec<String>,
        /// Remind the targets after this many minutes unanswered.
        #[arg(long)]
        remind_after: Option<u32>,
        /// A channel id told when little time is left; repeat for several.
        #[arg(long = "escalate-to")]
        escalate: Vec<String>,
        /// Escalate when this percentage of the lifetime is left (default 20).
        #[arg(long)]
        escalate_at_percent: Option<u8>,
        /// An on-call ladder: operators reached one after another while the message is open,
        /// skipping one who is away (their delegate is reached) or offline; repeat in order.
        #[arg(long = "ladder")]
        ladder: Vec<String>,
        /// Minutes each ladder rung is given before the next (default 15).
        #[arg(long)]
        ladder_minutes: Option<u32>,
        /// Minutes without inbox or channel activity after which an operator counts as offline
        /// (default 60).
        #[arg(long)]
        offline_minutes: Option<u32>,
    },
    RemoveRoute {
        #[arg(long, default_value = "default")]
        account: String,
        #[arg(long)]
        id: String,
    },
    /// Let a Slack user answer as an operator: their button presses resolve as `human:<id>`.
    LinkSlack {
        #[arg(long, default_value = "default")]
        account: String,
        #[arg(long)]
        team: String,
        /// The Slack user id (U…).
        #[arg(long)]
        user: String,
        /// The operator (`alice` or `human:alice`).
        #[arg(long)]
        human: String,
    },
    UnlinkSlack {
        #[arg(long, default_value = "default")]
        account: String,
        #[arg(long)]
        team: String,
        #[arg(long)]
        user: String,
    },
}

/// Run one `channels` command; the result is the configuration as `show` prints it.
pub async fn execute(hub: &Hub, cmd: ChannelsCommand, allow_empty_account: bool) -> Result<Value> {
    check_account(hub, &cmd, allow_empty_account).await?;
    Ok(match cmd {
        ChannelsCommand::Show { account } => manage::show(hub, &account).await?,
        ChannelsCommand::AddSlack { account, id, team, channel, bot_token, signing_secret } => {
            manage::put_slack(
                hub,
                ma2h_core::admin::ADMIN_ACTOR,
                &account,
                &id,
                &team,
                &channel,
                &bot_token,
                &signing_secret,
            )
            .await?
        }
        ChannelsCommand::AddWebhook { account, id, url, secret, generate_secret } => {
            let generated = generate_secret.then(|| {
                let mut key = [0u8; 32];
                hub.random.fill(&mut key);
                ma2h_protocol::standard_webhooks::WebhookSecret::from_random(key).expose()
            });
            let secret = generated.clone().or(secret).unwrap_or_default();
            let mut shown =
                manage::put_webhook(hub, ma2h_core::admin::ADMIN_ACTOR, &account, &id, &url, &secret).await?;
            if let Some(secret) = generated {
                // shown once: only its sealed form is kept
                shown["secret"] = Value::String(secret);
            }
            shown
        }
        ChannelsCommand::AddEmail {
            account,
            id,
            smtp_host,
            smtp_port,
            security,
            username,
            password,
            from,
            recipients,
        } => {
            let recipients = recipients
                .iter()
                .map(|r| r.split_once('=').map(|(h, a)| (h.to_owned(), a.to_owned())))
                .collect::<Option<Vec<_>>>()
                .ok_or_else(|| anyhow::anyhow!("--recipient takes human=address"))?;
            let spec = manage::EmailSpec { id, smtp_host, smtp_port, security, username, password, from, recipients };
            manage::put_email(hub, ma2h_core::admin::ADMIN_ACTOR, &account, spec).await?
        }
        ChannelsCommand::AddWebpush { account, id, recipients } => {
            manage::put_webpush(hub, ma2h_core::admin::ADMIN_ACTOR, &account, &id, &recipients).await?
        }
        ChannelsCommand::RemoveChannel { account, id } => {
            manage::remove_channel(hub, ma2h_core::admin::ADMIN_ACTOR, &account, &id).await?
        }
        ChannelsCommand::AddRoute {
            account,
            id,
            agent,
            project,
            tag,
            min_priority,
            targets,
            remind_after,
            escalate,
            escalate_at_percent,
            ladder,
            ladder_minutes,
            offline_minutes,
        } => {
            let spec = RouteSpec {
                id,
                agent,
                project,
                tag,
                min_priority,
                targets,
                remind_after_minutes: remind_after,
                escalate,
                escalate_percent_left: escalate_at_percent,
                ladder,
                ladder_minutes,
                offline_minutes,
            };
            manage::put_route(hub, ma2h_core::admin::ADMIN_ACTOR, &account, spec).await?
        }
        ChannelsCommand::RemoveRoute { account, id } => {
            manage::remove_route(hub, ma2h_core::admin::ADMIN_ACTOR, &account, &id).await?
        }
        ChannelsCommand::LinkSlack { account, team, user, human } => {
            manage::link_slack(hub, ma2h_core::admin::ADMIN_ACTOR, &account, &team, &user, Some(&human)).await?
        }
        ChannelsCommand::UnlinkSlack { account, team, user } => {
            manage::link_slack(hub, ma2h_core::admin::ADMIN_ACTOR, &account, &team, &user, None).await?
        }
    })
}

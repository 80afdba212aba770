//! `ma2h-hub admin sso …` / `ma2h-admin-aws sso …` (issue 42): an account's single sign-on to the
//! inbox — its OpenID Connect provider, who of its users are which operator, and whether the
//! operator API key still logs in to the inbox. Always prints the configuration as JSON, never
//! the client secret. Every change is a `policy.changed` ledger entry (`target: sso`).

use std::io::Read;

use anyhow::{Context, Result, bail};
use clap::{Args, Subcommand};
use ma2h_core::Hub;
use ma2h_core::admin::ADMIN_ACTOR;
use ma2h_core::sso::manage::{self, SsoSpec};
use ma2h_protocol::ids::AccountId;
use serde_json::Value;

#[derive(Args)]
pub struct SsoArgs {
    #[command(subcommand)]
    pub command: SsoCommand,
    /// Accepted for symmetry with the other admin commands: the output is always JSON.
    #[arg(long, global = true)]
    pub json: bool,
}

#[derive(Subcommand)]
pub enum SsoCommand {
    /// Set or change the account's provider (the first `set` needs issuer, client id and secret;
    /// later ones change only what they name).
    Set(SsoSet),
    /// The account's SSO configuration (the secret shows as "(set)").
    Show {
        #[arg(long)]
        account: String,
    },
    /// Remove SSO from the account: its SSO sessions end, key login is back.
    Remove {
        #[arg(long)]
        account: String,
    },
    /// Link a provider subject (its `sub`) to an operator.
    Link {
        #[arg(long)]
        account: String,
        #[arg(long)]
        subject: String,
        /// The operator id (`alice` or `human:alice`).
        #[arg(long)]
        human: String,
    },
    /// Remove a subject's link (the sessions it made end at once).
    Unlink {
        #[arg(long)]
        account: String,
        #[arg(long)]
        subject: String,
    },
}

// `admin sso set`'s flags (its help is the `Set` variant's doc).
#[derive(Args)]
pub struct SsoSet {
    #[arg(long)]
    pub account: String,
    /// The issuer identifier, exactly as the provider's discovery document states it
    /// (`https://accounts.google.com`, `https://login.microsoftonline.com/{tenant}/v2.0`).
    #[arg(long)]
    pub issuer: Option<String>,
    #[arg(long)]
    pub client_id: Option<String>,
    /// A file holding the client secret (`-` reads stdin), so it stays out of shell history.
    #[arg(long)]
    pub client_secret_file: Option<String>,
    /// Space-separated scopes (default "openid email profile").
    #[arg(long)]
    pub scopes: Option<String>,
    /// Verified emails in these domains map to the operator named by their local part
    /// (comma-separated; an empty value allows none).
    #[arg(long, value_delimiter = ',')]
    pub email_domains: Option<Vec<String>>,
    /// May operators still log in to the inbox with their API key (`false`: SSO or passkey
    /// only; `true` again is the break-glass).
    #[arg(long)]
    pub key_login: Option<bool>,
    /// Logging out of the inbox also ends the provider's session (RP-Initiated Logout;
    /// register `{public_url}/login` with the provider as a post-logout redirect URI first).
    #[arg(long)]
    pub provider_logout: Option<bool>,
    /// Admit an email-mapped identity only if its ID token lists one of these groups
    /// (comma-separated; an empty value requires none). Subject links are not gated.
    #[arg(long, value_delimiter = ',')]
    pub required_groups: Option<Vec<String>>,
    /// The ID token claim holding the groups (default `groups`; `roles` for Entra ID app
    /// roles; an empty value sets the default back).
    #[arg(long)]
    pub groups_claim: Option<String>,
}

fn account_of(account: &str) -> Result<AccountId> {
    AccountId::parse(account).ok_or_else(|| anyhow::anyhow!("--account: not an account id"))
}

fn read_secret(path: &str) -> Result<String> {
    let mut s = String::new();
    if path == "-" {
        std::io::stdin().read_to_string(&mut s).context("reading the client secret from stdin")?;
    } else {
        s = std::fs::read_to_string(path).with_context(|| format!("reading the client secret from {path}"))?;
    }
    let s = s.trim().to_owned();
    if s.is_empty() {
        bail!("the client secret file is empty");
    }
    Ok(s)
}

pub async fn execute(hub: &Hub, cmd: SsoCommand) -> Result<Value> {
    Ok(match cmd {
        SsoCommand::Set(set) => {
            let client_secret = set.client_secret_file.as_deref().map(read_secret).transpose()?;
            let spec = SsoSpec {
                issuer: set.issuer,
                client_id: set.client_id,
                client_secret,
                scopes: set.scopes,
                email_domains: set.email_domains,
                key_login: set.key_login,
                provider_logout: set.provider_logout,
                required_groups: set.required_groups,
                groups_claim: set.groups_claim,
            };
            manage::set(hub, ADMIN_ACTOR, &account_of(&set.account)?, spec).await?
        }
        SsoCommand::Show { account } => manage::show(hub, &account_of(&account)?).await?,
        SsoCommand::Remove { account } => manage::remove(hub, ADMIN_ACTOR, &account_of(&account)?).await?,
        SsoCommand::Link { account, subject, human } => {
            manage::link(hub, ADMIN_ACTOR, &account_of(&account)?, &subject, Some(&human)).await?
        }
        SsoCommand::Unlink { account, subject } => {
            manage::link(hub, ADMIN_ACTOR, &account_of(&account)?, &subject, None).await?
        }
    })
}

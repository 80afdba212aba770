//! `ma2h-admin-aws`: the `ma2h-hub admin` commands against the deployed DynamoDB table
//! (`MA2H_TABLE`, AWS credentials and `MA2H_MASTER_KEY` / `MA2H_ED25519_SEED` from the
//! environment, as the functions see them). A binary of its own so the local Hub links no AWS code.

use anyhow::Result;
use clap::Parser;
use ma2h_admin::{self as admin, AdminCommand};

#[derive(Parser)]
#[command(name = "ma2h-admin-aws", version, about = "MA2H Hub admin commands against DynamoDB")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Subcommand)]
enum Command {
    #[command(flatten)]
    Admin(AdminCommand),
    /// Give messages stored before the `inbox` index their listing attributes (project, tags,
    /// actor, comment); run once after upgrading a table (docs/dynamodb.md). Idempotent.
    BackfillListing {
        /// Print `{"updated": n}`.
        #[arg(long)]
        json: bool,
    },
    /// Create the Hub's two secrets with fresh keys, once, before the first deploy: the key
    /// secret (master key and signing seed; every function but discovery reads it) and its
    /// public keys (discovery's only secret). Refused if the key secret exists.
    InitHubKeys(HubKeyNames),
    /// Rotate the Hub's signing key: a new seed, the old public key still published (newest
    /// `--keep-previous` kept). The public keys are written first, then the key secret; the
    /// functions sign with the new key from their next cold start (redeploy to make it now).
    RotateHubKey {
        #[command(flatten)]
        names: HubKeyNames,
        /// Previous public keys still published (drop one once its pushes are past their retries).
        #[arg(long, default_value_t = 1)]
        keep_previous: usize,
    },
    /// Rewrite the public-keys secret from the key secret (after editing it by hand, or when
    /// upgrading from a single secret). Idempotent.
    PublishHubKeys(HubKeyNames),
    /// Count the open messages stored before the open counters (issue 38): the inbox's counts
    /// and the §8.6 depth recount see them from then on. Run once after upgrading a table
    /// (docs/dynamodb.md). Idempotent.
    BackfillCounts {
        /// Print `{"counted": n}`.
        #[arg(long)]
        json: bool,
    },
    /// Recount one account's open counters from its open messages and overwrite them: the
    /// repair for a counter write lost after its message write. Run it when the account is quiet
    /// (what is submitted or answered meanwhile may be missed). Prints the messages counted.
    RecountOpen {
        #[arg(long)]
        account: String,
        /// Print `{"counted": n}`.
        #[arg(long)]
        json: bool,
    },
    /// Index credentials created before the per-principal pointers under their principal (a
    /// Slack press or an email answer checks its human's credentials there); run once after
    /// upgrading a table (docs/dynamodb.md). Idempotent.
    BackfillCredentials {
        /// Print `{"credentials": n}`.
        #[arg(long)]
        json: bool,
    },
}

/// The two secrets' names (as the template's HubSecretName / HubPublicKeysSecretName).
#[derive(clap::Args)]
struct HubKeyNames {
    #[arg(long, env = "MA2H_HUB_SECRET", default_value = "ma2h/hub")]
    secret: String,
    #[arg(long, env = "MA2H_HUB_PUBLIC_SECRET", default_value = "ma2h/hub-public")]
    public_secret: String,
}

/// The key commands run before any Hub is built (the secrets may not exist yet). What they
/// print is public: key ids and public keys, never a seed or the master key.
async fn hub_keys(command: &Command, names: &HubKeyNames) -> Result<()> {
    use ma2h_aws::hub_secret;
    let config = ma2h_aws::sdk_loader().load().await;
    let sm = aws_sdk_secretsmanager::Client::new(&config);
    let fail = |e: ma2h_aws::Error| anyhow::anyhow!(e);
    let public = match command {
        Command::InitHubKeys(_) => {
            if !hub_secret::create(&sm, &names.secret).await.map_err(fail)? {
                anyhow::bail!(
                    "{} exists already: rotate-hub-key rotates its signing key, publish-hub-keys republishes it",
                    names.secret
                );
            }
            hub_secret::publish(&sm, &names.secret, &names.public_secret).await.map_err(fail)?
        }
        Command::RotateHubKey { keep_previous, .. } => {
            hub_secret::rotate_stored(&sm, &names.secret, &names.public_secret, *keep_previous).await.map_err(fail)?
        }
        _ => hub_secret::publish(&sm, &names.secret, &names.public_secret).await.map_err(fail)?,
    };
    let kid = ma2h_core::kernel::keys::kid(
        &ma2h_core::kernel::keys::HubKeys::parse_public(&public.ed25519_public).unwrap_or_default(),
    );
    println!(
        "{}",
        serde_json::json!({ "secret": names.secret, "public_secret": names.public_secret, "kid": kid, "public": public })
    );
    Ok(())
}

#[tokio::main]
async fn main() -> Result<()> {
    let cli = Cli::parse();
    ma2h_aws::init_tracing();
    if let Command::InitHubKeys(n) | Command::PublishHubKeys(n) | Command::RotateHubKey { names: n, .. } = &cli.command
    {
        return hub_keys(&cli.command, n).await;
    }
    let deployment = ma2h_aws::build_admin().await.map_err(|e| anyhow::anyhow!(e))?;
    match cli.command {
        Command::Admin(c) => admin::execute(&deployment.hub, c).await,
        Command::InitHubKeys(_) | Command::RotateHubKey { .. } | Command::PublishHubKeys(_) => Ok(()),
        Command::BackfillCredentials { json } => {
            let n = deployment.store.backfill_credentials().await?;
            match json {
                true => println!("{}", serde_json::json!({ "credentials": n })),
                false => println!("indexed {n} credential(s) under their principal"),
            }
            Ok(())
        }
        Command::BackfillCounts { json } => {
            let n = deployment.store.backfill_counts().await?;
            match json {
                true => println!("{}", serde_json::json!({ "counted": n })),
                false => println!("counted {n} open message(s)"),
            }
            Ok(())
        }
        Command::RecountOpen { account, json } => {
            let account = ma2h_protocol::ids::AccountId::parse(&account)
                .ok_or_else(|| anyhow::anyhow!("--account: not a valid account id"))?;
            let n = deployment.store.recount_counts(&account).await?;
            match json {
                true => println!("{}", serde_json::json!({ "counted": n })),
                false => println!("recounted {n} open message(s)"),
            }
            Ok(())
        }
        Command::BackfillListing { json } => {
            let n = deployment.store.backfill_listing().await?;
            match json {
                true => println!("{}", serde_json::json!({ "updated": n })),
                false => println!("updated {n} message item(s)"),
            }
            Ok(())
        }
    }
}

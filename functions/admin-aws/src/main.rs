//! `ma2h-admin-aws`: the `ma2h-hub admin` commands against the deployed DynamoDB table
//! (`MA2H_TABLE`, AWS credentials and `MA2H_MASTER_KEY` / `MA2H_ED25519_SEED` from the
//! environment, as the functions see them). A binary of its own so the local Hub links no AWS code.

use anyhow::Result;
use clap::Parser;
use ma2h_hub::admin::{self, AdminCommand};

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
    /// Index credentials created before the per-principal pointers under their principal (a
    /// Slack press or an email answer checks its human's credentials there); run once after
    /// upgrading a table (docs/dynamodb.md). Idempotent.
    BackfillCredentials {
        /// Print `{"credentials": n}`.
        #[arg(long)]
        json: bool,
    },
}

#[tokio::main]
async fn main() -> Result<()> {
    let cli = Cli::parse();
    ma2h_aws::init_tracing();
    let deployment = ma2h_aws::build_admin().await.map_err(|e| anyhow::anyhow!(e))?;
    match cli.command {
        Command::Admin(c) => admin::execute(&deployment.hub, c).await,
        Command::BackfillCredentials { json } => {
            let n = deployment.store.backfill_credentials().await?;
            match json {
                true => println!("{}", serde_json::json!({ "credentials": n })),
                false => println!("indexed {n} credential(s) under their principal"),
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

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
    command: AdminCommand,
}

#[tokio::main]
async fn main() -> Result<()> {
    let cli = Cli::parse();
    ma2h_aws::init_tracing();
    let deployment = ma2h_aws::build_admin().await.map_err(|e| anyhow::anyhow!(e))?;
    admin::execute(&deployment.hub, cli.command).await
}

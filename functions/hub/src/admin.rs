//! `ma2h-hub admin …`: the shared admin commands ([`ma2h_admin`]) against the local SQLite store.

use anyhow::{Result, bail};
use ma2h_admin::AdminCommand;
use ma2h_core::kernel::settings::Settings;

/// Run an admin command against the local SQLite store in `MA2H_DATA_DIR`. The deployed
/// DynamoDB table is administered by `ma2h-admin-aws`, the same commands in a binary of its own,
/// so this one links no AWS code.
pub async fn run(settings: Settings, cmd: AdminCommand) -> Result<()> {
    match std::env::var("MA2H_STORE").as_deref() {
        Ok("sqlite") | Err(_) => {}
        Ok("dynamodb") => bail!("the DynamoDB store is administered with `ma2h-admin-aws` (same commands)"),
        Ok(other) => bail!("MA2H_STORE must be `sqlite`, got `{other}`"),
    }
    ma2h_admin::execute(&crate::app::build_hub(settings)?, cmd).await
}

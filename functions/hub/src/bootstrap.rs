//! Dev-mode first start: create a dev agent and a dev operator credential once, print them, and
//! write `<data_dir>/dev.env` so the README's curl session works verbatim after `source`.

use anyhow::Result;
use ma2h_core::{Hub, admin};

pub const DEV_ACCOUNT: &str = "dev";
pub const DEV_AGENT: &str = "dev-agent";
pub const DEV_OPERATOR: &str = "dev";

pub async fn dev_credentials(hub: &Hub) -> Result<()> {
    let path = hub.settings.data_dir.join("dev.env");
    if path.exists() {
        println!("dev credentials: see {} (`source {}`)", path.display(), path.display());
        return Ok(());
    }
    let agent = admin::create_agent(hub, DEV_ACCOUNT, DEV_AGENT, Some("dev".into())).await?;
    let operator = admin::create_operator(hub, DEV_ACCOUNT, DEV_OPERATOR, Some("dev".into())).await?;
    // A data dir whose dev.env was deleted still holds the agent's secret, which is never shown
    // twice: issue a fresh one so dev.env is complete.
    let secret = match agent.signing_secret.clone() {
        Some(s) => s,
        None => admin::rotate_signing_secret(hub, DEV_ACCOUNT, DEV_AGENT).await?,
    };
    let env = format!(
        "# Written by `make run` on first start (dev mode). Shown once; keep it private.\n\
         export MA2H_HUB_URL={url}\n\
         export MA2H_AGENT_ID={DEV_AGENT}\n\
         export MA2H_API_KEY={agent_key}\n\
         export MA2H_SIGNING_SECRET={secret}\n\
         export MA2H_OPERATOR_KEY={op_key}\n",
        url = hub.settings.public_url,
        agent_key = agent.api_key,
        op_key = operator.api_key,
    );
    crate::app::write_private(&path, &env)?;
    println!("Created dev credentials (account `{DEV_ACCOUNT}`):");
    println!("  agent    agent:{DEV_AGENT}  api key {}", agent.api_key);
    println!("  operator human:{DEV_OPERATOR}  api key {}", operator.api_key);
    println!("Saved to {} — run `source {}` in your shell.", path.display(), path.display());
    Ok(())
}

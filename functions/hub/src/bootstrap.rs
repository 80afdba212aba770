//! Dev-mode start: create a dev agent and a dev operator credential once, write
//! `<data_dir>/dev.env` so the README's curl session works verbatim after `source`, bind the
//! loopback callback hosts for the dev agent, and print what a newcomer needs next.

use std::path::{Path, PathBuf};

use anyhow::Result;
use ma2h_core::{Hub, admin};

pub const DEV_ACCOUNT: &str = "dev";
pub const DEV_AGENT: &str = "dev-agent";
pub const DEV_OPERATOR: &str = "dev";
/// Callback hosts bound for the dev agent, so `ma2h listen` on this machine receives pushes
/// (dev mode's egress reaches loopback by default, `MA2H_DEV_EGRESS_ALLOW`).
const DEV_CALLBACK_HOSTS: [&str; 2] = ["127.0.0.1", "localhost"];

/// What the start-up banner shows.
pub struct DevCredentials {
    pub env_file: PathBuf,
    /// `None` when an existing `dev.env` no longer holds it.
    pub operator_key: Option<String>,
}

pub async fn dev_credentials(hub: &Hub) -> Result<DevCredentials> {
    let path = hub.settings.data_dir.join("dev.env");
    if path.exists() {
        if admin::list_bindings(hub, DEV_ACCOUNT, DEV_AGENT).await?.is_empty() {
            bind_loopback(hub).await?; // a data dir from before the hosts were bound at creation
        }
        return Ok(DevCredentials { operator_key: env_value(&path, "MA2H_OPERATOR_KEY"), env_file: path });
    }
    let agent = admin::create_agent(hub, DEV_ACCOUNT, DEV_AGENT, Some("dev".into())).await?;
    let operator = admin::create_operator(hub, DEV_ACCOUNT, DEV_OPERATOR, Some("dev".into())).await?;
    // A data dir whose dev.env was deleted still holds the agent's secret, which is never shown
    // twice: issue a fresh one so dev.env is complete.
    let secret = match agent.signing_secret.clone() {
        Some(s) => s,
        None => admin::rotate_signing_secret(hub, DEV_ACCOUNT, DEV_AGENT).await?,
    };
    bind_loopback(hub).await?;
    let env = format!(
        "# Written by `make run` on first start (dev mode): the dev credentials. Keep it private.\n\
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
    println!("Created dev credentials in account `{DEV_ACCOUNT}` (agent:{DEV_AGENT}, human:{DEV_OPERATOR}).");
    Ok(DevCredentials { env_file: path, operator_key: Some(operator.api_key) })
}

async fn bind_loopback(hub: &Hub) -> Result<()> {
    for host in DEV_CALLBACK_HOSTS {
        admin::bind_callback(hub, DEV_ACCOUNT, DEV_AGENT, host).await?;
    }
    Ok(())
}

/// `export KEY=value` from a `dev.env` file.
fn env_value(path: &Path, key: &str) -> Option<String> {
    let text = std::fs::read_to_string(path).ok()?;
    text.lines().find_map(|l| l.strip_prefix("export ")?.strip_prefix(key)?.strip_prefix('=').map(str::to_owned))
}

/// The lines printed after the listening line: where to log in and what to try next.
pub fn banner(public_url: &str, creds: &DevCredentials) -> String {
    let env = creds.env_file.display();
    let key = creds.operator_key.as_deref().unwrap_or("(see MA2H_OPERATOR_KEY in dev.env)");
    format!(
        "  inbox     {public_url}/inbox   (log in with the operator key below)\n\
         \x20 operator  human:{DEV_OPERATOR}   key {key}\n\
         \x20 agent     agent:{DEV_AGENT}   credentials in {env}\n\
         \x20 next      in another terminal:  source {env} && export PATH=$PWD/target/release:$PATH\n\
         \x20           ma2h ask \"Ship build 412?\" --option ship=\"Ship now\" --option hold=Hold --resolver human:{DEV_OPERATOR} --wait\n"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_operator_key_is_read_back_from_dev_env() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dev.env");
        std::fs::write(&path, "# c\nexport MA2H_API_KEY=a\nexport MA2H_OPERATOR_KEY=ma2h_op_x\n").unwrap();
        assert_eq!(env_value(&path, "MA2H_OPERATOR_KEY").as_deref(), Some("ma2h_op_x"));
        assert_eq!(env_value(&path, "MA2H_OPERATOR"), None, "a prefix of a key is not the key");
        let creds = DevCredentials { env_file: path, operator_key: Some("ma2h_op_x".into()) };
        let text = banner("http://127.0.0.1:8080", &creds);
        assert!(text.contains("http://127.0.0.1:8080/inbox"), "{text}");
        assert!(text.contains("key ma2h_op_x"), "{text}");
        assert!(text.contains("ma2h ask"), "{text}");
    }
}

//! `ma2h inbox` and `ma2h ack`: drain the agent's mailbox (§8.7), verify every directive as §9.7
//! requires before printing it, and acknowledge what was processed.

use anyhow::Result;
use clap::Args;
use ma2h_client::inbox::{EntryVerdict, EntryVerifier};
use ma2h_client::replay::ReplayCache;
use ma2h_client::{Client, Config, verify};
use serde_json::{Value, json};

use crate::exit::{self, fail, usage};

#[derive(Args, Debug)]
pub struct InboxArgs {
    /// At most N entries (the Hub caps it at its advertised `inbound.max_batch`).
    #[arg(long, value_name = "N")]
    max: Option<u32>,
    /// Long-poll up to S seconds for the first entry (the Hub caps it; exit 14 if none came).
    #[arg(long, value_name = "S")]
    wait: Option<u32>,
    /// Acknowledge every entry that verified (never a rejected one).
    #[arg(long)]
    ack: bool,
    /// A short note sent with --ack (shown to the human; untrusted text on their side).
    #[arg(long, requires = "ack")]
    note: Option<String>,
    /// Replay-cache directory (default $XDG_STATE_HOME/ma2h or ~/.local/state/ma2h).
    #[arg(long)]
    state_dir: Option<std::path::PathBuf>,
}

#[derive(Args, Debug)]
pub struct AckArgs {
    /// Directive ids (`dir_…`) to acknowledge.
    #[arg(required = true)]
    ids: Vec<String>,
    /// A short note for the human.
    #[arg(long)]
    note: Option<String>,
}

/// Verification keys: the agent's signing secret (HMAC) if configured, and the Ed25519 keys the
/// Hub publishes (an agent set to `ed25519` is signed with those).
async fn keys(client: &Client, config: &Config) -> Result<Vec<ma2h_protocol::signature::VerifyingKey>> {
    let mut keys = Vec::new();
    if let Some(s) = &config.signing_secret {
        keys.push(verify::hmac_key(s));
    }
    keys.extend(verify::keys_from_capability(&client.discover().await.map_err(exit::client)?));
    if keys.is_empty() {
        return Err(usage("no verification key: set MA2H_SIGNING_SECRET (the agent's signing secret)"));
    }
    Ok(keys)
}

pub async fn inbox(args: &InboxArgs, config: &Config, json_out: bool) -> Result<u8> {
    let agent = config.agent_id().map_err(|e| usage(e.to_string()))?.to_owned();
    let client = Client::from_config(config).map_err(exit::client)?;
    let cache = ReplayCache::open(args.state_dir.clone().unwrap_or_else(ReplayCache::default_dir))?;
    let verifier = EntryVerifier::new(&agent, keys(&client, config).await?, Some(cache));
    let entries = client.drain(args.max, args.wait).await.map_err(exit::client)?;
    if entries.is_empty() {
        eprintln!("the mailbox is empty");
        return Ok(exit::EMPTY);
    }
    let (mut verified, mut rejected) = (Vec::new(), 0usize);
    for entry in &entries {
        match verifier.verify(entry, ma2h_client::now_unix()) {
            Ok(verdict) => {
                let (label, d) = match &verdict {
                    EntryVerdict::Accepted(d) => ("new", d),
                    EntryVerdict::Duplicate(d) => ("duplicate", d),
                };
                print_directive(label, &d.directive, json_out);
                verified.push(d.id.clone());
            }
            Err(e) => {
                rejected += 1;
                let id = entry.pointer("/directive/id").and_then(Value::as_str).unwrap_or("?");
                eprintln!("rejected {id}: {e}");
            }
        }
    }
    if args.ack && !verified.is_empty() {
        let n = client.ack_inbox(&verified, args.note.as_deref()).await.map_err(exit::client)?;
        eprintln!("acknowledged {n} of {}", verified.len());
    }
    Ok(if rejected > 0 { exit::REJECTED } else { exit::OK })
}

fn print_directive(label: &str, d: &Value, json_out: bool) {
    if json_out {
        println!("{}", json!({ "verdict": label, "directive": d }));
        return;
    }
    let s = |k: &str| d.get(k).and_then(Value::as_str).unwrap_or("");
    let priority = d.get("priority").and_then(Value::as_str).map(|p| format!(" [{p}]")).unwrap_or_default();
    println!("{} ({label}) from {}{priority}: {}", s("id"), s("from"), s("title"));
    if let Some(body) = d.get("body").and_then(Value::as_str) {
        for line in body.lines() {
            println!("    {line}");
        }
    }
}

pub async fn ack(args: &AckArgs, config: &Config, json_out: bool) -> Result<u8> {
    if let Some(other) = args.ids.iter().find(|id| !id.starts_with("dir_")) {
        return Err(usage(format!("`{other}` is not a directive id (dir_…); only directives are acknowledged here")));
    }
    let client = Client::from_config(config).map_err(exit::client)?;
    let n = client.ack_inbox(&args.ids, args.note.as_deref()).await.map_err(exit::client)?;
    if json_out {
        println!("{}", json!({ "acked": n }));
    } else {
        println!("acknowledged {n} of {}", args.ids.len());
    }
    if n as usize == args.ids.len() {
        Ok(exit::OK)
    } else {
        Err(fail(exit::DUPLICATE, "some ids were not acknowledged: already acked, never delivered, or not yours"))
    }
}

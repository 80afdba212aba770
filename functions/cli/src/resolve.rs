//! `ma2h resolve`: an addressee answers an ask/task another agent sent it (§8.8, §9.1), optionally
//! presenting its session so the Hub attests `agent:<id>#<sess>` and renews the lease.

use anyhow::Result;
use clap::Args;
use ma2h_client::resolve::ResolveOutcome;
use ma2h_client::{Client, Config, SessionError};
use serde_json::{Value, json};

use crate::exit::{self, usage};

#[derive(Args, Debug)]
pub struct ResolveArgs {
    /// The message id (`msg_…`) from the drained `message` entry.
    id: String,
    /// Answer an ask with this value (an option value, or JSON for an `input` ask).
    #[arg(long, group = "outcome")]
    answer: Option<String>,
    /// Decline an ask.
    #[arg(long, group = "outcome")]
    decline: bool,
    /// Mark a task completed.
    #[arg(long, group = "outcome")]
    complete: bool,
    /// Dismiss a task.
    #[arg(long, group = "outcome")]
    dismiss: bool,
    /// A comment carried into the Response.
    #[arg(long)]
    comment: Option<String>,
    /// Resolve as this session (`sess_…`): the attested actor is session-qualified (§8.8).
    #[arg(long, value_name = "SESS", env = "MA2H_SESSION")]
    session: Option<String>,
}

pub async fn run(args: &ResolveArgs, config: &Config, json_out: bool) -> Result<u8> {
    let mut body = match (&args.answer, args.decline, args.complete, args.dismiss) {
        (Some(v), ..) => {
            // An `input` ask takes an object: accept JSON, else the plain option value.
            let value = serde_json::from_str::<Value>(v).ok().filter(Value::is_object).unwrap_or(json!(v));
            json!({ "resolution": "answered", "value": value })
        }
        (None, true, ..) => json!({ "resolution": "declined" }),
        (None, _, true, _) => json!({ "resolution": "completed" }),
        (None, _, _, true) => json!({ "resolution": "dismissed" }),
        _ => return Err(usage("give one of --answer V, --decline, --complete, --dismiss")),
    };
    if let Some(c) = &args.comment {
        body["comment"] = json!(c);
    }
    if let Some(s) = &args.session {
        crate::session::check_id(s)?;
    }
    let client = Client::from_config(config).map_err(exit::client)?;
    let session = args.session.as_deref();
    let outcome = client.resolve(&args.id, &body, session).await.map_err(|e| match session {
        Some(s) => exit::session(SessionError::from_presenting(s, e)),
        None => exit::client(e),
    })?;
    match outcome {
        ResolveOutcome::Resolved(v) => {
            if json_out {
                println!("{v}");
            } else {
                println!(
                    "{} {} resolution_id={}",
                    args.id,
                    v["status"].as_str().unwrap_or("?"),
                    v["resolution_id"].as_str().unwrap_or("?")
                );
            }
            Ok(exit::OK)
        }
        ResolveOutcome::AlreadyTerminal(v) => {
            eprintln!("{} was already resolved ({}); its outcome stands", args.id, v["status"].as_str().unwrap_or("?"));
            if json_out {
                println!("{v}");
            }
            Ok(exit::DUPLICATE)
        }
    }
}

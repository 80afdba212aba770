//! `ma2h session start|list|show|close`: §16 sessions — a Hub-registered, lease-bound address
//! (`agent:<id>#<sess>`) for one run of this agent. The lease is renewed by presenting the
//! session: `ma2h inbox --session`, `ma2h ack --session`, and `notify|ask|task --session` (or
//! `MA2H_SESSION` for all of them).
//!
//! Exit codes specific to sessions: 15 — the session ended (expired, closed, or purged): start a
//! new one and continue; 16 — `session_closed_by_operator`: the account's human stopped this
//! agent; do not retry or re-register (§16.3, §16.4.1).

use std::collections::BTreeMap;

use anyhow::Result;
use clap::{Args, Subcommand};
use ma2h_client::{Client, Config, RegisterSession, Session, SessionScope, SessionState};
use serde_json::{Value, json};

use crate::exit::{self, usage};

#[derive(Subcommand, Debug)]
pub enum SessionCommand {
    /// Register a session (§16.1) and print its id (--json: the whole `{"session"}` body).
    Start(StartArgs),
    /// List this agent's sessions, live and recently ended (§16.4).
    List,
    /// Show one session; exit 0 if active, 15 if it ended, 16 if the operator closed it.
    Show(IdArg),
    /// Close a session (§16.3; idempotent). Mail still addressed to it is bounced (§14.2).
    Close(IdArg),
}

#[derive(Args, Debug)]
pub struct StartArgs {
    /// Display label, e.g. "dev-team · issue #612".
    #[arg(long)]
    label: Option<String>,
    /// The session's role, e.g. worker or coordinator.
    #[arg(long)]
    kind: Option<String>,
    /// Project name.
    #[arg(long)]
    project: Option<String>,
    /// Requested lease in seconds; the Hub clamps it into its advertised bounds and renews it
    /// each time the session is presented.
    #[arg(long, value_name = "SECONDS", value_parser = clap::value_parser!(u64).range(1..))]
    ttl: Option<u64>,
    /// A string tag KEY=VALUE (repeatable), sent as `labels`.
    #[arg(long = "label-kv", value_name = "KEY=VALUE", value_parser = parse_kv)]
    labels: Vec<(String, String)>,
    /// The run label (default: MA2H_RUN_ID, else GITHUB_RUN_ID, when set).
    #[arg(long)]
    run_id: Option<String>,
}

/// `--session` on notify/ask/task.
#[derive(Args, Debug)]
pub struct SubmitSession {
    /// Submit as this session (`sess_…`; sets `agent.session`, §4.1): renews its lease, and the
    /// answer to an ask/task also arrives as a response entry on `ma2h inbox --session`. Exit 15
    /// if the session ended, 16 if the operator stopped this agent.
    #[arg(long, value_name = "SESS", env = "MA2H_SESSION")]
    pub session: Option<String>,
}

#[derive(Args, Debug)]
pub struct IdArg {
    /// The session id (`sess_…`).
    id: String,
}

fn parse_kv(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v)) if !k.trim().is_empty() => Ok((k.trim().to_owned(), v.to_owned())),
        _ => Err(format!("`{s}` is not KEY=VALUE")),
    }
}

/// A session id from the command line: `sess_…` (§16.1), else a usage error.
pub fn check_id(id: &str) -> Result<()> {
    if id.starts_with("sess_") && id.len() > 5 {
        Ok(())
    } else {
        Err(usage(format!("`{id}` is not a session id (sess_…)")))
    }
}

pub async fn run(cmd: &SessionCommand, config: &Config, json_out: bool) -> Result<u8> {
    let client = Client::from_config(config).map_err(exit::client)?;
    match cmd {
        SessionCommand::Start(a) => start(&client, a, config, json_out).await,
        SessionCommand::List => list(&client, json_out).await,
        SessionCommand::Show(IdArg { id }) => {
            check_id(id)?;
            let s = client.get_session(id).await.map_err(exit::client)?;
            print_session(&s, json_out);
            Ok(match s.state {
                SessionState::Active => exit::OK,
                _ if s.closed_by_operator => exit::STOPPED,
                _ => exit::SESSION_ENDED,
            })
        }
        SessionCommand::Close(IdArg { id }) => {
            check_id(id)?;
            let s = client.close_session(id).await.map_err(exit::client)?;
            if s.closed_by_operator {
                eprintln!("{id} had been closed by the operator (this agent is stopped; see `ma2h session start`)");
            }
            if json_out {
                println!("{}", json!({ "session": s.raw }));
            } else {
                println!("{} {}", s.id, s.state.as_str());
            }
            Ok(exit::OK)
        }
    }
}

async fn start(client: &Client, a: &StartArgs, config: &Config, json_out: bool) -> Result<u8> {
    let request = RegisterSession {
        run_id: a.run_id.clone().or_else(|| config.run_id.clone()),
        label: a.label.clone(),
        kind: a.kind.clone(),
        project: a.project.clone(),
        labels: a.labels.iter().cloned().collect::<BTreeMap<_, _>>(),
        ttl_seconds: a.ttl,
    };
    let s = client.register_session(&request).await.map_err(exit::session)?;
    if json_out {
        println!("{}", json!({ "session": s.raw }));
    } else {
        println!("{}", s.id);
        let ttl = s.ttl_seconds.map(|t| format!(" (lease {t}s, renewed by use)")).unwrap_or_default();
        eprintln!("session {} active until {}{ttl}", s.address(), s.expires_at.to_rfc3339());
    }
    Ok(exit::OK)
}

async fn list(client: &Client, json_out: bool) -> Result<u8> {
    let list = client.list_sessions().await.map_err(exit::client)?;
    let scope = match list.scope {
        Some(SessionScope::Own) => "own",
        Some(SessionScope::Account) => "account",
        // §16.4: an absent scope is unknown, never "account".
        None => "unknown",
    };
    if json_out {
        let sessions: Vec<&Value> = list.sessions.iter().map(|s| &s.raw).collect();
        let mut body = json!({ "sessions": sessions });
        if list.scope.is_some() {
            body["scope"] = json!(scope);
        }
        println!("{body}");
        return Ok(exit::OK);
    }
    for s in &list.sessions {
        print_session(s, false);
    }
    eprintln!("{} session(s); scope: {scope}", list.sessions.len());
    Ok(exit::OK)
}

/// One line per session: id, state, when, and its labels.
fn print_session(s: &Session, json_out: bool) {
    if json_out {
        println!("{}", json!({ "session": s.raw }));
        return;
    }
    let when = match (&s.state, s.closed_at) {
        (SessionState::Active, _) => format!("expires {}", s.expires_at.to_rfc3339()),
        (_, Some(at)) => format!("at {}", at.to_rfc3339()),
        _ => format!("since {}", s.expires_at.to_rfc3339()),
    };
    let mut line = format!("{} {}", s.id, s.state.as_str());
    if s.closed_by_operator {
        line.push_str(" (by the operator)");
    }
    line.push(' ');
    line.push_str(&when);
    for (k, v) in [("label", &s.label), ("kind", &s.kind), ("project", &s.project), ("run_id", &s.run_id)] {
        if let Some(v) = v {
            line.push_str(&format!(" {k}={}", Value::String(v.clone())));
        }
    }
    for (k, v) in &s.labels {
        line.push_str(&format!(" {k}={}", Value::String(v.clone())));
    }
    if let Some(seen) = s.last_seen {
        line.push_str(&format!(" last_seen={}", seen.to_rfc3339()));
    }
    println!("{line}");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn label_pairs_and_session_ids_are_checked() {
        assert_eq!(parse_kv("repo=acme/web=1"), Ok(("repo".into(), "acme/web=1".into())));
        assert_eq!(parse_kv("empty="), Ok(("empty".into(), String::new())));
        assert!(parse_kv("=x").is_err() && parse_kv("novalue").is_err());
        assert!(check_id("sess_01J").is_ok());
        assert!(check_id("sess_").is_err() && check_id("msg_01").is_err());
    }
}

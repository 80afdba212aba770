//! `ma2h` — the MA2H agent CLI (spec v0.5). Configuration comes from `MA2H_HUB_URL`,
//! `MA2H_API_KEY`, `MA2H_AGENT_ID`, `MA2H_SIGNING_SECRET`, `MA2H_STATE_KEY`, `MA2H_RESOLVERS`
//! and `MA2H_SESSION` (the default `--session`); see docs/cli.md. Every outcome has its own exit
//! code ([`exit::TABLE`]).

mod audit;
mod check;
mod compose;
mod exit;
mod hook;
mod inbox;
mod listen;
mod mcp;
mod resolve;
mod session;
mod wait;

use std::process::ExitCode;

use anyhow::Result;
use clap::{Parser, Subcommand};
use ma2h_client::{CancelOutcome, Client, Config, MessageBuilder, replay::ReplayCache};
use serde_json::Value;

#[derive(Parser)]
#[command(name = "ma2h", version, about = "The MA2H agent CLI: ask a human, wait or exit, resume on the answer.",
    after_help = exit::TABLE)]
struct Cli {
    /// Machine-readable JSON on stdout.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    command: Command,
}

#[derive(clap::Args, Debug)]
struct WaitArg {
    /// Long-poll until terminal (optionally at most N seconds; exit 13 if still open).
    #[arg(long, num_args = 0..=1, default_missing_value = "0", value_name = "N")]
    wait: Option<u64>,
}

#[derive(Subcommand)]
enum Command {
    /// Send a message to another agent (§4 `to`, v0.5): an addressed notify; the ack shows the
    /// addressee's reachability, `get` its mailbox track (queued → delivered → acknowledged).
    Send {
        #[command(flatten)]
        common: compose::Common,
        #[command(flatten)]
        session: session::SubmitSession,
    },
    /// Send an informational message (§5.1).
    Notify {
        #[command(flatten)]
        common: compose::Common,
        #[command(flatten)]
        session: session::SubmitSession,
    },
    /// Ask a human to decide (§5.2); prints the id, or waits with --wait.
    Ask {
        #[command(flatten)]
        common: compose::Common,
        #[command(flatten)]
        ask: compose::AskArgs,
        #[command(flatten)]
        decision: compose::Decision,
        #[command(flatten)]
        wait: WaitArg,
        #[command(flatten)]
        session: session::SubmitSession,
    },
    /// Ask a human to do something (§5.3); prints the id, or waits with --wait.
    Task {
        #[command(flatten)]
        common: compose::Common,
        #[command(flatten)]
        task: compose::TaskArgs,
        #[command(flatten)]
        decision: compose::Decision,
        #[command(flatten)]
        wait: WaitArg,
        #[command(flatten)]
        session: session::SubmitSession,
    },
    /// Read a message (§8.2); the exit code reports its outcome.
    Get {
        /// The message id (`msg_…`) that `ask`/`task`/`notify` printed.
        id: String,
        #[command(flatten)]
        wait: WaitArg,
        /// Act at most once: record (in_reply_to, resolution_id) in the replay cache and exit 6
        /// if it was already recorded (the scheduled-pull resume path, §2.1).
        #[arg(long)]
        once: bool,
        /// Replay-cache directory for --once.
        #[arg(long)]
        state_dir: Option<std::path::PathBuf>,
    },
    /// Withdraw an open ask (§8.4); if another outcome won, reports that one.
    Cancel {
        /// The id of the open ask/task to withdraw.
        id: String,
    },
    /// Resolve an ask/task addressed to this agent (§8.8): answer, decline, complete or dismiss.
    Resolve(resolve::ResolveArgs),
    /// Verify a pushed Response (§9.2): exit 0 accepted (body on stdout), 6 duplicate, 5 rejected.
    Verify(check::VerifyArgs),
    /// Seal resume state with MA2H_STATE_KEY (§9.3).
    SealState(check::SealArgs),
    /// Verify and open sealed state (a sealed object, a Response, or a GET body) with
    /// MA2H_STATE_KEY and MA2H_AGENT_ID; prints it, or exits 7 if it was tampered with.
    OpenState(check::OpenArgs),
    /// Run a callback receiver that verifies each Response and runs a command once per resolution.
    Listen(listen::ListenArgs),
    /// Drain this agent's mailbox (§8.7): verify each directive (§9.7) — and, with --session, each
    /// response entry (§9.8) — print it, optionally ack.
    Inbox(inbox::InboxArgs),
    /// Acknowledge drained entries (§8.7, §14) by ack key: directive/message/receipt ids, response
    /// resolution ids.
    Ack(inbox::AckArgs),
    /// Sessions (§16): start, list, show, close a lease-bound address for one run of this agent.
    #[command(subcommand)]
    Session(session::SessionCommand),
    /// Print the Hub's capability document (§8.0).
    Discover,
    /// The Hub's audit ledger (issue 42): verify an export.
    #[command(subcommand)]
    Audit(audit::AuditCommand),
    /// Serve MCP over stdio for coding agents: ask_human, wait_for_answer, notify_human,
    /// assign_task, cancel_ask, list_my_open_asks, check_inbox (docs/mcp.md).
    Mcp,
    /// A permission hook for coding agents (Claude Code, Codex): read the hook event on stdin,
    /// ask a human, print allow/deny (docs/mcp.md).
    Hook(hook::HookArgs),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().expect("tokio runtime");
    match rt.block_on(run(cli)) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            let code = e.downcast_ref::<exit::Exit>().map_or(exit::FAILURE, |x| x.code);
            eprintln!("ma2h: {e:#}");
            ExitCode::from(code)
        }
    }
}

fn client(config: &Config) -> Result<Client> {
    Client::from_config(config).map_err(exit::client)
}

async fn submit(
    config: &Config,
    builder: MessageBuilder,
    as_session: &session::SubmitSession,
    to: Option<&compose::Addressed>,
    wait: Option<u64>,
    json: bool,
) -> Result<u8> {
    let mut envelope = builder.build(&compose::agent(config)?).map_err(exit::client)?;
    let client = client(config)?;
    if let Some(s) = &as_session.session {
        session::check_id(s)?;
        envelope["agent"]["session"] = s.as_str().into();
    }
    if let Some(a) = to {
        a.apply(&mut envelope)?;
    }
    let is_ask = envelope.get("type").and_then(Value::as_str) == Some("ask");
    let ack = match (client.submit(envelope).await, &as_session.session) {
        (Ok(ack), _) => ack,
        // A 410/422 may be about the session or about another field: ask the Hub which (§16.3).
        (Err(e), Some(s)) => return Err(exit::session(client.explain_session_error(s, e).await)),
        (Err(e), None) => return Err(exit::client(e)),
    };
    if to.is_some() {
        compose::check_addressed_ack(&client, is_ask, &ack.id, &ack.raw).await?;
    }
    // Issue 39: where a human answers it — on stderr, so `ID=$(ma2h ask …)` still gets the id.
    if let (false, Some(url)) = (json, &ack.review_url) {
        eprintln!("review: {url}");
    }
    match wait {
        Some(limit) => {
            eprintln!("submitted {}", ack.id);
            let body = wait::wait(&client, &ack.id, limit).await?;
            Ok(wait::report(&body, json))
        }
        None => {
            if json {
                println!("{}", ack.raw);
            } else {
                println!("{}", ack.id);
            }
            Ok(exit::OK)
        }
    }
}

/// `get --once`: record the resolution in the replay cache; `false` if it was already there.
fn first_time(id: &str, body: &Value, state_dir: Option<std::path::PathBuf>) -> Result<bool> {
    let Some(rid) = body.get("response").and_then(|r| r.get("resolution_id")).and_then(Value::as_str) else {
        return Ok(true); // still open: nothing to record
    };
    let cache = ReplayCache::open(state_dir.unwrap_or_else(ReplayCache::default_dir))?;
    let fresh = cache.mark_resolution(id, rid, ma2h_client::now_unix())?;
    if !fresh {
        eprintln!("duplicate: {id} {rid} already acted on");
    }
    Ok(fresh)
}

async fn run(cli: Cli) -> Result<u8> {
    let config = Config::from_env();
    let json = cli.json;
    match cli.command {
        Command::Send { common, session } => {
            let Some(to) = compose::Addressed::of(&common, None) else {
                return Err(exit::usage("send needs --to agent:<id> (or agent:<id>#sess_…)"));
            };
            let b = compose::apply_common(MessageBuilder::notify(&common.title), &common)?;
            submit(&config, b, &session, Some(&to), None, json).await
        }
        Command::Notify { common, session } => {
            let b = compose::apply_common(MessageBuilder::notify(&common.title), &common)?;
            let to = compose::Addressed::of(&common, None);
            submit(&config, b, &session, to.as_ref(), None, json).await
        }
        Command::Ask { common, ask, decision, wait, session } => {
            let to = compose::Addressed::of(&common, Some(&decision));
            let b = compose::ask(&common, &ask, &decision, &config)?;
            submit(&config, b, &session, to.as_ref(), wait.wait, json).await
        }
        Command::Task { common, task, decision, wait, session } => {
            let to = compose::Addressed::of(&common, Some(&decision));
            let b = compose::task(&common, &task, &decision, &config)?;
            submit(&config, b, &session, to.as_ref(), wait.wait, json).await
        }
        Command::Resolve(a) => resolve::run(&a, &config, json).await,
        Command::Get { id, wait, once, state_dir } => {
            let client = client(&config)?;
            let body = match wait.wait {
                Some(limit) => wait::wait(&client, &id, limit).await?,
                None => client.get(&id, None).await.map_err(exit::client)?,
            };
            if once && !first_time(&id, &body, state_dir)? {
                return Ok(exit::DUPLICATE);
            }
            Ok(wait::report(&body, json))
        }
        Command::Cancel { id } => match client(&config)?.cancel(&id).await.map_err(exit::client)? {
            CancelOutcome::Cancelled(body) => Ok(wait::report(&body, json)),
            CancelOutcome::AlreadyTerminal(body) => {
                eprintln!("{id} was already resolved; its outcome stands");
                Ok(wait::report(&body, json))
            }
        },
        Command::Verify(a) => check::verify_cmd(&a, &config).await,
        Command::SealState(a) => check::seal_cmd(&a, &config),
        Command::OpenState(a) => check::open_cmd(&a, &config),
        Command::Listen(a) => listen::listen(&a, &config).await,
        Command::Inbox(a) => inbox::inbox(&a, &config, json).await,
        Command::Ack(a) => inbox::ack(&a, &config, json).await,
        Command::Session(cmd) => session::run(&cmd, &config, json).await,
        Command::Mcp => mcp::serve(config).await,
        Command::Hook(a) => hook::run(&a, &config).await,
        Command::Audit(cmd) => audit::run(&cmd, &config, json).await,
        Command::Discover => {
            let hub = config.hub_url().map_err(|e| exit::usage(e.to_string()))?;
            let doc = Client::new(hub, "").map_err(exit::client)?.discover().await.map_err(exit::client)?;
            println!("{doc}");
            Ok(exit::OK)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::CommandFactory;

    /// Every argument of every subcommand, as `path --arg` for the ones without help text.
    fn undocumented(cmd: &clap::Command, path: &str, out: &mut Vec<String>) {
        for arg in cmd.get_arguments() {
            let builtin = matches!(arg.get_id().as_str(), "help" | "version");
            if !builtin && arg.get_help().is_none() {
                out.push(format!("{path} {}", arg.get_id()));
            }
        }
        for sub in cmd.get_subcommands() {
            if sub.get_about().is_none() {
                out.push(format!("{path} {} (no about)", sub.get_name()));
            }
            undocumented(sub, &format!("{path} {}", sub.get_name()), out);
        }
    }

    #[test]
    fn every_command_and_argument_has_help_text() {
        Cli::command().debug_assert();
        let mut missing = Vec::new();
        undocumented(&Cli::command(), "ma2h", &mut missing);
        assert!(missing.is_empty(), "no help text: {missing:#?}");
    }

    #[test]
    fn open_state_does_not_offer_seal_state_flags() {
        let cmd = Cli::command();
        let open = cmd.find_subcommand("open-state").unwrap();
        assert!(open.get_arguments().all(|a| a.get_id() != "generate_key"));
        let seal = cmd.find_subcommand("seal-state").unwrap();
        assert!(seal.get_arguments().any(|a| a.get_id() == "generate_key"));
    }
}

//! `ma2h hook`: a permission hook for coding agents. It reads the hook event a coding agent
//! sends on stdin — Claude Code's `PermissionRequest` or `PreToolUse`, Codex's
//! `PermissionRequest` (the same wire shape) — files a `confirm` ask describing the tool call,
//! waits up to `--timeout`, and prints the decision in the format that event expects.
//!
//! Fail closed: no answer in time gives `--on-timeout` (default deny); a Hub that cannot be
//! reached or a setup error denies (or hands back to the agent's prompt with `--on-timeout ask`),
//! never allows. A timed-out ask is cancelled, and if the human decided in the meantime that
//! decision is used (§7 first terminal wins). Values that look like secrets are replaced in the
//! title and body and the ask is marked `sensitive` (§9.6).

mod render;
mod replay;

use std::io::Read;
use std::time::Duration;

use anyhow::Result;
use clap::{Args, ValueEnum};
use ma2h_client::{CancelOutcome, Client, ClientError, Config, MessageBuilder, MessageRead};
use ma2h_protocol::envelope::{Mode, Priority};
use serde::Deserialize;
use serde_json::{Value, json};

use crate::exit;

/// The largest hook event read from stdin.
const MAX_EVENT: u64 = 4 * 1024 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Fallback {
    /// Refuse the tool call.
    Deny,
    /// Let the tool call run.
    Allow,
    /// Hand the decision back to the agent's own prompt (PermissionRequest: print nothing;
    /// PreToolUse: `ask`).
    Ask,
}

#[derive(Args, Debug)]
pub struct HookArgs {
    /// Seconds to wait for a human. Keep it below the agent's own hook timeout (Claude Code's
    /// default is 60 s): raise both together for longer waits (docs/mcp.md).
    #[arg(long, env = "MA2H_HOOK_TIMEOUT", default_value_t = 50, value_name = "S")]
    pub timeout: u64,
    /// The decision when nobody answers in time. A Hub that cannot be reached, a missing setting
    /// or a refused ask never allows: deny (or `ask` when that is this setting).
    #[arg(long, env = "MA2H_HOOK_ON_TIMEOUT", value_enum, default_value_t = Fallback::Deny)]
    pub on_timeout: Fallback,
    /// Who may answer, e.g. human:alice (repeatable; default: MA2H_RESOLVERS).
    #[arg(long = "resolver")]
    pub resolvers: Vec<String>,
    /// The ask's priority: low | normal | high | urgent.
    #[arg(long, default_value = "high")]
    pub priority: String,
    /// Read the event from this file instead of stdin (for testing a hook by hand).
    #[arg(long, value_name = "FILE")]
    pub event: Option<std::path::PathBuf>,
}

/// The fields of a hook event this hook reads (others are ignored).
#[derive(Debug, Deserialize)]
pub struct HookEvent {
    #[serde(default)]
    pub hook_event_name: Option<String>,
    pub tool_name: String,
    #[serde(default)]
    pub tool_input: Value,
    #[serde(default)]
    pub session_id: Option<String>,
    #[serde(default)]
    pub cwd: Option<String>,
    #[serde(default)]
    pub tool_use_id: Option<String>,
    #[serde(default)]
    pub permission_mode: Option<String>,
}

/// Which output shape the agent expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Event {
    PermissionRequest,
    PreToolUse,
}

impl Event {
    fn of(name: Option<&str>) -> Option<Self> {
        match name {
            None | Some("PermissionRequest") => Some(Self::PermissionRequest),
            Some("PreToolUse") => Some(Self::PreToolUse),
            Some(_) => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    Allow,
    Deny,
    Ask,
}

/// The JSON to print for `verdict` (None: print nothing, the agent's own prompt decides).
pub fn output(event: Event, verdict: Verdict, reason: &str) -> Option<Value> {
    match (event, verdict) {
        (Event::PermissionRequest, Verdict::Ask) => None,
        (Event::PermissionRequest, Verdict::Allow) => Some(json!({"hookSpecificOutput": {
            "hookEventName": "PermissionRequest", "decision": {"behavior": "allow"}}})),
        (Event::PermissionRequest, Verdict::Deny) => Some(json!({"hookSpecificOutput": {
            "hookEventName": "PermissionRequest", "decision": {"behavior": "deny", "message": reason}}})),
        (Event::PreToolUse, v) => {
            let d = match v {
                Verdict::Allow => "allow",
                Verdict::Deny => "deny",
                Verdict::Ask => "ask",
            };
            Some(json!({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": d,
                "permissionDecisionReason": reason}}))
        }
    }
}

fn fallback_verdict(f: Fallback) -> Verdict {
    match f {
        Fallback::Deny => Verdict::Deny,
        Fallback::Allow => Verdict::Allow,
        Fallback::Ask => Verdict::Ask,
    }
}

/// The verdict a terminal GET body (or a cancel's 409 body) carries; None while it is open.
pub fn verdict_of(body: &Value) -> Option<(Verdict, String)> {
    let read = MessageRead::from_json(body);
    let resolution = read.resolution();
    let r = read.response.as_ref().and_then(|r| r.response.as_ref());
    let actor = r.map_or("the Hub", |r| r.actor.as_str());
    let comment = r.and_then(|r| r.comment.as_deref()).map(|c| format!(": {c}")).unwrap_or_default();
    let id = read.id.as_deref().unwrap_or("the ask");
    let verdict = match (resolution, r.and_then(|r| r.value.as_ref()).and_then(Value::as_str)) {
        ("open" | "queued", _) => return None,
        ("answered" | "expired", Some("allow")) => Verdict::Allow,
        ("answered" | "expired", Some("deny")) => Verdict::Deny,
        // declined, cancelled, expired without a default, anything unexpected: fail closed
        _ => Verdict::Deny,
    };
    let grant = r.and_then(|r| r.grant_id.as_deref());
    let how = match (resolution, verdict) {
        ("expired", _) => format!("nobody answered in time; {id}'s default applied"),
        ("answered", Verdict::Allow) if grant.is_some() => {
            format!("allowed by the standing grant {} of {actor} via MA2H ({id})", grant.unwrap_or_default())
        }
        ("answered", _) if grant.is_some() => {
            format!("denied by the standing grant {} of {actor} via MA2H ({id})", grant.unwrap_or_default())
        }
        ("answered", Verdict::Allow) => format!("allowed by {actor} via MA2H ({id}){comment}"),
        ("answered", _) => format!("denied by {actor} via MA2H ({id}){comment}"),
        (other, _) => format!("{id} was {other} ({actor}){comment}; denied"),
    };
    Some((verdict, how))
}

pub async fn run(args: &HookArgs, config: &Config) -> Result<u8> {
    // Anything that fails before a decision exits 2: the agents treat that as a blocking error.
    let mut raw = String::new();
    match &args.event {
        Some(p) => {
            raw = std::fs::read_to_string(p).map_err(|e| exit::usage(format!("reading {}: {e}", p.display())))?;
        }
        None => {
            std::io::stdin()
                .take(MAX_EVENT)
                .read_to_string(&mut raw)
                .map_err(|e| exit::usage(format!("reading the hook event on stdin: {e}")))?;
        }
    }
    let event: HookEvent = serde_json::from_str(&raw).map_err(|e| exit::usage(format!("not a hook event: {e}")))?;
    let Some(kind) = Event::of(event.hook_event_name.as_deref()) else {
        eprintln!("ma2h hook: ignoring {:?} (handles PermissionRequest and PreToolUse)", event.hook_event_name);
        return Ok(exit::OK);
    };
    // One deadline for the whole exchange: filing (with its retries) and waiting share it.
    let deadline = tokio::time::Instant::now() + Duration::from_secs(args.timeout);
    let (verdict, reason) = match tokio::time::timeout_at(deadline, file(args, config, &event)).await {
        Err(_) => (on_error(args.on_timeout), "MA2H could not file the ask within --timeout".to_owned()),
        Ok(Err(e)) => (on_error(args.on_timeout), format!("MA2H could not ask a human ({e})")),
        Ok(Ok((client, ack))) => {
            let review = ack.review_url.as_deref().unwrap_or("see the inbox");
            eprintln!("ma2h hook: filed {} ({review}); waiting up to {} s", ack.id, args.timeout);
            settle(args, &client, &ack.id, deadline).await
        }
    };
    eprintln!("ma2h hook: {reason}");
    if let Some(out) = output(kind, verdict, &reason) {
        println!("{out}");
    }
    Ok(exit::OK)
}

/// The decision when the Hub could not be asked or lost: never allow — `--on-timeout allow`
/// means "nobody answered in time", not "the setup is broken" — so deny, or hand the call back
/// to the agent's own prompt when that is the configured fallback.
fn on_error(f: Fallback) -> Verdict {
    if f == Fallback::Ask { Verdict::Ask } else { Verdict::Deny }
}

/// File the ask. Fails before anything is sent on a missing resolver, priority or setting.
async fn file(args: &HookArgs, config: &Config, event: &HookEvent) -> Result<(Client, ma2h_client::Ack), ClientError> {
    let resolvers = if args.resolvers.is_empty() { config.resolvers.clone() } else { args.resolvers.clone() };
    if resolvers.is_empty() {
        return Err(ClientError::Config("no resolver: set MA2H_RESOLVERS or pass --resolver human:<id>".into()));
    }
    let priority = Priority::parse(&args.priority)
        .ok_or_else(|| ClientError::Config(format!("--priority {}: use low, normal, high or urgent", args.priority)))?;
    let rendered = render::render(event);
    let mut b = MessageBuilder::ask(&rendered.title, Mode::Confirm)
        .body(&rendered.body)
        .priority(priority)
        .option("allow", "Allow", None)
        .option("deny", "Deny", None)
        .tag("permission")
        .allowed_resolvers(&resolvers)
        // the ask outlives the hook by a minute; its own expiry gives the same fail-closed answer
        .expires_in(i64::try_from(args.timeout).unwrap_or(i64::MAX / 2).saturating_add(60));
    match args.on_timeout {
        Fallback::Allow => b = b.default_on_expire("allow".into()),
        Fallback::Deny => b = b.default_on_expire("deny".into()),
        Fallback::Ask => {}
    }
    if rendered.sensitive {
        b = b.sensitive(true);
    } else if let Some(key) = render::grant_key(event) {
        // issue 40: a human may let their answer stand for later calls of the same kind
        b = b.grant_key(&key);
    }
    let agent = crate::compose::agent(config).map_err(|e| ClientError::Config(e.to_string()))?;
    let envelope = match render::idempotency_key(event) {
        // §8.1: a replayed tool call re-sends the bytes first sent (same key, same expiry)
        Some(key) => {
            b = b.idempotency_key(&key);
            let dir = ma2h_client::ReplayCache::default_dir().join("hook");
            replay::envelope(&dir, &key, || b.build(&agent))?
        }
        None => b.build(&agent)?,
    };
    let mut client = Client::from_config(config)?;
    // a hook has a deadline: retry a lost submit (same key, §8.1) only within it
    client.retry.max_total = Duration::from_secs(args.timeout.min(30));
    let ack = client.submit(envelope).await?;
    Ok((client, ack))
}

/// Wait for the human until `deadline`; then withdraw the ask (§8.4) so nobody answers a question
/// nobody waits for — unless a decision won the race, which stands (§7).
async fn settle(args: &HookArgs, client: &Client, id: &str, deadline: tokio::time::Instant) -> (Verdict, String) {
    let left = deadline.saturating_duration_since(tokio::time::Instant::now());
    let grace = Duration::from_secs(5);
    let mut lost = None;
    match tokio::time::timeout_at(deadline + grace, client.wait_terminal(id, Some(left), |_| {})).await {
        Ok(Ok(body)) => {
            if let Some(v) = verdict_of(&body) {
                return v;
            }
        }
        Ok(Err(e)) => lost = Some(e.to_string()),
        Err(_) => {}
    }
    let bounded = Duration::from_secs(10);
    match tokio::time::timeout(bounded, client.cancel(id)).await {
        Ok(Ok(CancelOutcome::AlreadyTerminal(conflict))) => {
            let full = tokio::time::timeout(bounded, client.get(id, None)).await.ok().and_then(Result::ok);
            full.as_ref()
                .or(Some(&conflict))
                .and_then(verdict_of)
                .unwrap_or_else(|| (on_error(args.on_timeout), format!("{id} was decided but could not be read back")))
        }
        Ok(Ok(CancelOutcome::Cancelled(_))) => match lost {
            None => {
                let why = format!("nobody answered {id} within {} s; --on-timeout {:?}", args.timeout, args.on_timeout);
                (fallback_verdict(args.on_timeout), why.to_lowercase())
            }
            Some(e) => (on_error(args.on_timeout), format!("lost the Hub while waiting for {id} ({e}); withdrew it")),
        },
        _ => (
            on_error(args.on_timeout),
            format!("no answer to {id}, and it could not be withdrawn: it may still show in the inbox"),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_event_gets_the_shape_its_agent_reads() {
        let allow = output(Event::PermissionRequest, Verdict::Allow, "ok").unwrap();
        assert_eq!(allow["hookSpecificOutput"]["decision"], json!({"behavior": "allow"}));
        let deny = output(Event::PermissionRequest, Verdict::Deny, "no").unwrap();
        assert_eq!(deny["hookSpecificOutput"]["decision"], json!({"behavior": "deny", "message": "no"}));
        assert_eq!(output(Event::PermissionRequest, Verdict::Ask, "x"), None);
        let pre = output(Event::PreToolUse, Verdict::Ask, "later").unwrap();
        assert_eq!(pre["hookSpecificOutput"]["hookEventName"], "PreToolUse");
        assert_eq!(pre["hookSpecificOutput"]["permissionDecision"], "ask");
        assert_eq!(pre["hookSpecificOutput"]["permissionDecisionReason"], "later");
        assert_eq!(Event::of(Some("PostToolUse")), None);
        assert_eq!(Event::of(None), Some(Event::PermissionRequest));
    }

    #[test]
    fn only_an_answered_or_defaulted_allow_allows() {
        let body = |res: &str, value: Option<&str>| {
            json!({"id": "msg_1", "status": res, "response": {"ma2h_version": "0.5", "in_reply_to": "msg_1",
                "resolution_id": "res_1", "resolution": res, "defaulted": false,
                "response": {"value": value, "actor": "human:alice", "comment": "fine",
                    "resolved_at": "2026-06-04T12:00:00Z"}}})
        };
        let (v, why) = verdict_of(&body("answered", Some("allow"))).unwrap();
        assert_eq!(v, Verdict::Allow);
        assert!(why.contains("allowed by human:alice") && why.contains("fine"), "{why}");
        assert_eq!(verdict_of(&body("answered", Some("deny"))).unwrap().0, Verdict::Deny);
        assert_eq!(verdict_of(&body("expired", Some("allow"))).unwrap().0, Verdict::Allow);
        assert_eq!(verdict_of(&body("expired", None)).unwrap().0, Verdict::Deny);
        assert_eq!(verdict_of(&body("declined", None)).unwrap().0, Verdict::Deny);
        assert_eq!(verdict_of(&body("cancelled", None)).unwrap().0, Verdict::Deny);
        assert_eq!(verdict_of(&json!({"id": "msg_1", "status": "open"})), None);
        // issue 40: an answer from a standing grant says so
        let granted = json!({"id": "msg_2", "status": "answered", "response": {"ma2h_version": "0.5", "in_reply_to": "msg_2",
            "resolution_id": "res_2", "agent": {"id": "a", "run_id": "r"}, "resolution": "answered",
            "response": {"value": "allow", "actor": "human:alice", "resolved_at": "2026-01-01T00:00:00Z", "grant_id": "grt_7"}}});
        let (v, how) = verdict_of(&granted).unwrap();
        assert_eq!(v, Verdict::Allow);
        assert!(how.contains("standing grant grt_7 of human:alice"), "{how}");
    }
}

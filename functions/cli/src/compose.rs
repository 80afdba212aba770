//! `ma2h notify|ask|task` flags → a [`MessageBuilder`] (§4–§5).

use anyhow::{Context, Result};
use clap::Args;
use ma2h_client::builder::AgentRef;
use ma2h_client::{Config, MessageBuilder, StateKey, seal};
use ma2h_protocol::envelope::{Callback, CallbackAuth, CallbackMode, CallbackScheme, Mode, Permissions, Priority};
use serde_json::Value;

use crate::exit::usage;

/// Fields every verb shares (§4).
#[derive(Args, Debug)]
pub struct Common {
    /// One line for the inbox list (≤ 200 chars).
    pub title: String,
    /// Human-readable detail (Markdown).
    #[arg(long)]
    pub body: Option<String>,
    /// low | normal | high | urgent (default normal).
    #[arg(long)]
    pub priority: Option<String>,
    /// The project this agent works for (§4.1 `agent.project`; the inbox shows and filters it).
    #[arg(long, env = "MA2H_PROJECT")]
    pub project: Option<String>,
    /// Mark the message sensitive (§9.6): its values stay out of exports and telemetry.
    #[arg(long)]
    pub sensitive: bool,
    /// This run's id (§4.1 `agent.run_id`; default: MA2H_RUN_ID, GITHUB_RUN_ID, else random).
    #[arg(long)]
    pub run_id: Option<String>,
    /// An opaque correlation label of yours (§4 `client_ref`): returned to you, never shown to
    /// resolvers, never used for dedup.
    #[arg(long)]
    pub client_ref: Option<String>,
    /// A filter label (repeatable).
    #[arg(long = "tag")]
    pub tags: Vec<String>,
    /// A text context Part (repeatable).
    #[arg(long = "context-text")]
    pub context_text: Vec<String>,
    /// A data context Part, JSON (repeatable).
    #[arg(long = "context-data")]
    pub context_data: Vec<String>,
    /// A file context Part by URI (repeatable).
    #[arg(long = "context-file")]
    pub context_file: Vec<String>,
    /// §8.1 dedup key (default: generated for ask/task; reuse it to recover a lost ack).
    #[arg(long)]
    pub idempotency_key: Option<String>,
    /// Address another agent instead of the human inbox (§4, v0.5): `agent:<id>` (any of its
    /// sessions) or `agent:<id>#sess_…` (one session). Without --resolver, only the addressee
    /// may resolve an addressed ask/task (§9.1).
    #[arg(long, value_name = "ADDRESS")]
    pub to: Option<String>,
}

/// Fields of the verbs that get a Response (ask/task).
#[derive(Args, Debug)]
pub struct Decision {
    /// Who may resolve, e.g. human:alice (repeatable; default: MA2H_RESOLVERS, comma-separated).
    #[arg(long = "resolver")]
    pub resolvers: Vec<String>,
    /// Submit without any resolver: then only this agent itself may resolve it (§9.1's
    /// fail-closed default) — no human can answer. Without this flag the CLI refuses.
    #[arg(long)]
    pub self_resolvable: bool,
    /// Auto-resolve after this long: 90s, 30m, 2h, 1d (or plain seconds).
    #[arg(long, conflicts_with = "expires_at")]
    pub expires_in: Option<String>,
    /// Auto-resolve at this RFC 3339 time.
    #[arg(long)]
    pub expires_at: Option<String>,
    /// Resume state, JSON (sealed with MA2H_STATE_KEY unless --no-seal, §9.3).
    #[arg(long, conflicts_with = "state_file")]
    pub state: Option<String>,
    /// Resume state from a JSON file.
    #[arg(long)]
    pub state_file: Option<std::path::PathBuf>,
    /// Send --state as-is instead of sealing it (low-sensitivity state only).
    #[arg(long)]
    pub no_seal: bool,
    /// Push the Response to this re-invoke URL (§2.1, §8.3); the host must be bound by an operator.
    #[arg(long)]
    pub callback_url: Option<String>,
    /// hmac | bearer | apikey (default hmac when --callback-secret-ref is given).
    #[arg(long)]
    pub callback_scheme: Option<String>,
    /// Name of a secret registered for this agent, used to sign pushes (hmac).
    #[arg(long)]
    pub callback_secret_ref: Option<String>,
    /// Name of a registered token sent with pushes (bearer/apikey).
    #[arg(long)]
    pub callback_token_ref: Option<String>,
}

pub fn agent(config: &Config) -> Result<AgentRef> {
    let id = config.agent_id().map_err(|e| usage(e.to_string()))?;
    Ok(AgentRef::new(id, config.run_id.clone(), config.runtime.clone()))
}

fn json_arg(what: &str, s: &str) -> Result<Value> {
    let text = match s.strip_prefix('@') {
        Some(path) => std::fs::read_to_string(path).with_context(|| format!("reading {path}"))?,
        None => s.to_owned(),
    };
    serde_json::from_str(&text).map_err(|e| usage(format!("{what} is not valid JSON: {e}")))
}

/// `90`, `90s`, `30m`, `2h`, `1d` → seconds.
pub fn parse_duration(s: &str) -> Result<i64> {
    let s = s.trim();
    let (num, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: i64 = num.parse().map_err(|_| usage(format!("`{s}` is not a duration like 90s, 30m, 2h, 1d")))?;
    let mult = match unit {
        "" | "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86400,
        _ => return Err(usage(format!("`{s}`: unknown unit `{unit}` (use s, m, h or d)"))),
    };
    Ok(n * mult)
}

pub fn apply_common(mut b: MessageBuilder, c: &Common) -> Result<MessageBuilder> {
    if let Some(body) = &c.body {
        b = b.body(body);
    }
    if let Some(p) = &c.project {
        b = b.project(p);
    }
    if c.sensitive {
        b = b.sensitive(true);
    }
    if let Some(r) = &c.run_id {
        b = b.run_id(r);
    }
    if let Some(r) = &c.client_ref {
        b = b.client_ref(r);
    }
    if let Some(p) = &c.priority {
        b = b.priority(
            Priority::parse(p).ok_or_else(|| usage(format!("--priority `{p}`: use low|normal|high|urgent")))?,
        );
    }
    for t in &c.tags {
        b = b.tag(t);
    }
    for t in &c.context_text {
        b = b.context_text(t);
    }
    for d in &c.context_data {
        b = b.context_data(json_arg("--context-data", d)?);
    }
    for f in &c.context_file {
        b = b.context_file(f, None, None);
    }
    if let Some(k) = &c.idempotency_key {
        b = b.idempotency_key(k);
    }
    Ok(b)
}

/// §9.1: with no `allowed_resolvers` only the submitter may resolve a human-inbox ask/task, so
/// the human it was meant for cannot answer. Refuse that unless the caller says it is intended.
/// An addressed one (`--to`) defaults to its addressee instead.
pub fn check_resolvers(c: &Common, d: &Decision, config: &Config) -> Result<()> {
    if c.to.is_some() || d.self_resolvable || !d.resolvers.is_empty() || !config.resolvers.is_empty() {
        return Ok(());
    }
    Err(usage(
        "no resolvers: without --resolver (or MA2H_RESOLVERS) no human may answer this — only this agent \
         itself could resolve it (§9.1). Name who may answer, e.g. --resolver human:alice or \
         `export MA2H_RESOLVERS=human:alice,human:bob`; pass --self-resolvable if that is really intended."
            .to_owned(),
    ))
}

pub fn apply_decision(mut b: MessageBuilder, d: &Decision, config: &Config) -> Result<MessageBuilder> {
    let resolvers = if d.resolvers.is_empty() { &config.resolvers } else { &d.resolvers };
    b = b.allowed_resolvers(resolvers);
    if let Some(e) = &d.expires_in {
        b = b.expires_in(parse_duration(e)?);
    }
    if let Some(at) = &d.expires_at {
        b = b.expires_at(at);
    }
    let state = match (&d.state, &d.state_file) {
        (Some(s), _) => Some(json_arg("--state", s)?),
        (None, Some(p)) => Some(json_arg("--state-file", &format!("@{}", p.display()))?),
        _ => None,
    };
    if let Some(state) = state {
        b = b.state(if d.no_seal {
            state
        } else {
            let key = StateKey::parse(config.state_key().map_err(|e| usage(format!("{e}; or pass --no-seal")))?)
                .map_err(|e| usage(e.to_string()))?;
            seal::seal(&key, config.agent_id().map_err(|e| usage(e.to_string()))?, &state)
        });
    }
    if let Some(url) = &d.callback_url {
        let scheme = match d.callback_scheme.as_deref() {
            None if d.callback_secret_ref.is_some() => Some(CallbackScheme::Hmac),
            None => None,
            Some("hmac") => Some(CallbackScheme::Hmac),
            Some("bearer") => Some(CallbackScheme::Bearer),
            Some("apikey") => Some(CallbackScheme::Apikey),
            Some(s) => return Err(usage(format!("--callback-scheme `{s}`: use hmac|bearer|apikey"))),
        };
        let auth = scheme.map(|scheme| CallbackAuth {
            scheme,
            secret_ref: d.callback_secret_ref.clone(),
            token_ref: d.callback_token_ref.clone(),
        });
        b = b.callback(Callback { mode: CallbackMode::Push, url: Some(url.clone()), auth });
    }
    Ok(b)
}

/// `ask` specifics (§5.2).
#[derive(Args, Debug)]
pub struct AskArgs {
    /// select | confirm | input (default: input with --schema, select with --option, else confirm).
    #[arg(long)]
    pub mode: Option<String>,
    /// An option `VALUE[=LABEL]` (repeatable).
    #[arg(long = "option")]
    pub options: Vec<String>,
    /// Flat JSON Schema for input mode (JSON or @file).
    #[arg(long)]
    pub schema: Option<String>,
    /// Applied on expiry: an option value, or JSON (an input object, or null).
    #[arg(long)]
    pub default_on_expire: Option<String>,
    /// Remove the answer affordance (the human may only decline).
    #[arg(long)]
    pub no_respond: bool,
    /// Remove the decline/ignore affordance.
    #[arg(long)]
    pub no_ignore: bool,
    /// Do not offer editing the proposed value (`allow_edit: false`).
    #[arg(long)]
    pub no_edit: bool,
    /// Do not offer accepting the proposed value as-is (`allow_accept: false`).
    #[arg(long)]
    pub no_accept: bool,
    /// Input mode: propose a value for one field, `NAME=VALUE` (VALUE as JSON, else a string;
    /// repeatable). The inbox pre-fills it; the human accepts it as-is or edits it, and the
    /// Response says which (`edited`).
    #[arg(long = "proposed", value_name = "NAME=VALUE")]
    pub proposed: Vec<String>,
}

pub fn ask(c: &Common, a: &AskArgs, d: &Decision, config: &Config) -> Result<MessageBuilder> {
    check_resolvers(c, d, config)?;
    let mode = match a.mode.as_deref() {
        Some("select") => Mode::Select,
        Some("confirm") => Mode::Confirm,
        Some("input") => Mode::Input,
        Some(m) => return Err(usage(format!("--mode `{m}`: use select|confirm|input"))),
        None if a.schema.is_some() => Mode::Input,
        None if a.options.is_empty() => Mode::Confirm,
        None => Mode::Select,
    };
    let mut b = MessageBuilder::ask(&c.title, mode);
    for o in &a.options {
        let (value, label) = o.split_once('=').unwrap_or((o, o));
        b = b.option(value, label, None);
    }
    if let Some(s) = &a.schema {
        b = b.schema(propose(json_arg("--schema", s)?, &a.proposed)?);
    } else if !a.proposed.is_empty() {
        return Err(usage("--proposed needs an input-mode ask (--schema): it pre-fills the form's fields"));
    }
    if let Some(d) = &a.default_on_expire {
        // a bare option value, or JSON (object for input mode, or null)
        b = b.default_on_expire(serde_json::from_str(d).unwrap_or_else(|_| Value::String(d.clone())));
    }
    if a.no_respond || a.no_ignore || a.no_edit || a.no_accept {
        b = b.permissions(Permissions {
            allow_respond: !a.no_respond,
            allow_ignore: !a.no_ignore,
            allow_edit: !a.no_edit,
            allow_accept: !a.no_accept,
        });
    }
    apply_decision(apply_common(b, c)?, d, config)
}

/// The proposal travels as each property's JSON Schema `default` (an annotation the flat schema
/// allows, §5.2), so any Hub or client reads it without an extension field.
fn propose(mut schema: Value, proposed: &[String]) -> Result<Value> {
    for p in proposed {
        let Some((name, raw)) = p.split_once('=') else {
            return Err(usage(format!("--proposed `{p}`: use NAME=VALUE")));
        };
        let Some(prop) = schema.get_mut("properties").and_then(|ps| ps.get_mut(name)).and_then(Value::as_object_mut)
        else {
            return Err(usage(format!("--proposed `{name}`: the schema has no property `{name}`")));
        };
        // Typed by the schema: a string field keeps `1234` as text; other fields read JSON.
        let stringy = prop.get("type").and_then(Value::as_str) == Some("string")
            || prop.get("enum").and_then(Value::as_array).is_some_and(|e| e.contains(&Value::String(raw.to_owned())));
        let value = if stringy {
            Value::String(raw.to_owned())
        } else {
            serde_json::from_str(raw).unwrap_or_else(|_| Value::String(raw.to_owned()))
        };
        prop.insert("default".into(), value);
    }
    Ok(schema)
}

/// `task` specifics (§5.3).
#[derive(Args, Debug)]
pub struct TaskArgs {
    /// What the human should do.
    #[arg(long)]
    pub instructions: String,
    /// A checklist item (repeatable).
    #[arg(long = "check")]
    pub checklist: Vec<String>,
    /// How the human verifies it is done.
    #[arg(long)]
    pub verification: Option<String>,
}

pub fn task(c: &Common, t: &TaskArgs, d: &Decision, config: &Config) -> Result<MessageBuilder> {
    check_resolvers(c, d, config)?;
    let mut b = MessageBuilder::task(&c.title, &t.instructions);
    for item in &t.checklist {
        b = b.checklist_item(item);
    }
    if let Some(v) = &t.verification {
        b = b.verification(v);
    }
    apply_decision(apply_common(b, c)?, d, config)
}

/// An addressed submit (`--to`, §4 v0.5).
pub struct Addressed {
    pub to: String,
    /// An explicit `--resolver` was given; otherwise the addressee is the default resolver (§9.1)
    /// and no MA2H_RESOLVERS default applies.
    pub explicit_resolvers: bool,
}

impl Addressed {
    pub fn of(common: &Common, decision: Option<&Decision>) -> Option<Self> {
        common
            .to
            .as_ref()
            .map(|to| Self { to: to.clone(), explicit_resolvers: decision.is_some_and(|d| !d.resolvers.is_empty()) })
    }

    /// Set `to` on a built envelope (and drop an inherited MA2H_RESOLVERS default).
    pub fn apply(&self, envelope: &mut serde_json::Value) -> Result<()> {
        if ma2h_protocol::inter_agent::Destination::parse(&self.to).is_none() {
            return Err(usage(format!("--to `{}`: use agent:<id> or agent:<id>#sess_…", self.to)));
        }
        envelope["to"] = self.to.clone().into();
        if !self.explicit_resolvers {
            for block in ["request", "action"] {
                if let Some(b) = envelope.get_mut(block).and_then(serde_json::Value::as_object_mut) {
                    b.remove("allowed_resolvers");
                }
            }
        }
        Ok(())
    }
}

/// §8.1 misroute detector (sender MUST): an addressed submit's ack without `destination` came
/// from a pre-0.5 Hub that put the message in a human inbox. Cancel a misrouted ask and fail.
pub async fn check_addressed_ack(
    client: &ma2h_client::Client,
    is_ask: bool,
    id: &str,
    ack: &serde_json::Value,
) -> Result<()> {
    match ack.get("destination") {
        Some(d) => {
            let state = d.get("state").and_then(serde_json::Value::as_str).unwrap_or("unknown");
            let seen = d.get("last_seen").and_then(serde_json::Value::as_str);
            eprintln!("destination: {state}{}", seen.map(|s| format!(" (last seen {s})")).unwrap_or_default());
            Ok(())
        }
        None => {
            if is_ask {
                let _ = client.cancel(id).await;
            }
            Err(crate::exit::fail(
                crate::exit::HUB_ERROR,
                format!(
                    "{id}: the Hub's ack has no `destination` — it does not route `to` (pre-0.5?), so the message went to a human inbox; an ask was cancelled (§8.1)"
                ),
            ))
        }
    }
}

//! The tools. Each files or reads through the same `ma2h-client` the CLI uses, so an MCP ask is
//! an ordinary MA2H ask: the human answers it in the inbox (or by API), first terminal wins (§7).

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use ma2h_client::MessageRead;
use ma2h_client::inbox::EntryVerifier;
use ma2h_client::{
    AckOptions, CancelOutcome, Client, ClientError, Config, DrainOptions, DrainVerdict, MessageBuilder, ReplayCache,
    VerifiedEntry, builder::AgentRef, verify,
};
use ma2h_protocol::envelope::Mode;
use rmcp::handler::server::{router::tool::ToolRouter, wrapper::Parameters};
use rmcp::model::{CallToolResult, Implementation, ProgressNotificationParam, ServerCapabilities, ServerConfig};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, tool, tool_handler, tool_router};
use serde_json::{Value, json};

use super::ledger::{Filed, Ledger};
use super::params::{self, AskMode, Common, ContextPart};
use super::{error_body, outcome};

/// The longest single `wait_for_answer` call: inside every MCP client's tool timeout (60 s+).
pub const MAX_WAIT: u32 = 50;
const DEFAULT_WAIT: u32 = 45;
/// One long-poll slice: a progress notification goes out after each.
const SLICE: u32 = 10;

type ToolResult = Result<CallToolResult, ErrorData>;

#[derive(Clone)]
pub struct HubTools {
    config: Arc<Config>,
    project: Option<String>,
    state_dir: PathBuf,
    ledger: Arc<Ledger>,
    /// Built once at start (its HTTPS client loads the trust roots); `None` while the
    /// configuration is incomplete — each call then reports what is missing.
    client: Option<Arc<Client>>,
    #[expect(dead_code, reason = "read by the #[tool_handler] expansion")]
    tool_router: ToolRouter<Self>,
}

fn ok(v: Value) -> ToolResult {
    Ok(CallToolResult::structured(v))
}

fn failed(e: &ClientError) -> ToolResult {
    Ok(CallToolResult::structured_error(error_body(e)))
}

fn refuse(code: &str, message: impl Into<String>) -> ToolResult {
    Ok(CallToolResult::structured_error(json!({"error": {"code": code, "message": message.into()}})))
}

/// An `id` argument that can never be a message id is the model's mistake, refused before any
/// request; any other is sent as one encoded path segment, so it cannot reach another path.
fn bad_id(id: &str) -> Option<ToolResult> {
    ma2h_client::client::check_id(id).err().map(|_| {
        refuse("validation_error", format!("`id` must be a message id as ask_human returned it (msg_…), not {id:?}"))
    })
}

impl HubTools {
    pub fn new(config: Config, state_dir: PathBuf) -> Self {
        let agent = config.agent_id.clone().unwrap_or_default();
        let project = std::env::var("MA2H_PROJECT").ok().filter(|p| !p.trim().is_empty());
        Self {
            client: super::client(&config).ok().map(Arc::new),
            ledger: Arc::new(Ledger::new(state_dir.clone(), &agent)),
            config: Arc::new(config),
            project,
            state_dir,
            tool_router: Self::tool_router(),
        }
    }

    /// What is missing from the environment, if anything (reported by every tool call too).
    pub fn config_problem(&self) -> Option<String> {
        self.client().err().map(|e| e.to_string())
    }

    /// The Hub client built at start, or the configuration error.
    fn client(&self) -> Result<Arc<Client>, ClientError> {
        match &self.client {
            Some(c) => Ok(c.clone()),
            None => super::client(&self.config).map(Arc::new),
        }
    }

    fn agent(&self) -> Result<AgentRef, ClientError> {
        Ok(AgentRef::new(self.config.agent_id()?, self.config.run_id.clone(), self.config.runtime.clone()))
    }

    fn common(&self, mut b: MessageBuilder, c: &Common) -> MessageBuilder {
        if let Some(body) = &c.body {
            b = b.body(body);
        }
        if let Some(p) = c.priority {
            b = b.priority(priority(p));
        }
        if let Some(p) = &self.project {
            b = b.project(p);
        }
        if c.sensitive {
            b = b.sensitive(true);
        }
        for t in &c.tags {
            b = b.tag(t);
        }
        for part in &c.context {
            b = match part {
                ContextPart::Text { text } => b.context_text(text),
                ContextPart::Data { data } => b.context_data(data.clone()),
                ContextPart::File { uri, name, mime_type } => {
                    b.context_file(uri, name.as_deref(), mime_type.as_deref())
                }
            };
        }
        b
    }

    /// §9.1: without `allowed_resolvers` only this agent could answer its own ask, so an ask
    /// with no resolver (none given, none in `MA2H_RESOLVERS`) is refused here.
    fn resolvers<'a>(&'a self, given: &'a [String]) -> Option<&'a [String]> {
        let r = if given.is_empty() { self.config.resolvers.as_slice() } else { given };
        (!r.is_empty()).then_some(r)
    }

    /// `expires_in` and, for a caller-keyed ask/task, the key with the times of its first attempt
    /// (§8.1: a retry must repeat the payload, `created_at` and `expires_at` included).
    /// An unwritable state directory does not stop the filing (a later retry may then be refused
    /// with 409 `idempotency_conflict`, which the model sees).
    async fn retry_stamp(&self, b: MessageBuilder, key: Option<&str>, expires_in: Option<u32>) -> MessageBuilder {
        let fresh = |b: MessageBuilder| match expires_in {
            Some(secs) => b.expires_in(i64::from(secs)),
            None => b,
        };
        // Without the model's key, one of ours — recorded like the model's, so that a call that
        // gives up on a slow Hub can hand it back for a retry that files no second ask (§8.1).
        let generated;
        let key = match key {
            Some(k) => k,
            None => {
                generated = format!("mcp-{}", ma2h_client::client::random_token(12));
                generated.as_str()
            }
        };
        let b = b.idempotency_key(key);
        match self.ledger.stamp(key, expires_in).await {
            Ok(stamp) => {
                let b = b.created_at(&stamp.created_at);
                match &stamp.expires_at {
                    Some(at) => b.expires_at(at),
                    None => b,
                }
            }
            Err(e) => {
                eprintln!("ma2h mcp: could not record the idempotency key in {}: {e}", self.state_dir.display());
                fresh(b)
            }
        }
    }

    /// Build, submit, remember. `title`/`kind` go to the ledger for `list_my_open_asks`.
    async fn file(&self, b: MessageBuilder, expects_answer: bool) -> ToolResult {
        match self.try_file(b, expects_answer).await {
            Ok(body) => ok(body),
            // The submit may have landed (a lost reply): the same key and arguments recover it.
            Err((e, Some(key))) if transient(&e) => {
                let mut body = error_body(&e);
                body["error"]["idempotency_key"] = key.into();
                body["error"]["retry"] = "call again with the same arguments and this idempotency_key: \
                    it returns the same ask if this one was filed, never a second"
                    .into();
                Ok(CallToolResult::structured_error(body))
            }
            Err((e, _)) => failed(&e),
        }
    }

    async fn try_file(&self, b: MessageBuilder, expects_answer: bool) -> Result<Value, (ClientError, Option<String>)> {
        let client = self.client().map_err(|e| (e, None))?;
        let envelope = match b.build(&self.agent().map_err(|e| (e, None))?) {
            Ok(e) => e,
            // the arguments broke a §4–§5 rule: the model's mistake, not a configuration problem
            Err(ClientError::Config(m)) => return Err((ClientError::Hub(Box::new(invalid_arguments(m))), None)),
            Err(e) => return Err((e, None)),
        };
        let title = envelope.get("title").and_then(Value::as_str).unwrap_or_default().to_owned();
        let kind = envelope.get("type").and_then(Value::as_str).unwrap_or_default().to_owned();
        let key = envelope.get("idempotency_key").and_then(Value::as_str).map(str::to_owned);
        let ack = client.submit(envelope).await.map_err(|e| (e, key))?;
        if expects_answer {
            let entry = Filed {
                id: ack.id.clone(),
                kind,
                title,
                filed_at: chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
                review_url: ack.review_url.clone(),
            };
            if let Err(e) = self.ledger.add(entry).await {
                eprintln!("ma2h mcp: could not record {} in {}: {e}", ack.id, self.state_dir.display());
            }
        }
        Ok(outcome::of_ack(&ack, expects_answer))
    }

    /// A GET body as the model's outcome, with the title/review URL from the ledger; a terminal
    /// outcome is forgotten from the ledger.
    async fn outcome_of(&self, body: &Value) -> Value {
        let mut o = outcome::of_body(body);
        let id = o["id"].as_str().unwrap_or_default().to_owned();
        if let Some(f) = self.ledger.find(&id).await {
            o["title"] = f.title.into();
            if let Some(u) = f.review_url {
                o["review_url"] = u.into();
            }
        }
        if !matches!(o["outcome"].as_str(), Some("open" | "queued")) {
            let _ = self.ledger.forget(&[id]).await;
        }
        o
    }
}

/// Arguments that fail the message rules, reported like the Hub's own 400 (§8.5) — checked
/// locally, before anything is sent.
fn invalid_arguments(message: String) -> ma2h_client::HubErrorBody {
    let body = json!({"error": {"code": "validation_error", "message": message}});
    ma2h_client::HubErrorBody { status: 400, code: "validation_error".into(), message, body }
}

/// Worth another try within the same call: the network, the Hub's 5xx, its rate limit.
fn transient(e: &ClientError) -> bool {
    match e {
        ClientError::Unreachable { .. } => true,
        ClientError::Hub(h) => h.status >= 500 || h.status == 429,
        _ => false,
    }
}

fn priority(p: params::Priority) -> ma2h_protocol::envelope::Priority {
    use ma2h_protocol::envelope::Priority as P;
    match p {
        params::Priority::Low => P::Low,
        params::Priority::Normal => P::Normal,
        params::Priority::High => P::High,
        params::Priority::Urgent => P::Urgent,
    }
}

#[tool_router]
impl HubTools {
    #[tool(description = "Ask a human to decide something and get a request id back at once. The human may \
        answer minutes or hours later, from a phone or the web inbox. Then call wait_for_answer with the id. \
        Use it before irreversible or risky actions (deploys, deletions, spending, messages to people) or when \
        you need a choice only a person can make.")]
    async fn ask_human(&self, Parameters(p): Parameters<params::AskHuman>) -> ToolResult {
        let Some(resolvers) = self.resolvers(&p.resolvers) else {
            return refuse(
                "no_resolver",
                "nobody may answer this ask: pass `resolvers` (e.g. [\"human:alice\"]) or set MA2H_RESOLVERS for the MCP server",
            );
        };
        let mode = match p.mode {
            AskMode::Confirm => Mode::Confirm,
            AskMode::Select => Mode::Select,
            AskMode::Input => Mode::Input,
        };
        let mut b = self.common(MessageBuilder::ask(&p.common.title, mode), &p.common);
        for o in &p.options {
            b = b.option(&o.value, &o.label, o.description.as_deref());
        }
        if let Some(s) = p.schema {
            b = b.schema(s);
        }
        b = self.retry_stamp(b, p.idempotency_key.as_deref(), p.expires_in).await;
        if let Some(d) = p.default_on_expire {
            b = b.default_on_expire(d);
        }
        if let Some(k) = p.grant_key.as_deref().map(str::trim).filter(|k| !k.is_empty()) {
            b = b.grant_key(k);
        }
        b = b.allowed_resolvers(resolvers);
        self.file(b, true).await
    }

    #[tool(description = "Wait for the human's answer to an ask or task filed with ask_human or assign_task. \
        Waits at most max_wait_seconds (≤ 50) and returns the outcome: answered (with value), completed, \
        declined, dismissed, expired (possibly with the default applied) or cancelled — or `open`: then call \
        it again with the same id.")]
    async fn wait_for_answer(
        &self,
        Parameters(p): Parameters<params::WaitForAnswer>,
        ctx: RequestContext<RoleServer>,
    ) -> ToolResult {
        if let Some(refused) = bad_id(&p.id) {
            return refused;
        }
        let client = match self.client() {
            Ok(c) => c,
            Err(e) => return failed(&e),
        };
        let limit = p.max_wait_seconds.unwrap_or(DEFAULT_WAIT).clamp(1, MAX_WAIT);
        let token = ctx.meta.get_progress_token();
        let started = tokio::time::Instant::now();
        let deadline = started + Duration::from_secs(u64::from(limit));
        let progress = |waited: u64| {
            token.clone().map(|t| {
                ProgressNotificationParam::new(t, waited as f64)
                    .with_total(f64::from(limit))
                    .with_message(format!("{} still open after {waited}s", p.id))
            })
        };
        if let Some(note) = progress(0) {
            let _ = ctx.peer.notify_progress(note).await;
        }
        let mut last: Option<Value> = None;
        loop {
            let left = deadline.saturating_duration_since(tokio::time::Instant::now());
            let slice = (left.as_millis().div_ceil(1000) as u32).min(SLICE);
            let polled_at = tokio::time::Instant::now();
            // every poll ends by the deadline (plus a moment for the Hub's answer), whatever the network does
            let poll = tokio::time::timeout_at(deadline + Duration::from_secs(2), client.get(&p.id, Some(slice)));
            let result = tokio::select! {
                r = poll => r,
                () = ctx.ct.cancelled() => return refuse("cancelled", "the client cancelled the wait; the ask is still open"),
            };
            match result {
                Ok(Ok(body)) => {
                    let open =
                        matches!(MessageRead::from_json(&body).status.as_deref(), Some("open" | "queued") | None);
                    if !open {
                        return ok(self.outcome_of(&body).await);
                    }
                    last = Some(body);
                }
                // transient (unreachable, 5xx, 429): try again while there is time
                Ok(Err(e)) if transient(&e) && tokio::time::Instant::now() + Duration::from_secs(1) < deadline => {}
                Ok(Err(e)) => return failed(&e),
                Err(_) => {}
            }
            if tokio::time::Instant::now() >= deadline {
                let body = last.unwrap_or_else(|| json!({"id": p.id, "status": "open"}));
                return ok(self.outcome_of(&body).await);
            }
            // a Hub that answered early (or not at all) is not asked again at once
            tokio::time::sleep_until(polled_at + Duration::from_secs(1)).await;
            if let Some(note) = progress(started.elapsed().as_secs()) {
                let _ = ctx.peer.notify_progress(note).await;
            }
        }
    }

    #[tool(description = "Tell the human something that needs no answer (a finished job, a heads-up). \
        It lands in their inbox; nothing comes back.")]
    async fn notify_human(&self, Parameters(p): Parameters<params::NotifyHuman>) -> ToolResult {
        let b = self.common(MessageBuilder::notify(&p.common.title), &p.common);
        self.file(b, false).await
    }

    #[tool(description = "Ask a human to do something you cannot (rotate a credential, approve in another \
        system, check hardware), with an optional checklist. Returns an id at once; call wait_for_answer to \
        learn when it is completed or dismissed.")]
    async fn assign_task(&self, Parameters(p): Parameters<params::AssignTask>) -> ToolResult {
        let Some(resolvers) = self.resolvers(&p.resolvers) else {
            return refuse(
                "no_resolver",
                "nobody may complete this task: pass `resolvers` (e.g. [\"human:alice\"]) or set MA2H_RESOLVERS",
            );
        };
        let mut b = self.common(MessageBuilder::task(&p.common.title, &p.instructions), &p.common);
        for item in &p.checklist {
            b = b.checklist_item(item);
        }
        if let Some(v) = &p.verification {
            b = b.verification(v);
        }
        b = self.retry_stamp(b, p.idempotency_key.as_deref(), p.expires_in).await;
        b = b.allowed_resolvers(resolvers);
        self.file(b, true).await
    }

    #[tool(description = "Withdraw an open ask or task you filed (the human no longer needs to decide). If the \
        human already decided, that outcome stands and is returned instead.")]
    async fn cancel_ask(&self, Parameters(p): Parameters<params::ById>) -> ToolResult {
        if let Some(refused) = bad_id(&p.id) {
            return refused;
        }
        let client = match self.client() {
            Ok(c) => c,
            Err(e) => return failed(&e),
        };
        match client.cancel(&p.id).await {
            Ok(CancelOutcome::Cancelled(_)) => {
                let body = client.get(&p.id, None).await.unwrap_or_else(|_| json!({"id": p.id, "status": "cancelled"}));
                ok(self.outcome_of(&body).await)
            }
            Ok(CancelOutcome::AlreadyTerminal(conflict)) => {
                // the 409 names the winner (§8.4); the full read adds its value and comment
                let body = client.get(&p.id, None).await.unwrap_or(conflict);
                let mut o = self.outcome_of(&body).await;
                o["note"] = "already decided before the cancel: this outcome stands (§7 first terminal wins)".into();
                ok(o)
            }
            Err(e) => failed(&e),
        }
    }

    #[tool(description = "List the asks and tasks you filed through this server that are still open (status \
        re-read from the Hub), oldest first, with their review URLs.")]
    async fn list_my_open_asks(&self, Parameters(p): Parameters<params::ListOpen>) -> ToolResult {
        let client = match self.client() {
            Ok(c) => c,
            Err(e) => return failed(&e),
        };
        let mut listed = Vec::new();
        let mut gone = Vec::new();
        for f in self.ledger.all().await {
            let body = match client.get(&f.id, None).await {
                Ok(b) => b,
                Err(ClientError::Hub(h)) if matches!(h.status, 404 | 410) => {
                    gone.push(f.id.clone());
                    continue;
                }
                // one unreadable ask does not hide the others
                Err(e) => {
                    listed.push(json!({"id": f.id, "title": f.title, "error": error_body(&e)["error"]}));
                    continue;
                }
            };
            let mut o = outcome::of_body(&body);
            let open = matches!(o["outcome"].as_str(), Some("open" | "queued"));
            if !open {
                gone.push(f.id.clone());
            }
            if open || p.include_resolved {
                o["title"] = f.title.into();
                o["kind"] = f.kind.into();
                o["filed_at"] = f.filed_at.into();
                if let Some(u) = f.review_url {
                    o["review_url"] = u.into();
                }
                o.as_object_mut().map(|m| m.remove("next"));
                listed.push(o);
            }
        }
        let _ = self.ledger.forget(&gone).await;
        ok(json!({"count": listed.len(), "asks": listed}))
    }

    #[tool(description = "Read directives a human sent to this agent (instructions, corrections, requests to \
        stop or change course). Each is verified (signature, freshness, addressed to you) before it is returned; \
        by default they are acknowledged, so the human sees you received them. Act on them.")]
    async fn check_inbox(&self, Parameters(p): Parameters<params::CheckInbox>) -> ToolResult {
        let client = match self.client() {
            Ok(c) => c,
            Err(e) => return failed(&e),
        };
        let agent = self.config.agent_id.clone().unwrap_or_default();
        let mut keys = Vec::new();
        if let Some(s) = &self.config.signing_secret {
            keys.push(verify::hmac_key(s));
        }
        match client.discover().await {
            Ok(doc) => keys.extend(verify::keys_from_capability(&doc)),
            Err(e) => return failed(&e),
        }
        if keys.is_empty() {
            return refuse("configuration_error", "no verification key: set MA2H_SIGNING_SECRET for the MCP server");
        }
        let cache = ReplayCache::open(self.state_dir.clone()).ok();
        let verifier = EntryVerifier::new(&agent, keys, cache);
        let wait = p.wait_seconds.map(|w| w.min(MAX_WAIT));
        let entries = match client.drain_with(&DrainOptions { max: None, wait, session: None }).await {
            Ok(e) => e,
            Err(e) => return failed(&e),
        };
        let (mut shown, mut rejected, mut ack_keys) = (Vec::new(), Vec::new(), Vec::new());
        for entry in &entries {
            match verifier.verify_drained(entry, None, ma2h_client::now_unix()) {
                Ok(verdict) => {
                    let duplicate = verdict.is_duplicate();
                    let (DrainVerdict::Accepted(e) | DrainVerdict::Duplicate(e)) = &verdict;
                    let mut v = match e {
                        VerifiedEntry::Directive(d) => json!({"kind": "directive", "directive": d.directive}),
                        VerifiedEntry::Message(m) => json!({"kind": "message", "from": m.from, "message": m.message}),
                        VerifiedEntry::Receipt(r) => json!({"kind": "receipt", "receipt": r.receipt}),
                        // (only delivered to a session; this server drains without one)
                        VerifiedEntry::Response(r) => json!({"kind": "response", "outcome": outcome::of_body(&r.body)}),
                    };
                    if duplicate {
                        v["duplicate"] = true.into();
                    }
                    ack_keys.push(e.ack_key().to_owned());
                    shown.push(v);
                }
                Err(e) => rejected.push(e.to_string()),
            }
        }
        let mut out = json!({"count": shown.len(), "entries": shown});
        if !rejected.is_empty() {
            out["rejected"] = json!(rejected);
        }
        if p.acknowledge.unwrap_or(true) && !ack_keys.is_empty() {
            match client.ack_inbox_with(&ack_keys, &AckOptions { note: Some("read via ma2h mcp"), session: None }).await
            {
                Ok(n) => out["acknowledged"] = n.into(),
                Err(e) => out["ack_error"] = error_body(&e)["error"].clone(),
            }
        }
        ok(out)
    }
}

#[tool_handler]
impl ServerHandler for HubTools {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new("ma2h", env!("CARGO_PKG_VERSION")).with_title("MA2H Hub"))
            .with_instructions(
                "Reach a human through an MA2H Hub. To get a decision: ask_human (returns an id at once), then \
                 wait_for_answer with that id, repeating while the outcome is `open` — the human may take minutes \
                 or hours. Fail closed: proceed with a risky action only on an `answered` outcome that allows it.",
            )
    }
}

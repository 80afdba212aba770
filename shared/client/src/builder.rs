//! Typed builders for the three verbs (§4–§5): `notify`, `ask` (select / confirm / input) and
//! `task`. [`MessageBuilder::build`] assembles the envelope and checks it against the message
//! schema (via `ma2h-protocol`) so a malformed call fails locally, before any network traffic.

use ma2h_protocol::envelope::{Callback, Envelope, MessageType, Mode, Permissions, Priority};
use serde_json::{Map, Value, json};

use crate::ClientError;

/// The protocol version this client speaks.
pub const MA2H_VERSION: &str = "0.5";

/// The `agent` descriptor (§4.1) the builder stamps on every message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentRef {
    pub id: String,
    pub run_id: String,
    pub runtime: String,
}

impl AgentRef {
    /// `run_id` defaults to a fresh random id when the environment gave none.
    pub fn new(id: impl Into<String>, run_id: Option<String>, runtime: impl Into<String>) -> Self {
        let run_id = run_id.unwrap_or_else(|| format!("run_{}", crate::client::random_token(12)));
        Self { id: id.into(), run_id, runtime: runtime.into() }
    }
}

/// A message under construction. Start with [`MessageBuilder::notify`], [`MessageBuilder::ask`]
/// or [`MessageBuilder::task`].
#[derive(Debug, Clone)]
pub struct MessageBuilder {
    kind: MessageType,
    top: Map<String, Value>,
    block: Map<String, Value>,
    options: Vec<Value>,
    checklist: Vec<Value>,
    tags: Vec<String>,
    context: Vec<Value>,
    resolvers: Vec<String>,
    project: Option<String>,
    run_id: Option<String>,
}

impl MessageBuilder {
    fn new(kind: MessageType, title: &str) -> Self {
        let mut top = Map::new();
        top.insert("title".into(), title.into());
        Self {
            kind,
            top,
            block: Map::new(),
            options: vec![],
            checklist: vec![],
            tags: vec![],
            context: vec![],
            resolvers: vec![],
            project: None,
            run_id: None,
        }
    }

    /// §5.1: informational, no Response.
    pub fn notify(title: &str) -> Self {
        Self::new(MessageType::Notify, title)
    }

    /// §5.2: a decision. `select` needs options, `input` needs a schema, `confirm` synthesizes
    /// approve/deny when no options are given.
    pub fn ask(title: &str, mode: Mode) -> Self {
        let mut b = Self::new(MessageType::Ask, title);
        b.block.insert("mode".into(), serde_json::to_value(mode).expect("mode serializes"));
        b
    }

    /// §5.3: a manual action.
    pub fn task(title: &str, instructions: &str) -> Self {
        let mut b = Self::new(MessageType::Task, title);
        b.block.insert("instructions".into(), instructions.into());
        b
    }

    pub fn kind(&self) -> MessageType {
        self.kind
    }

    fn set(mut self, k: &str, v: impl Into<Value>) -> Self {
        self.top.insert(k.into(), v.into());
        self
    }
    fn set_block(mut self, k: &str, v: impl Into<Value>) -> Self {
        self.block.insert(k.into(), v.into());
        self
    }

    pub fn body(self, body: &str) -> Self {
        self.set("body", body)
    }
    /// §4.1 `agent.project`: the project the agent works for (the inbox shows and filters it).
    pub fn project(mut self, project: &str) -> Self {
        self.project = Some(project.into());
        self
    }
    /// §4.1 `agent.run_id` for this message, instead of the [`AgentRef`]'s.
    pub fn run_id(mut self, run_id: &str) -> Self {
        self.run_id = Some(run_id.into());
        self
    }
    /// §9.6 message-level `sensitive`: the Hub keeps its values out of exports and telemetry.
    pub fn sensitive(self, sensitive: bool) -> Self {
        self.set("sensitive", sensitive)
    }
    pub fn priority(self, p: Priority) -> Self {
        self.set("priority", p.as_str())
    }
    pub fn tag(mut self, tag: &str) -> Self {
        self.tags.push(tag.into());
        self
    }
    /// §4.2 text Part.
    pub fn context_text(mut self, text: &str) -> Self {
        self.context.push(json!({"kind": "text", "text": text}));
        self
    }
    /// §4.2 data Part.
    pub fn context_data(mut self, data: Value) -> Self {
        self.context.push(json!({"kind": "data", "data": data}));
        self
    }
    /// §4.2 file Part (by reference; the Hub never fetches it unless §9.4 allows).
    pub fn context_file(mut self, uri: &str, name: Option<&str>, mime_type: Option<&str>) -> Self {
        let mut file = Map::new();
        file.insert("uri".into(), uri.into());
        if let Some(n) = name {
            file.insert("name".into(), n.into());
        }
        if let Some(m) = mime_type {
            file.insert("mime_type".into(), m.into());
        }
        self.context.push(json!({"kind": "file", "file": file}));
        self
    }
    /// The opaque resume blob (§4, §2.1) — seal it first ([`crate::seal`]).
    pub fn state(self, state: Value) -> Self {
        self.set("state", state)
    }
    /// §4 `expires_at`, RFC 3339 (must be in the future, or the Hub answers 422).
    pub fn expires_at(self, at: &str) -> Self {
        self.set("expires_at", at)
    }
    /// §4 `created_at` (RFC 3339); left unset, [`Self::build`] stamps the current time. A retry
    /// with the same `idempotency_key` must repeat the first attempt's value (§8.1 compares payloads).
    pub fn created_at(self, at: &str) -> Self {
        self.set("created_at", at)
    }
    /// `expires_at` = now + `secs`, rounded up to the whole second: truncating would leave
    /// `--expires-in 1s` as little as a few milliseconds of life, and the Hub refuses an
    /// `expires_at` already past on arrival (§4, 422).
    pub fn expires_in(self, secs: i64) -> Self {
        self.set("expires_at", expires_in_from(chrono::Utc::now(), secs))
    }
    /// §8.1 dedup key. Left unset on an ask/task, [`crate::Client::submit`] generates one.
    pub fn idempotency_key(self, key: &str) -> Self {
        self.set("idempotency_key", key)
    }
    pub fn client_ref(self, r: &str) -> Self {
        self.set("client_ref", r)
    }
    /// §5.2 select/confirm option.
    pub fn option(mut self, value: &str, label: &str, description: Option<&str>) -> Self {
        let mut o = json!({"value": value, "label": label});
        if let Some(d) = description {
            o["description"] = d.into();
        }
        self.options.push(o);
        self
    }
    /// §5.2 flat JSON Schema for `input` mode.
    pub fn schema(self, schema: Value) -> Self {
        self.set_block("schema", schema)
    }
    pub fn permissions(self, p: Permissions) -> Self {
        self.set_block("permissions", serde_json::to_value(p).expect("permissions serialize"))
    }
    /// A Hub extension (issue 40): the ask's grant key — what a standing answer is kept for
    /// (`request.grant_key`; a Hub without grants ignores it, §10).
    pub fn grant_key(self, key: &str) -> Self {
        self.set_block("grant_key", Value::String(key.to_owned()))
    }
    /// §7: an option value (select/confirm), an input object, or `null`.
    pub fn default_on_expire(self, v: Value) -> Self {
        self.set_block("default_on_expire", v)
    }
    /// §9.1 `allowed_resolvers` (`human:<id>` / `agent:<id>`).
    pub fn allowed_resolver(mut self, r: &str) -> Self {
        self.resolvers.push(r.into());
        self
    }
    pub fn allowed_resolvers<S: AsRef<str>>(mut self, rs: &[S]) -> Self {
        self.resolvers.extend(rs.iter().map(|r| r.as_ref().to_owned()));
        self
    }
    /// §8.3 callback (push mode: the re-invoke URL of §2.1).
    pub fn callback(self, cb: Callback) -> Self {
        let mut v = serde_json::to_value(cb).expect("callback serializes");
        strip_nulls(&mut v);
        self.set_block("callback", v)
    }
    /// §5.3 checklist item.
    pub fn checklist_item(mut self, text: &str) -> Self {
        self.checklist.push(json!({"text": text, "done": false}));
        self
    }
    /// §5.3 how the human verifies the action.
    pub fn verification(self, text: &str) -> Self {
        self.set_block("verification", text)
    }

    /// Assemble the envelope for `agent` and check it against the schema and the §5 rules the
    /// client can see locally.
    pub fn build(&self, agent: &AgentRef) -> Result<Value, ClientError> {
        let bad = |m: String| Err(ClientError::Config(m));
        let mut m = self.top.clone();
        m.insert("ma2h_version".into(), MA2H_VERSION.into());
        m.insert("type".into(), self.kind.as_str().into());
        m.entry("created_at")
            .or_insert_with(|| chrono::Utc::now().to_rfc3339_opts(chrono::SecondsFormat::Secs, true).into());
        let mut origin = json!({"id": agent.id, "run_id": agent.run_id, "runtime": agent.runtime});
        if let Some(p) = &self.project {
            origin["project"] = p.as_str().into();
        }
        if let Some(r) = &self.run_id {
            origin["run_id"] = r.as_str().into();
        }
        m.insert("agent".into(), origin);
        if !self.tags.is_empty() {
            m.insert("tags".into(), self.tags.clone().into());
        }
        if !self.context.is_empty() {
            m.insert("context".into(), self.context.clone().into());
        }
        let mut block = self.block.clone();
        if !self.resolvers.is_empty() {
            block.insert("allowed_resolvers".into(), self.resolvers.clone().into());
        }
        match self.kind {
            MessageType::Notify => {
                if !block.is_empty() || !self.options.is_empty() || !self.checklist.is_empty() {
                    return bad("a notify carries no request/action fields (§5.1)".into());
                }
            }
            MessageType::Ask => {
                let mode = block.get("mode").and_then(Value::as_str).unwrap_or_default();
                match (mode, self.options.len()) {
                    ("select", 0) => return bad("an ask in select mode needs at least one option (§5.2)".into()),
                    ("confirm", n) if n != 0 && n != 2 => {
                        return bad(format!("confirm takes no options or exactly two, got {n} (§5.2)"));
                    }
                    ("input", _) if !block.contains_key("schema") => {
                        return bad("an ask in input mode needs a schema (§5.2)".into());
                    }
                    _ => {}
                }
                if !self.options.is_empty() {
                    block.insert("options".into(), self.options.clone().into());
                }
                m.insert("request".into(), Value::Object(block));
            }
            MessageType::Task => {
                if !self.checklist.is_empty() {
                    block.insert("checklist".into(), self.checklist.clone().into());
                }
                m.insert("action".into(), Value::Object(block));
            }
        }
        let value = Value::Object(m);
        // Schema check (the same one the Hub runs, §4); the id/idempotency key come later.
        let mut probe = value.clone();
        if self.kind != MessageType::Notify && probe.get("idempotency_key").is_none() {
            probe["idempotency_key"] = "probe".into();
        }
        Envelope::from_value(probe).map_err(|e| ClientError::Config(format!("invalid message: {e}")))?;
        Ok(value)
    }
}

/// Drop `null` members (absent optional fields), recursively: the schema wants them absent.
fn strip_nulls(v: &mut Value) {
    if let Value::Object(m) = v {
        m.retain(|_, x| !x.is_null());
        m.values_mut().for_each(strip_nulls);
    }
}

/// `now + secs` as RFC 3339 whole seconds, rounded up so never earlier than `now + secs` (the
/// stamp a retry can repeat; see [`MessageBuilder::expires_in`]).
pub fn expires_in_from(now: chrono::DateTime<chrono::Utc>, secs: i64) -> String {
    let at = now + chrono::Duration::seconds(secs);
    let whole = at.timestamp() + i64::from(at.timestamp_subsec_nanos() > 0);
    chrono::DateTime::from_timestamp(whole, 0).unwrap_or(at).to_rfc3339_opts(chrono::SecondsFormat::Secs, true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn agent() -> AgentRef {
        AgentRef::new("bot", Some("r1".into()), "cli")
    }

    #[test]
    fn select_ask_carries_options_resolvers_and_default() {
        let v = MessageBuilder::ask("ship?", Mode::Select)
            .option("ship", "Ship", None)
            .option("hold", "Hold", Some("wait"))
            .default_on_expire("hold".into())
            .allowed_resolver("human:alice")
            .tag("deploy")
            .context_text("diff")
            .expires_in(600)
            .build(&agent())
            .unwrap();
        assert_eq!(v["type"], "ask");
        assert_eq!(v["request"]["options"][1]["description"], "wait");
        assert_eq!(v["request"]["allowed_resolvers"][0], "human:alice");
        assert_eq!(v["request"]["default_on_expire"], "hold");
        assert_eq!(v["tags"][0], "deploy");
        assert_eq!(v["context"][0]["kind"], "text");
        assert!(v.get("idempotency_key").is_none(), "the client adds it at submit");
    }

    #[test]
    fn expires_in_rounds_up_so_the_message_lives_at_least_that_long() {
        let now = chrono::DateTime::parse_from_rfc3339("2026-12-08T00:00:00.900Z").unwrap().to_utc();
        assert_eq!(expires_in_from(now, 1), "2026-12-08T00:00:02Z");
        let whole = chrono::DateTime::parse_from_rfc3339("2026-12-08T00:00:00Z").unwrap().to_utc();
        assert_eq!(expires_in_from(whole, 1), "2026-12-08T00:00:01Z");
    }

    #[test]
    fn mode_rules_are_checked_locally() {
        assert!(MessageBuilder::ask("x", Mode::Select).build(&agent()).is_err());
        assert!(MessageBuilder::ask("x", Mode::Input).build(&agent()).is_err());
        let three = MessageBuilder::ask("x", Mode::Confirm).option("a", "A", None).option("b", "B", None);
        assert!(three.clone().build(&agent()).is_ok());
        assert!(three.option("c", "C", None).build(&agent()).is_err());
        let input = MessageBuilder::ask("x", Mode::Input)
            .schema(json!({"type": "object", "properties": {"reason": {"type": "string"}}}));
        assert!(input.build(&agent()).is_ok());
    }

    #[test]
    fn task_and_notify_shapes() {
        let t = MessageBuilder::task("rotate", "rotate the key").checklist_item("new key").verification("ok");
        let v = t.build(&agent()).unwrap();
        assert_eq!(v["action"]["checklist"][0]["text"], "new key");
        let n = MessageBuilder::notify("done").body("all green").build(&agent()).unwrap();
        assert!(n.get("request").is_none());
        assert!(MessageBuilder::notify("x").allowed_resolver("human:a").build(&agent()).is_err());
    }
}

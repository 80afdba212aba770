//! The typed view of an accepted message envelope (§4–§5).
//!
//! Parsing order (`Envelope::parse`): JSON object → §10 version (major first) → JSON Schema →
//! typed fields. The original object is kept verbatim (`raw`) because the GET body (§8.2) returns
//! the message as submitted, unknown fields included (§10 robustness).

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::ProtocolError;
use crate::ids::AgentId;
use crate::schema::{self, SchemaKind};
use crate::time::{self, Timestamp};
use crate::version::Version;

/// The three verbs (§5).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MessageType {
    Notify,
    Ask,
    Task,
}

impl MessageType {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Notify => "notify",
            Self::Ask => "ask",
            Self::Task => "task",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "notify" => Some(Self::Notify),
            "ask" => Some(Self::Ask),
            "task" => Some(Self::Task),
            _ => None,
        }
    }
}

/// Inbox priority (§4). Ordered so that `Urgent` sorts first in a descending sort.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "lowercase")]
pub enum Priority {
    Low,
    #[default]
    Normal,
    High,
    Urgent,
}

impl Priority {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Low => "low",
            Self::Normal => "normal",
            Self::High => "high",
            Self::Urgent => "urgent",
        }
    }
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "low" => Some(Self::Low),
            "normal" => Some(Self::Normal),
            "high" => Some(Self::High),
            "urgent" => Some(Self::Urgent),
            _ => None,
        }
    }
    /// 0 = most urgent; used as a sort key.
    pub fn rank(self) -> u8 {
        match self {
            Self::Urgent => 0,
            Self::High => 1,
            Self::Normal => 2,
            Self::Low => 3,
        }
    }
}

/// `request.mode` (§5.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Mode {
    Select,
    Input,
    Confirm,
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OptionItem {
    pub value: String,
    pub label: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
}

/// `request.permissions` (§5.2). Absent flags default to `true`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Permissions {
    #[serde(default = "yes")]
    pub allow_accept: bool,
    #[serde(default = "yes")]
    pub allow_edit: bool,
    #[serde(default = "yes")]
    pub allow_respond: bool,
    #[serde(default = "yes")]
    pub allow_ignore: bool,
}

fn yes() -> bool {
    true
}

impl Default for Permissions {
    fn default() -> Self {
        Self { allow_accept: true, allow_edit: true, allow_respond: true, allow_ignore: true }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CallbackMode {
    Push,
    Pull,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CallbackScheme {
    Hmac,
    Bearer,
    Apikey,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallbackAuth {
    pub scheme: CallbackScheme,
    #[serde(default)]
    pub secret_ref: Option<String>,
    #[serde(default)]
    pub token_ref: Option<String>,
}

/// `callback` (§8.3).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Callback {
    pub mode: CallbackMode,
    #[serde(default)]
    pub url: Option<String>,
    #[serde(default)]
    pub auth: Option<CallbackAuth>,
}

/// The `ask` request block (§5.2).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Request {
    pub mode: Mode,
    #[serde(default)]
    pub options: Vec<OptionItem>,
    #[serde(default)]
    pub schema: Option<Value>,
    #[serde(default)]
    pub permissions: Permissions,
    /// `None` = absent; `Some(Value::Null)` = explicitly no default.
    #[serde(default, deserialize_with = "present")]
    pub default_on_expire: Option<Value>,
    #[serde(default)]
    pub allowed_resolvers: Option<Vec<String>>,
    #[serde(default)]
    pub callback: Option<Callback>,
}

impl Request {
    /// The label of the option whose value is `value`, or the value itself (an input ask, or a
    /// value no option has).
    pub fn label_of<'a>(&'a self, value: &'a str) -> &'a str {
        self.options.iter().find(|o| o.value == value).map_or(value, |o| o.label.as_str())
    }
}

fn present<'de, D: serde::Deserializer<'de>>(d: D) -> Result<Option<Value>, D::Error> {
    Value::deserialize(d).map(Some)
}

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ChecklistItem {
    pub text: String,
    #[serde(default)]
    pub done: bool,
}

/// The `task` action block (§5.3).
#[derive(Debug, Clone, PartialEq, Deserialize)]
pub struct Action {
    pub instructions: String,
    #[serde(default)]
    pub checklist: Vec<ChecklistItem>,
    #[serde(default)]
    pub verification: Option<String>,
    #[serde(default)]
    pub allowed_resolvers: Option<Vec<String>>,
    #[serde(default)]
    pub callback: Option<Callback>,
}

/// The `agent` descriptor (§4.1).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentDescriptor {
    pub id: AgentId,
    pub run_id: String,
    pub session: Option<String>,
    pub project: Option<String>,
}

/// The verb and the block only that verb carries (§5), parsed once at the edge: an ask always
/// has its request and a task its action.
#[derive(Debug, Clone, PartialEq)]
pub enum Verb {
    Notify,
    Ask(Request),
    Task(Action),
}

impl Verb {
    pub fn kind(&self) -> MessageType {
        match self {
            Self::Notify => MessageType::Notify,
            Self::Ask(_) => MessageType::Ask,
            Self::Task(_) => MessageType::Task,
        }
    }
}

/// A schema-valid envelope with its typed fields.
#[derive(Debug, Clone)]
pub struct Envelope {
    /// The object as submitted (after `normalize`), returned verbatim by GET.
    pub raw: Map<String, Value>,
    pub version: Version,
    pub verb: Verb,
    pub agent: AgentDescriptor,
    pub title: String,
    pub priority: Priority,
    pub tags: Vec<String>,
    pub to: Option<String>,
    pub expires_at: Option<Timestamp>,
    pub idempotency_key: Option<String>,
    pub sensitive: bool,
}

impl Envelope {
    /// Parse and schema-validate a submitted envelope (400-class failures only; the 422 cross-field
    /// rules live in [`crate::rules`]).
    pub fn parse(body: &[u8]) -> Result<Self, ProtocolError> {
        let value: Value = serde_json::from_slice(body)
            .map_err(|e| ProtocolError::validation(format!("body is not valid JSON: {e}")))?;
        Self::from_value(value)
    }

    pub fn from_value(value: Value) -> Result<Self, ProtocolError> {
        let Value::Object(raw) = value else {
            return Err(ProtocolError::validation("the envelope must be a JSON object"));
        };
        // §10: the major is judged before anything else, so a 1.x agent learns `version_not_supported`.
        let version = match raw.get("ma2h_version") {
            Some(Value::String(v)) => Version::parse(v)?,
            Some(_) => return Err(ProtocolError::validation("`/ma2h_version`: must be a string")),
            None => return Err(ProtocolError::validation("`/`: missing required field `ma2h_version`")),
        };
        let as_value = Value::Object(raw);
        schema::validate(SchemaKind::Message, &as_value)?;
        let Value::Object(raw) = as_value else { unreachable!("checked above") };
        Self::typed(raw, version)
    }

    fn typed(raw: Map<String, Value>, version: Version) -> Result<Self, ProtocolError> {
        let field = |name: &str| raw.get(name);
        let str_field = |name: &str| field(name).and_then(Value::as_str).map(str::to_owned);
        let kind = field("type")
            .and_then(Value::as_str)
            .and_then(MessageType::parse)
            .ok_or_else(|| ProtocolError::validation("`/type`: must be one of notify, ask, task"))?;
        let agent_obj = field("agent")
            .and_then(Value::as_object)
            .ok_or_else(|| ProtocolError::validation("`/agent`: must be an object"))?;
        let agent_str = |name: &str| agent_obj.get(name).and_then(Value::as_str).map(str::to_owned);
        if agent_str("id").is_some_and(|s| s.contains('#')) {
            // §4: `#` separates an agent from its session; this Hub admits no such principal.
            return Err(ProtocolError::invalid_field(
                "`/agent/id`: must not contain `#` (it separates an agent id from a session id, §4)",
            ));
        }
        let id = agent_str("id").and_then(|s| AgentId::parse(&s)).ok_or_else(|| {
            ProtocolError::validation(
                "`/agent/id`: must be a non-empty string of at most 200 characters without control characters",
            )
        })?;
        let agent = AgentDescriptor {
            id,
            run_id: agent_str("run_id").unwrap_or_default(),
            session: agent_str("session"),
            project: agent_str("project"),
        };
        let expires_at = match str_field("expires_at") {
            Some(s) => Some(
                time::parse(&s)
                    .ok_or_else(|| ProtocolError::validation("`/expires_at`: must be an RFC 3339 date-time"))?,
            ),
            None => None,
        };
        if let Some(created) = str_field("created_at") {
            time::parse(&created)
                .ok_or_else(|| ProtocolError::validation("`/created_at`: must be an RFC 3339 date-time"))?;
        }
        // §5.2/§5.3: the schema requires the verb's block; a missing one is refused the same way.
        let block = |name: &str| {
            field(name).ok_or_else(|| ProtocolError::validation(format!("`/`: missing required field `{name}`")))
        };
        let verb = match kind {
            MessageType::Notify => Verb::Notify,
            MessageType::Ask => Verb::Ask(
                Request::deserialize(block("request")?)
                    .map_err(|e| ProtocolError::validation(format!("`/request`: {e}")))?,
            ),
            MessageType::Task => Verb::Task(
                Action::deserialize(block("action")?)
                    .map_err(|e| ProtocolError::validation(format!("`/action`: {e}")))?,
            ),
        };
        let tags = field("tags")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).map(str::to_owned).collect())
            .unwrap_or_default();
        Ok(Self {
            version,
            verb,
            agent,
            title: str_field("title").unwrap_or_default(),
            priority: field("priority").and_then(Value::as_str).and_then(Priority::parse).unwrap_or_default(),
            tags,
            to: str_field("to"),
            expires_at,
            idempotency_key: str_field("idempotency_key"),
            sensitive: field("sensitive").and_then(Value::as_bool).unwrap_or(false),
            raw,
        })
    }

    pub fn kind(&self) -> MessageType {
        self.verb.kind()
    }

    /// An ask's request block.
    pub fn request(&self) -> Option<&Request> {
        match &self.verb {
            Verb::Ask(r) => Some(r),
            _ => None,
        }
    }

    /// A task's action block.
    pub fn action(&self) -> Option<&Action> {
        match &self.verb {
            Verb::Task(a) => Some(a),
            _ => None,
        }
    }

    /// The verb's callback, if any.
    pub fn callback(&self) -> Option<&Callback> {
        match &self.verb {
            Verb::Notify => None,
            Verb::Ask(r) => r.callback.as_ref(),
            Verb::Task(a) => a.callback.as_ref(),
        }
    }

    /// The verb's `allowed_resolvers`, if listed.
    pub fn allowed_resolvers(&self) -> Option<&[String]> {
        match &self.verb {
            Verb::Notify => None,
            Verb::Ask(r) => r.allowed_resolvers.as_deref(),
            Verb::Task(a) => a.allowed_resolvers.as_deref(),
        }
    }

    /// The body's `state` blob, if any (opaque; §9.3 — never inspected).
    pub fn state(&self) -> Option<&Value> {
        self.raw.get("state")
    }

    /// §5.2: `mode=confirm` without options gets exactly `approve`/`deny` synthesized, in both the
    /// typed view and the stored envelope (so GET shows the options the human was offered).
    pub fn synthesize_confirm_options(&mut self) {
        let Verb::Ask(req) = &mut self.verb else { return };
        if req.mode != Mode::Confirm || !req.options.is_empty() {
            return;
        }
        req.options = vec![
            OptionItem { value: "approve".into(), label: "Approve".into(), description: None },
            OptionItem { value: "deny".into(), label: "Deny".into(), description: None },
        ];
        if let Some(Value::Object(r)) = self.raw.get_mut("request") {
            r.insert("options".into(), serde_json::to_value(&req.options).expect("options serialize"));
        }
    }

    /// The idempotency identity of this submit (§8.1): the canonical envelope as sent, with the
    /// excluded `agent.run_id` and `agent.session` removed. Compute it before any normalization
    /// (e.g. [`Self::synthesize_confirm_options`]) so a replay of the same bytes matches.
    ///
    /// Streamed into the digest (no copy of the envelope, no canonical string): it runs on every
    /// submit. The value is the SHA-256 of the JCS bytes, as stored claims already hold it.
    pub fn idempotency_fingerprint(&self) -> String {
        // only `agent` differs from the envelope as sent: written without the excluded members
        let mut h = crate::jcs::HashWriter::default();
        crate::jcs::write_object_omitting(&self.raw, "agent", &["run_id", "session"], &mut h)
            .expect("hashing cannot fail");
        h.hex()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priority_and_type_names_parse_to_what_they_print() {
        for p in [Priority::Low, Priority::Normal, Priority::High, Priority::Urgent] {
            assert_eq!(Priority::parse(p.as_str()), Some(p));
            assert_eq!(serde_json::to_value(p).unwrap(), p.as_str(), "serde agrees");
        }
        for t in [MessageType::Notify, MessageType::Ask, MessageType::Task] {
            assert_eq!(MessageType::parse(t.as_str()), Some(t));
        }
        for bad in ["", "Normal", "URGENT", "critical", " low"] {
            assert_eq!(Priority::parse(bad), None, "{bad:?}");
        }
    }
}

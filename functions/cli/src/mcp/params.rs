//! The tools' arguments. Doc comments become the JSON Schema descriptions the model reads, so
//! they say what each field means in MA2H terms (§4–§5) and what the default is.

use rmcp::schemars::{self, JsonSchema};
use serde::Deserialize;
use serde_json::Value;

#[derive(Debug, Clone, Copy, Default, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum AskMode {
    /// Yes/no: `options` may be omitted (then the values are `approve` and `deny`) or give exactly two.
    #[default]
    Confirm,
    /// Pick one of `options`.
    Select,
    /// Fill a form described by `schema` (a flat JSON Schema object).
    Input,
}

#[derive(Debug, Clone, Copy, Deserialize, JsonSchema)]
#[serde(rename_all = "lowercase")]
pub enum Priority {
    Low,
    Normal,
    High,
    Urgent,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct Choice {
    /// The machine value returned as the answer, e.g. `ship`.
    pub value: String,
    /// What the human sees on the button, e.g. `Ship now`.
    pub label: String,
    /// Optional longer explanation of this choice.
    #[serde(default)]
    pub description: Option<String>,
}

/// Supporting context the human sees with the message (§4.2 Parts).
#[derive(Debug, Clone, Deserialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum ContextPart {
    /// Plain text (a log excerpt, a diff summary).
    Text { text: String },
    /// A JSON value (shown formatted).
    Data { data: Value },
    /// A link to a file or page (the Hub never fetches it).
    File {
        uri: String,
        #[serde(default)]
        name: Option<String>,
        #[serde(default)]
        mime_type: Option<String>,
    },
}

/// Fields every message shares.
#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct Common {
    /// One line for the human's inbox list (at most 200 characters).
    pub title: String,
    /// Details for the human, in Markdown: what you are about to do, why, and what happens next.
    #[serde(default)]
    pub body: Option<String>,
    /// How urgent it is for the human (default `normal`).
    #[serde(default)]
    pub priority: Option<Priority>,
    /// Labels the human can filter by.
    #[serde(default)]
    pub tags: Vec<String>,
    /// Supporting context Parts.
    #[serde(default)]
    pub context: Vec<ContextPart>,
    /// Mark the message sensitive (§9.6): the Hub keeps its values out of exports and telemetry.
    #[serde(default)]
    pub sensitive: bool,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct AskHuman {
    #[serde(flatten)]
    pub common: Common,
    /// How the human answers (default `confirm`).
    #[serde(default)]
    pub mode: AskMode,
    /// The choices for `select` (at least one) or `confirm` (none or exactly two).
    #[serde(default)]
    pub options: Vec<Choice>,
    /// For `input`: a flat JSON Schema object, e.g. {"type":"object","properties":{"reason":{"type":"string"}},"required":["reason"]}.
    #[serde(default)]
    pub schema: Option<Value>,
    /// Seconds until the ask expires (default: the Hub's). On expiry `default_on_expire` applies, if given.
    #[serde(default)]
    pub expires_in: Option<u32>,
    /// The answer used if nobody decides in time: an option value (confirm/select) or an input object.
    #[serde(default)]
    pub default_on_expire: Option<Value>,
    /// Who may answer, e.g. ["human:alice"] (default: the MA2H_RESOLVERS setting). An ask nobody may answer is refused.
    #[serde(default)]
    pub resolvers: Vec<String>,
    /// A key of yours that makes a retried call safe: the same key returns the same ask instead of filing a second one.
    #[serde(default)]
    pub idempotency_key: Option<String>,
    /// What this ask is about, as a short stable key (e.g. "deploy:staging"): the human may let their answer stand for your later asks with the same key, which are then answered at once (the outcome then carries grant_id). Omit it for one-off questions.
    #[serde(default)]
    pub grant_key: Option<String>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct AssignTask {
    #[serde(flatten)]
    pub common: Common,
    /// What the human should do, in Markdown.
    pub instructions: String,
    /// Steps the human ticks off.
    #[serde(default)]
    pub checklist: Vec<String>,
    /// How the human can tell the task is done.
    #[serde(default)]
    pub verification: Option<String>,
    /// Seconds until the task expires (default: the Hub's).
    #[serde(default)]
    pub expires_in: Option<u32>,
    /// Who may complete it, e.g. ["human:alice"] (default: the MA2H_RESOLVERS setting).
    #[serde(default)]
    pub resolvers: Vec<String>,
    /// A key of yours that makes a retried call safe (the same key returns the same task).
    #[serde(default)]
    pub idempotency_key: Option<String>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct NotifyHuman {
    #[serde(flatten)]
    pub common: Common,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct WaitForAnswer {
    /// The id (`msg_…`) that ask_human or assign_task returned.
    pub id: String,
    /// Seconds to wait at most in this call, 1–50 (default 45). Call again while the outcome is `open`.
    #[serde(default)]
    pub max_wait_seconds: Option<u32>,
}

#[derive(Debug, Clone, Deserialize, JsonSchema)]
pub struct ById {
    /// The message id (`msg_…`).
    pub id: String,
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct ListOpen {
    /// Also list asks that reached an outcome since they were filed (default false).
    #[serde(default)]
    pub include_resolved: bool,
}

#[derive(Debug, Clone, Default, Deserialize, JsonSchema)]
pub struct CheckInbox {
    /// Seconds to wait for the first entry, 0–50 (default 0: look and return).
    #[serde(default)]
    pub wait_seconds: Option<u32>,
    /// Acknowledge what this call returns, so the human sees it was received (default true).
    #[serde(default)]
    pub acknowledge: Option<bool>,
}

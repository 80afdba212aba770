//! JSON Schema validation of the MA2H v0.5 wire documents (400 `validation_error`, spec §8.5).
//!
//! The schemas live in `schema/v0.5/` at the workspace root, written for this Hub from the spec
//! text; they are embedded at compile time and compiled once, lazily, on first use. Cross-file
//! `$ref`s (the GET body embeds the message and the Response, spec §8.2) are served from the
//! embedded copies by a retriever that never touches the network.
//!
//! Rejections name the offending field as a JSON pointer, because the message goes straight into
//! the 400 body: `` `/request`: missing required field `options` — <the rule> ``. When several rules fail, the
//! deepest location wins, and a failure inside a conditional rule (the `type`/`mode`/`scheme`/
//! `resolution` switches) carries that rule's `description`, so the reader learns *why*.
//!
//! Most kinds are a whole file; a few are a `$defs` entry of a shared file (the §16 session bodies
//! all live in `session.schema.json`, spec §16.1). Such a kind is compiled as a one-line wrapper
//! `{"$ref": "<file $id>#<pointer>"}` resolved through the same embedded retriever — the pattern
//! `directive.schema.json` follows on disk, without a wrapper file per body.
//!
//! The schemas cover shape only. Cross-field rules they cannot state (option membership of
//! `default_on_expire`, `expires_at` in the future, …) are [`crate::rules`]'s job (422).

use std::sync::LazyLock;

use jsonschema::error::{TypeKind, ValidationErrorKind};
use jsonschema::{Draft, Retrieve, Uri, ValidationError, Validator};
use serde_json::Value;

use crate::ProtocolError;
use crate::error::FieldError;

/// Namespace of our schema `$id`s; every embedded document is `BASE` + its file name.
pub const SCHEMA_BASE: &str = "https://ma2h-hub.dev/schema/v0.5/";

/// The wire documents this Hub validates.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum SchemaKind {
    /// `POST /v1/messages` body (spec §4, §5).
    Message,
    /// The Response envelope (spec §6).
    Response,
    /// `GET /.well-known/ma2h` (spec §8.0).
    Capability,
    /// The 202 body of a submit (spec §8.1).
    SubmitAck,
    /// `GET /v1/messages/{id}` body (spec §8.2).
    GetMessage,
    /// `POST /v1/messages/{id}/resolve` body (spec §8.8).
    ResolveRequest,
    /// A delivered directive (spec §13.1).
    Directive,
    /// One drained mailbox entry `{<kind>: payload, signature}` (spec §8.7, §8.7.1).
    InboundMessage,
    /// The acknowledgment object (spec §14.1).
    Ack,
    /// `GET /v1/agents/{agent_id}/presence` body (spec §15.3).
    Presence,
    /// The session resource, root of `session.schema.json` (spec §16.1, §16.3, §16.4).
    Session,
    /// `POST /v1/sessions` body, `session.schema.json#/$defs/registerRequest` (spec §16.1).
    SessionRegister,
    /// `{session}` — the 201 and single-read body, `#/$defs/sessionEnvelope` (spec §16.1).
    SessionEnvelope,
    /// `GET /v1/sessions` body `{sessions, scope?}`, `#/$defs/sessionList` (spec §16.1, §16.4).
    SessionList,
}

impl SchemaKind {
    /// Every kind, in a fixed order (index = position in the compiled table).
    pub const ALL: [SchemaKind; 14] = [
        SchemaKind::Message,
        SchemaKind::Response,
        SchemaKind::Capability,
        SchemaKind::SubmitAck,
        SchemaKind::GetMessage,
        SchemaKind::ResolveRequest,
        SchemaKind::Directive,
        SchemaKind::InboundMessage,
        SchemaKind::Ack,
        SchemaKind::Presence,
        SchemaKind::Session,
        SchemaKind::SessionRegister,
        SchemaKind::SessionEnvelope,
        SchemaKind::SessionList,
    ];

    /// File name under `schema/v0.5/` (also the last segment of the `$id`).
    pub fn file_name(self) -> &'static str {
        match self {
            SchemaKind::Message => "message.schema.json",
            SchemaKind::Response => "response.schema.json",
            SchemaKind::Capability => "capability.schema.json",
            SchemaKind::SubmitAck => "submit-ack.schema.json",
            SchemaKind::GetMessage => "get-message.schema.json",
            SchemaKind::ResolveRequest => "resolve-request.schema.json",
            SchemaKind::Directive => "directive.schema.json",
            SchemaKind::InboundMessage => "inbound-message.schema.json",
            SchemaKind::Ack => "ack.schema.json",
            SchemaKind::Presence => "presence.schema.json",
            SchemaKind::Session
            | SchemaKind::SessionRegister
            | SchemaKind::SessionEnvelope
            | SchemaKind::SessionList => "session.schema.json",
        }
    }

    /// JSON pointer of the validated sub-schema inside the file, or `None` for the file's root.
    pub fn pointer(self) -> Option<&'static str> {
        match self {
            SchemaKind::SessionRegister => Some("/$defs/registerRequest"),
            SchemaKind::SessionEnvelope => Some("/$defs/sessionEnvelope"),
            SchemaKind::SessionList => Some("/$defs/sessionList"),
            _ => None,
        }
    }

    /// The `$id` of the file holding the schema (kinds sharing a file share it).
    pub fn id(self) -> String {
        format!("{SCHEMA_BASE}{}", self.file_name())
    }

    /// The embedded schema text, byte for byte as in the repository (e.g. to serve it).
    pub fn source(self) -> &'static str {
        match self {
            SchemaKind::Message => include_str!("../../../schema/v0.5/message.schema.json"),
            SchemaKind::Response => include_str!("../../../schema/v0.5/response.schema.json"),
            SchemaKind::Capability => include_str!("../../../schema/v0.5/capability.schema.json"),
            SchemaKind::SubmitAck => include_str!("../../../schema/v0.5/submit-ack.schema.json"),
            SchemaKind::GetMessage => include_str!("../../../schema/v0.5/get-message.schema.json"),
            SchemaKind::ResolveRequest => {
                include_str!("../../../schema/v0.5/resolve-request.schema.json")
            }
            SchemaKind::Directive => include_str!("../../../schema/v0.5/directive.schema.json"),
            SchemaKind::InboundMessage => include_str!("../../../schema/v0.5/inbound-message.schema.json"),
            SchemaKind::Ack => include_str!("../../../schema/v0.5/ack.schema.json"),
            SchemaKind::Presence => include_str!("../../../schema/v0.5/presence.schema.json"),
            SchemaKind::Session
            | SchemaKind::SessionRegister
            | SchemaKind::SessionEnvelope
            | SchemaKind::SessionList => include_str!("../../../schema/v0.5/session.schema.json"),
        }
    }

    fn index(self) -> usize {
        self as usize
    }

    /// The parsed schema document (the whole file, also for a `$defs` kind).
    pub fn document(self) -> &'static Value {
        &DOCUMENTS[self.index()]
    }

    /// What the validator is compiled from: the document itself, or for a `$defs` kind a wrapper
    /// referencing into it (resolved by [`EmbeddedOnly`], so errors still point into the file).
    fn root_schema(self) -> std::borrow::Cow<'static, Value> {
        match self.pointer() {
            None => std::borrow::Cow::Borrowed(self.document()),
            Some(pointer) => std::borrow::Cow::Owned(serde_json::json!({ "$ref": format!("{}#{pointer}", self.id()) })),
        }
    }
}

/// Parsed documents, indexed like [`SchemaKind::ALL`].
static DOCUMENTS: LazyLock<Vec<Value>> = LazyLock::new(|| {
    SchemaKind::ALL
        .iter()
        .map(|k| {
            serde_json::from_str(k.source()).unwrap_or_else(|e| panic!("embedded {} is not JSON: {e}", k.file_name()))
        })
        .collect()
});

/// Compiled validators, indexed like [`SchemaKind::ALL`]. The schemas are compile-time constants
/// covered by the test suite, so a failure here is a build defect, not a runtime condition.
static VALIDATORS: LazyLock<Vec<Validator>> = LazyLock::new(|| {
    SchemaKind::ALL
        .iter()
        .map(|k| {
            jsonschema::options()
                .with_draft(Draft::Draft202012)
                // `date-time` and `uri` are assertions for us, not annotations (spec §4, §8.3).
                .should_validate_formats(true)
                .with_retriever(EmbeddedOnly)
                .build(&k.root_schema())
                .unwrap_or_else(|e| panic!("embedded {} does not compile: {e}", k.file_name()))
        })
        .collect()
});

/// Serves `$ref` targets from the embedded documents; anything else is refused (no network).
/// Kinds sharing a file share its `$id`, so the first match serves them all.
struct EmbeddedOnly;

impl Retrieve for EmbeddedOnly {
    fn retrieve(&self, uri: &Uri<String>) -> Result<Value, Box<dyn std::error::Error + Send + Sync>> {
        let wanted = uri.as_str().split('#').next().unwrap_or_default();
        SchemaKind::ALL
            .iter()
            .find(|k| k.id() == wanted)
            .map(|k| k.document().clone())
            .ok_or_else(|| format!("`{wanted}` is not an embedded MA2H schema").into())
    }
}

/// Validate `value` against the schema for `kind`.
///
/// On failure returns [`ProtocolError::Validation`] whose message starts with the JSON pointer of
/// the offending field (the most specific one when several rules fail).
pub fn validate(kind: SchemaKind, value: &Value) -> Result<(), ProtocolError> {
    let validator = &VALIDATORS[kind.index()];
    // the common case answers without collecting (and explaining) errors
    if validator.is_valid(value) {
        return Ok(());
    }
    let mut all: Vec<Finding> = validator.iter_errors(value).flat_map(|e| findings(&e)).collect();
    if all.is_empty() {
        return Ok(());
    }
    // Most specific first (stable: the validator's order breaks ties); one entry per field.
    all.sort_by_key(|f| std::cmp::Reverse(f.rank));
    let message = all[0].message.clone();
    let mut fields: Vec<FieldError> = Vec::new();
    for f in all {
        if !fields.iter().any(|seen| seen.pointer == f.field.pointer) {
            fields.push(f.field);
        }
    }
    Err(ProtocolError::Validation { message, fields })
}

/// `true` when `value` validates against the schema for `kind`.
pub fn is_valid(kind: SchemaKind, value: &Value) -> bool {
    VALIDATORS[kind.index()].is_valid(value)
}

/// One candidate explanation: how specific it is and what it says.
struct Finding {
    /// Pointer depth of the named field, then "a present value is wrong" over "a field is missing"
    /// (on a tie, the field the sender actually wrote is the better lead).
    rank: (usize, bool),
    message: String,
    field: FieldError,
}

/// Flatten an error into candidate findings; `oneOf`/`anyOf` failures are replaced by the errors
/// of their branches, since "no branch matched" names no field.
fn findings(error: &ValidationError<'_>) -> Vec<Finding> {
    match error.kind() {
        ValidationErrorKind::OneOfNotValid { context } | ValidationErrorKind::AnyOf { context }
            if context.iter().any(|branch| !branch.is_empty()) =>
        {
            context.iter().flatten().flat_map(findings).collect()
        }
        _ => vec![describe(error)],
    }
}

/// Render one error as `` `<pointer>`: <problem>[ — <rule>] ``.
fn describe(error: &ValidationError<'_>) -> Finding {
    let at = error.instance_path().as_str().to_owned();
    let (pointer, problem) = match error.kind() {
        ValidationErrorKind::Required { property } => {
            let name = property.as_str().map_or_else(|| property.to_string(), str::to_owned);
            (at, format!("missing required field `{name}`"))
        }
        ValidationErrorKind::AdditionalProperties { unexpected } => {
            let first = unexpected.first().cloned().unwrap_or_default();
            let child = format!("{at}/{}", escape_token(&first));
            (child, format!("unknown field `{first}` (this object admits no extra fields)"))
        }
        ValidationErrorKind::FalseSchema => {
            let name = last_token(&at);
            (at, format!("field `{name}` is not allowed here"))
        }
        _ => (at, problem_text(error)),
    };
    let missing = matches!(error.kind(), ValidationErrorKind::Required { .. });
    let rank = (pointer.matches('/').count() + usize::from(missing), !missing);
    let mut problem = problem;
    if let Some(rule) = rule_note(error) {
        problem.push_str(" — ");
        problem.push_str(&rule);
    }
    let field = FieldError::new(pointer, problem);
    Finding { rank, message: field.to_string(), field }
}

/// Human wording for the value-level keywords. Instance values are never echoed (they may be
/// sensitive, spec §9.6); only the schema's expectations are.
pub(crate) fn problem_text(error: &ValidationError<'_>) -> String {
    match error.kind() {
        ValidationErrorKind::Type { kind } => {
            let names: Vec<&str> = match kind {
                TypeKind::Single(t) => vec![t.as_str()],
                TypeKind::Multiple(set) => set.iter().map(|t| t.as_str()).collect(),
            };
            format!("must be of type {}", names.join(" or "))
        }
        ValidationErrorKind::Enum { options } => format!("must be one of {}", list(options)),
        ValidationErrorKind::Constant { expected_value } => {
            format!("must be {}", literal(expected_value))
        }
        ValidationErrorKind::Pattern { pattern } => format!("must match the pattern `{pattern}`"),
        ValidationErrorKind::Format { format } => match format.as_str() {
            "date-time" => "must be an RFC 3339 date-time (e.g. `2026-06-04T13:00:00Z`)".into(),
            "uri" => "must be an absolute URI".into(),
            other => format!("must be a valid `{other}`"),
        },
        ValidationErrorKind::MinLength { limit: 1 } => "must not be empty".into(),
        ValidationErrorKind::MinLength { limit } => format!("must be at least {limit} characters"),
        ValidationErrorKind::MaxLength { limit } => format!("must be at most {limit} characters"),
        ValidationErrorKind::MinItems { limit } => format!("must have at least {limit} item(s)"),
        ValidationErrorKind::MaxItems { limit } => format!("must have at most {limit} item(s)"),
        ValidationErrorKind::Minimum { limit } => format!("must be at least {limit}"),
        ValidationErrorKind::Maximum { limit } => format!("must be at most {limit}"),
        ValidationErrorKind::MaxProperties { limit } => format!("must have at most {limit} member(s)"),
        ValidationErrorKind::MinProperties { limit } => format!("must have at least {limit} member(s)"),
        ValidationErrorKind::UniqueItems => "must not contain duplicate items".into(),
        // The library's own text for this one quotes the offending name; say the rule instead.
        ValidationErrorKind::PropertyNames { error } => format!("every member name {}", problem_text(error)),
        ValidationErrorKind::Not { .. } => "is not allowed here".into(),
        _ => error.masked().to_string(),
    }
}

/// `"a"` → `` `a` ``; other JSON values verbatim.
fn literal(v: &Value) -> String {
    match v {
        Value::String(s) => format!("`{s}`"),
        other => format!("`{other}`"),
    }
}

fn list(options: &Value) -> String {
    match options.as_array() {
        Some(items) => items.iter().map(literal).collect::<Vec<_>>().join(", "),
        None => literal(options),
    }
}

fn escape_token(name: &str) -> String {
    name.replace('~', "~0").replace('/', "~1")
}

fn last_token(pointer: &str) -> String {
    let raw = pointer.rsplit('/').next().unwrap_or_default();
    raw.replace("~1", "/").replace("~0", "~")
}

/// Why the failing keyword applies: the `description` of the innermost `if`/`then`/`else` rule it
/// sits in or, for a `pattern`, the description of the schema that carries the pattern (a regex
/// alone explains little).
///
/// Located through the error's absolute keyword location (`<schema $id>#<pointer>`), which is
/// canonical — `$ref` hops already resolved — so it can be walked in the embedded document.
fn rule_note(error: &ValidationError<'_>) -> Option<String> {
    let location = error.absolute_keyword_location()?.as_str().to_owned();
    let (base, fragment) = location.split_once('#')?;
    let kind = SchemaKind::ALL.into_iter().find(|k| k.id() == base)?;
    let mut node = kind.document();
    let mut note = None;
    let tokens: Vec<String> =
        fragment.split('/').skip(1).map(|t| percent_decode(t).replace("~1", "/").replace("~0", "~")).collect();
    for (i, token) in tokens.iter().enumerate() {
        let description = node.get("description").and_then(Value::as_str);
        if matches!(token.as_str(), "then" | "else") && node.get("if").is_some() {
            note = description.or(note);
        }
        if i + 1 == tokens.len() && token == "pattern" && note.is_none() {
            return description.map(str::to_owned);
        }
        node = match node {
            Value::Object(map) => map.get(token)?,
            Value::Array(items) => items.get(token.parse::<usize>().ok()?)?,
            _ => break,
        };
    }
    note.map(str::to_owned)
}

/// Minimal `%XX` decoding for URI fragments (e.g. `%24defs`).
fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = bytes.get(i + 1..i + 3).and_then(|h| std::str::from_utf8(h).ok());
        match (bytes[i], hex.and_then(|h| u8::from_str_radix(h, 16).ok())) {
            (b'%', Some(b)) => {
                out.push(b);
                i += 3;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

//! `GET /inbox/{id}`: one message — the submit ack's `review_url`. Shows the title, metadata,
//! the Markdown body (sanitized, §9.6), the task instructions, the context parts (text; data
//! pretty-printed; file links shown, never fetched), the outcome once terminal, and — for an open
//! ask/task this operator may resolve — the answer form ([`super::answer`]). Only chosen fields
//! are rendered, so `client_ref` and `state` never reach the page (§9.1, §9.3). A message marked
//! `sensitive` hides its content until the operator asks to reveal it (`?reveal=1`).

use std::collections::HashMap;

use axum::extract::{Path, State};
use axum::http::StatusCode;
use axum::response::Response;
use ma2h_core::inbox::{self, Allowed, InboxMessage};
use ma2h_core::{Hub, HubError};
use maud::{Markup, PreEscaped, html};
use serde_json::Value;

use super::answer;
use super::list::{delivery, expiry};
use super::session::Session;
use super::{human_duration, notice, render_markdown, respond};
use crate::extract::Params;

/// What the answer form shows besides the message: earlier input and validation messages.
#[derive(Debug, Default)]
pub struct FormState {
    /// A message for the whole form.
    pub error: Option<String>,
    /// Messages per input field.
    pub field_errors: HashMap<String, String>,
    /// What the operator typed, by form field name.
    pub values: HashMap<String, String>,
    /// A confirmation shown above the page.
    pub info: Option<String>,
}

/// `GET /inbox/{id}`.
pub async fn show(hub: &Hub, session: &Session, id: &str, reveal: bool, info: Option<String>) -> Response {
    match inbox::view(hub, &session.principal, id).await {
        Ok(view) => render(hub, session, &view, reveal, &FormState { info, ..FormState::default() }, StatusCode::OK),
        Err(e) => error_page(session, &e),
    }
}

pub async fn page(State(hub): State<Hub>, session: Session, Path(id): Path<String>, params: Params) -> Response {
    let info = params.get("done").map(|_| "Your answer was recorded.".to_owned());
    show(&hub, &session, &id, params.get("reveal") == Some("1"), info).await
}

/// The page for a failed load: unknown (or another account's) id → 404, purged → 410.
pub fn error_page(session: &Session, e: &HubError) -> Response {
    match e {
        HubError::NotFound => {
            notice(StatusCode::NOT_FOUND, Some(session), "Not found", "There is no such message in your account.")
        }
        HubError::Gone => {
            notice(StatusCode::GONE, Some(session), "Removed", "This message was removed after the retention period.")
        }
        other => {
            tracing::error!(error = %other, "inbox message page failed");
            notice(StatusCode::INTERNAL_SERVER_ERROR, Some(session), "Something went wrong", "Please try again.")
        }
    }
}

/// Render the message page (also used to re-show the form with validation messages).
pub fn render(
    hub: &Hub,
    session: &Session,
    view: &InboxMessage,
    reveal: bool,
    form: &FormState,
    status: StatusCode,
) -> Response {
    let (rec, env) = (&view.record, &view.envelope);
    let now = hub.clock.now();
    let masked = env.sensitive && !reveal;
    let id = rec.id.as_str();
    let body = html! {
        @if let Some(info) = &form.info { p.notice role="status" { (info) } }
        h1 { (rec.title) }
        div.meta {
            span class=(format!("badge p-{}", rec.priority.as_str())) { (rec.priority.as_str()) }
            span { (rec.kind.as_str()) }
            span { "status " strong { (view.status.as_str()) } }
            span { "agent " a href=(format!("/inbox/agents/{}", rec.agent_id.as_str())) { (rec.agent_id.as_str()) } }
            @if let Some(to) = &env.to { span { "to " strong { (to) } } }
            @if let Some(p) = &env.agent.project { span { "project " (p) } }
            span { "received " (human_duration(now - rec.created_at)) " ago" }
            @if let (Some(e), true) = (rec.expires_at, rec.status.is_open()) { (expiry(e, now)) }
            @for t in &env.tags { span { "#" (t) } }
        }
        @if masked {
            p.notice.masked {
                "This message is marked sensitive; its content is hidden. "
                a href=(format!("/inbox/{id}?reveal=1")) { "Reveal content" }
            }
        } @else {
            @if let Some(b) = env.raw.get("body").and_then(Value::as_str) {
                section.body aria-label="Message body" { (PreEscaped(render_markdown(b))) }
            }
            @if let Some(action) = env.action() {
                h2 { "Instructions" }
                div.body { (PreEscaped(render_markdown(&action.instructions))) }
                @if let Some(v) = &action.verification {
                    h2 { "How to verify" }
                    div.body { (PreEscaped(render_markdown(v))) }
                }
            }
            @if let Some(parts) = env.raw.get("context").and_then(Value::as_array) {
                @if !parts.is_empty() {
                    h2 { "Context" }
                    @for part in parts { (context_part(part)) }
                }
            }
        }
        @if let Some(entry) = &view.outbound { (agent_to_agent(entry, now)) }
        @if let Some(resp) = &rec.response { (outcome(view, resp, reveal)) }
        @match &view.allowed {
            Allowed::Resolve(aff) => (answer::form(view, *aff, &session.csrf, form)),
            Allowed::Denied(reason) => {
                h2 { "Answer" }
                p.notice role="note" { strong { "You can't resolve this message. " } (reason) }
            }
            Allowed::Closed => {}
        }
        p { a href="/inbox" { "← Back to the inbox" } }
    };
    respond(status, super::page(&rec.title, Some(session), body))
}

/// An addressed message (§8.7.1): who sent it to whom, and its outbound mailbox track (§14.2) —
/// what the sender's own GET reports.
fn agent_to_agent(entry: &ma2h_core::mailbox::MailboxEntry, now: ma2h_protocol::time::Timestamp) -> Markup {
    use ma2h_core::mailbox::Track;
    let track = entry.track(now);
    let fmt = |t: ma2h_protocol::time::Timestamp| ma2h_protocol::time::format(t);
    html! {
        section.a2a aria-label="Agent to agent" {
            h2 { "Agent to agent" }
            dl.kv {
                dt { "From" } dd { code { (entry.payload["from"].as_str().unwrap_or(&entry.author)) } " (attested by the Hub)" }
                dt { "To" } dd { code { (entry.payload["to"].as_str().unwrap_or("")) } }
                dt { "Mailbox" } dd {
                    strong { (track.as_str()) }
                    @if let Some(p) = track.prior() { " — prior " (p) (if p == "queued" { " (never seen)" } else { " (seen, never acknowledged)" }) }
                }
                @if let Some(d) = entry.delivered_at { dt { "Delivered" } dd { time datetime=(fmt(d)) { (fmt(d)) } } }
                @if let Track::Acknowledged { ack, .. } = &track { dt { "Acknowledged" } dd { time datetime=(fmt(ack.acked_at)) { (fmt(ack.acked_at)) } } }
                dt { "Deliveries" } dd { (entry.deliveries) }
            }
        }
    }
}

/// One §4.2 Part: text as text, data pretty-printed, files as a link that the server never
/// fetches (and the browser only follows on an explicit click, in a new tab).
fn context_part(part: &Value) -> Markup {
    html! {
        div.part {
            @match part["kind"].as_str() {
                Some("text") => { pre.data { (part["text"].as_str().unwrap_or("")) } }
                Some("data") => {
                    pre.data { (serde_json::to_string_pretty(&part["data"]).unwrap_or_default()) }
                }
                Some("file") => { (file_part(&part["file"])) }
                _ => { p.hint { "(unrecognised part)" } }
            }
        }
    }
}

fn file_part(file: &Value) -> Markup {
    let uri = file["uri"].as_str().unwrap_or("");
    let name = file["name"].as_str().unwrap_or(uri);
    let linkable = url::Url::parse(uri).is_ok_and(|u| matches!(u.scheme(), "http" | "https"));
    html! {
        p {
            "File: "
            @if linkable {
                a href=(uri) rel="noopener noreferrer nofollow" target="_blank" { (name) }
                span.ext { " ↗ external: " (uri) }
            } @else {
                strong { (name) } " " code { (uri) }
            }
            @if let Some(m) = file["mime_type"].as_str() { " " span.hint { "(" (m) ")" } }
        }
    }
}

/// The outcome of a terminal ask/task: resolution, actor, time, value, comment, checklist and
/// push delivery state. Input values marked `x-ma2h-sensitive` are masked unless revealed.
fn outcome(view: &InboxMessage, resp: &Value, reveal: bool) -> Markup {
    let detail = &resp["response"];
    let sensitive_fields = sensitive_fields(view);
    let masked = (view.envelope.sensitive || !sensitive_fields.is_empty()) && !reveal;
    let id = view.record.id.as_str();
    html! {
        section.resolved aria-label="Outcome" {
            h2 { "Outcome: " (resp["resolution"].as_str().unwrap_or("")) }
            dl.kv {
                @if let Some(a) = detail["actor"].as_str() { dt { "By" } dd { (a) } }
                @if let Some(t) = detail["resolved_at"].as_str() { dt { "At" } dd { time datetime=(t) { (t) } } }
                @if resp["defaulted"] == Value::Bool(true) { dt { "Default" } dd { "applied on expiry" } }
                @match &detail["value"] {
                    Value::Null => {}
                    Value::Object(fields) => {
                        @for (k, v) in fields {
                            dt { (k) }
                            dd {
                                @if masked && (view.envelope.sensitive || sensitive_fields.contains(k)) {
                                    span.masked { "•••••• (sensitive) " }
                                    a href=(format!("/inbox/{id}?reveal=1")) { "reveal" }
                                } @else { (scalar(v)) }
                            }
                        }
                    }
                    v => { dt { "Answer" } dd { @if masked && view.envelope.sensitive { span.masked { "•••••• (sensitive)" } } @else { (scalar(v)) } } }
                }
                @if let Some(c) = detail["comment"].as_str() { dt { "Comment" } dd { (c) } }
                @if view.record.kind != ma2h_protocol::envelope::MessageType::Notify {
                    dt { "Delivery" }
                    dd { (delivery(&push_json(view))) }
                }
            }
            @if let Some(items) = detail["checklist"].as_array() {
                ul {
                    @for i in items {
                        li { (if i["done"] == Value::Bool(true) { "☑ " } else { "☐ " }) (i["text"].as_str().unwrap_or("")) }
                    }
                }
            }
        }
    }
}

fn push_json(view: &InboxMessage) -> Value {
    match &view.record.push {
        Some(p) => serde_json::json!({ "status": p.status.as_str(), "attempts": p.attempts }),
        None => Value::Null,
    }
}

fn scalar(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// Names of input-schema properties marked `x-ma2h-sensitive: true` (§9.6).
pub fn sensitive_fields(view: &InboxMessage) -> Vec<String> {
    view.envelope
        .request()
        .and_then(|r| r.schema.as_ref())
        .and_then(|s| s["properties"].as_object())
        .map(|props| {
            props.iter().filter(|(_, p)| p["x-ma2h-sensitive"] == Value::Bool(true)).map(|(k, _)| k.clone()).collect()
        })
        .unwrap_or_default()
}

//! `GET /inbox/{id}`: one message — the submit ack's `review_url`. Shows the title, metadata,
//! the Markdown body (sanitized, §9.6), the task instructions, the context parts (text; data
//! pretty-printed; file links shown, never fetched), the outcome once terminal, and — for an open
//! ask/task this operator may resolve — the answer form ([`super::answer`]). Only chosen fields
//! are rendered, so `client_ref` and `state` never reach the page (§9.1, §9.3). A message marked
//! `sensitive` hides its content until the operator asks to reveal it (`?reveal=1`).

use std::collections::HashMap;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use ma2h_core::mailbox::inbox;
use ma2h_core::mailbox::inbox::{Allowed, InboxMessage};
use ma2h_core::{Hub, HubError};
use ma2h_protocol::envelope::{MessageType, Verb};
use maud::{Markup, PreEscaped, html};
use serde_json::Value;

use super::answer;
use super::list::delivery;
use super::rows::{expiry, stamp};
use super::session::Session;
use super::{notice, render_markdown, respond, went_wrong};
use crate::extract::{Params, Path};

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
    /// Answer-and-next is on: after this answer, open the next message the operator may answer
    /// (issue 39; the operator came here from it, or ticked it).
    pub next: bool,
}

/// `GET /inbox/{id}`.
pub async fn show(hub: &Hub, session: &Session, id: &str, reveal: bool, info: Option<String>) -> Response {
    show_state(hub, session, id, reveal, FormState { info, ..FormState::default() }).await
}

async fn show_state(hub: &Hub, session: &Session, id: &str, reveal: bool, state: FormState) -> Response {
    let view = match inbox::view(hub, &session.principal, id).await {
        Ok(view) => view,
        Err(e) => return error_page(session, &e),
    };
    // The operator's first view goes into the timeline (issue 39): written once, read from the
    // view's own triage record; never a reason to fail the page.
    let seen = super::claims::me(session).is_none_or(|me| view.triage.as_ref().is_some_and(|t| t.viewed_by(me)));
    if !seen && let Err(e) = ma2h_core::messages::triage::viewed(hub, &session.principal, id).await {
        tracing::warn!(error = %e, "first view not recorded");
    }
    render(hub, session, &view, reveal, &state, StatusCode::OK)
}

pub async fn page(State(hub): State<Hub>, session: Session, Path(id): Path<String>, params: Params) -> Response {
    let info = match (params.get("done"), params.get("answered")) {
        _ if params.get("granted").is_some() => Some(format!(
            "Your answer was recorded, and it stands: later asks of the same kind from this agent are answered with it until it ends or you revoke it (grant {}, on the Policies page).",
            params.get("granted").unwrap_or("")
        )),
        _ if params.get("grant_failed").is_some() => {
            Some("Your answer was recorded, but it could not be remembered for later asks.".to_owned())
        }
        _ if params.get("approved").is_some() => {
            Some("Your approval was recorded. The answer is sent when the quorum is complete.".to_owned())
        }
        (Some(_), _) => Some("Your answer was recorded.".to_owned()),
        (None, Some(_)) => Some("Your answer was recorded. Next waiting for you:".to_owned()),
        _ => None,
    };
    let next = params.get("then") == Some("next");
    show_state(&hub, &session, &id, params.get("reveal") == Some("1"), FormState { info, next, ..FormState::default() })
        .await
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
        other => went_wrong(Some(session), "inbox message page", &other),
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
      div data-live="message" data-status=(view.status.as_str())
          data-claim=(view.triage.as_ref().and_then(|t| t.data.claim.as_ref()).map(|c| c.by.to_string()).unwrap_or_default()) {
        @if let Some(info) = &form.info { p.notice role="status" { (info) } }
        h1 { (rec.title) }
        div.meta {
            span class=(format!("badge p-{}", rec.priority.as_str())) { (rec.priority.as_str()) }
            span { (rec.kind.as_str()) }
            span { "status " strong { (view.status.as_str()) } }
            span { "agent " a href=(format!("/inbox/agents/{}", rec.agent_id.as_str())) { (rec.agent_id.as_str()) } }
            @if let Some(to) = &env.to { span { "to " strong { (to) } } }
            @if let Some(p) = &env.agent.project { span { "project " (p) } }
            span { "received " (stamp(rec.created_at, now)) }
            @if let (Some(e), true) = (rec.expires_at, rec.status.is_open()) { (expiry(e, now)) }
            @for t in &env.tags { span { "#" (t) } }
        }
        @if rec.kind != MessageType::Notify { (stakes(view, now)) }
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
        @if let Some(resp) = &rec.response { (outcome(view, resp, reveal, now)) }
        @if let Some(n) = &view.notifications { (notifications(n, now)) }
        @if rec.status.is_open() && rec.kind != MessageType::Notify { (super::claims::section(view, session, now)) }
        @if rec.status.is_open() { (super::approvals::section(view, now)) }
        @match &view.allowed {
            // Issue 39: a sensitive ask is answered only after its content was revealed, so
            // nobody approves what they have not seen (the resolve POST checks it too).
            Allowed::Resolve(_) if masked => {
                h2 #answer { "Answer" }
                p.notice role="note" {
                    "This message is marked sensitive. Reveal its content before you answer, so you see what you approve. "
                    a href=(format!("/inbox/{id}?reveal=1#answer")) { "Reveal and answer" }
                }
            }
            Allowed::Resolve(aff) => {
                @if let Some(absent) = &view.on_behalf_of {
                    p.notice role="note" { "You answer on behalf of " strong { (absent) } ", who is away and named you their delegate." }
                }
                // issue 41: a policy that asks for a passkey puts a fresh step-up in the form
                @let step_up = view.approval_policy.as_ref().filter(|p| p.passkey)
                    .map(|_| super::passkeys::step_up(hub, session, id));
                (answer::form(view, *aff, &session.csrf, form, step_up.as_ref()))
            }
            Allowed::Denied(reason) => {
                h2 { "Answer" }
                p.notice role="note" { strong { "You can't resolve this message. " } (reason) }
            }
            Allowed::Closed => {}
        }
        (super::timeline::section(view, now))
        p { a href="/inbox" { "← Back to the inbox" } }
      }
    };
    respond(status, super::page(&rec.title, Some(session), body))
}

/// What is at stake before answering: who asked (agent, run, runtime, session), who may answer
/// (§9.1), what happens on expiry (§7: the default and when), and whether the agent proposed an
/// answer to accept as-is or edit (§5.2 `allow_accept`/`allow_edit`).
fn stakes(view: &InboxMessage, now: ma2h_protocol::time::Timestamp) -> Markup {
    let (rec, env) = (&view.record, &view.envelope);
    // §9.6: proposed or default values of a sensitive message or field are not spelled out here.
    let hidden = |k: &str| env.sensitive || sensitive_fields(view).iter().any(|f| f == k);
    let runtime = env.raw.get("agent").and_then(|a| a.get("runtime")).and_then(Value::as_str);
    let request = env.request();
    let proposal = request.and_then(|r| r.schema.as_ref()).and_then(ma2h_protocol::rules::proposal);
    html! {
        section.stakes aria-label="At stake" {
            h2 { "At stake" }
            dl.kv {
                dt { "Asked by" }
                dd {
                    code { (env.agent.id.as_str()) } " · run " code { (env.agent.run_id) }
                    @if let Some(r) = runtime { " · " (r) }
                    @if let Some(s) = &env.agent.session { " · session " code { (s) } }
                }
                dt { "Who may answer" }
                dd {
                    @match env.allowed_resolvers() {
                        Some(list) if !list.is_empty() => { (list.join(", ")) }
                        _ => @if let Some(to) = &env.to {
                            "only the addressee, " code { (to) } " (no allowed_resolvers)"
                        } @else {
                            "only the submitting agent itself (no allowed_resolvers, §9.1)"
                        },
                    }
                }
                @if rec.status.is_open() {
                    dt { "On expiry" }
                    dd {
                        @match rec.expires_at {
                            None => "no expiry: it waits until someone answers or the agent cancels it",
                            Some(e) => { (stamp(e, now)) ": " (super::prose(&on_expiry(&env.verb, &hidden))) }
                        }
                    }
                }
                @if let (Some(p), Some(req)) = (&proposal, request) {
                    dt { "Proposed" }
                    dd {
                        (proposal_text(p, &hidden))
                        @if req.permissions.allow_accept { " — you can accept it as-is" }
                        @if req.permissions.allow_edit { ", or edit it" } @else { " (editing is not allowed)" }
                    }
                }
            }
        }
    }
}

/// §7: what the expiry does — the default's label for a select/confirm ask.
fn on_expiry(verb: &Verb, hidden: &dyn Fn(&str) -> bool) -> String {
    match verb {
        Verb::Ask(req) => match &req.default_on_expire {
            Some(Value::String(v)) => {
                let label = req.label_of(v);
                format!("“{label}” is applied automatically (by system:default_on_expire)")
            }
            Some(Value::Object(o)) => {
                format!("the default answer is applied ({})", proposal_text(&Value::Object(o.clone()), hidden))
            }
            _ => "it expires unanswered; the agent gets `expired`".to_owned(),
        },
        _ => "it expires; the agent gets `expired`".to_owned(),
    }
}

/// `replicas = 3, region = eu` (a sensitive field as `token = ••••••`).
fn proposal_text(v: &Value, hidden: &dyn Fn(&str) -> bool) -> String {
    v.as_object()
        .map(|o| {
            o.iter()
                .map(|(k, v)| if hidden(k) { format!("{k} = ••••••") } else { format!("{k} = {}", scalar(v)) })
                .collect::<Vec<_>>()
                .join(", ")
        })
        .unwrap_or_default()
}

/// An addressed message (§8.7.1): who sent it to whom, and its outbound mailbox track (§14.2) —
/// what the sender's own GET reports.
fn agent_to_agent(entry: &ma2h_core::mailbox::model::MailboxEntry, now: ma2h_protocol::time::Timestamp) -> Markup {
    use ma2h_core::mailbox::model::Track;
    let track = entry.track(now);
    html! {
        section.a2a aria-label="Agent to agent" {
            h2 { "Agent to agent" }
            dl.kv {
                dt { "From" } dd { code { (entry.payload["from"].as_str().unwrap_or(&entry.author)) } " (attested by the Hub)" }
                dt { "To" } dd { code { (entry.payload["to"].as_str().unwrap_or("")) } }
                dt { "Mailbox" } dd {
                    strong { (track.as_str()) }
                    @if let Some(p) = track.prior().map(|p| p.as_str()) { " — prior " (p) (if p == "queued" { " (never seen)" } else { " (seen, never acknowledged)" }) }
                }
                @if let Some(d) = entry.delivered_at { dt { "Delivered" } dd { (stamp(d, now)) } }
                @if let Track::Acknowledged { ack, .. } = &track { dt { "Acknowledged" } dd { (stamp(ack.acked_at, now)) } }
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
fn outcome(view: &InboxMessage, resp: &Value, reveal: bool, now: ma2h_protocol::time::Timestamp) -> Markup {
    let detail = &resp["response"];
    let sensitive_fields = sensitive_fields(view);
    let masked = (view.envelope.sensitive || !sensitive_fields.is_empty()) && !reveal;
    let id = view.record.id.as_str();
    html! {
        section.resolved aria-label="Outcome" {
            h2 { "Outcome: " (resp["resolution"].as_str().unwrap_or("")) }
            dl.kv {
                @if let Some(a) = detail["actor"].as_str() { dt { "By" } dd { (a) } }
                @if let Some(t) = detail["resolved_at"].as_str().and_then(ma2h_protocol::time::parse) {
                    dt { "At" } dd { (stamp(t, now)) }
                }
                @if detail["edited"] == Value::Bool(true) { dt { "Edited" } dd { "yes: the proposal was changed before answering" } }
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
                    v => { dt { "Answer" } dd { @if masked && view.envelope.sensitive { span.masked { "•••••• (sensitive)" } } @else { (option_label(view, v)) } } }
                }
                @if let Some(c) = detail["comment"].as_str() { dt { "Comment" } dd { (c) } }
                // issue 40: who made up the quorum, who stood in for whom
                @if let Some(a) = detail["approvals"].as_array().filter(|a| !a.is_empty()) {
                    dt { "Approved by" }
                    dd { (a.iter().filter_map(|x| x["actor"].as_str()).collect::<Vec<_>>().join(", ")) }
                }
                @if let Some(o) = detail["on_behalf_of"].as_str() { dt { "On behalf of" } dd { (o) } }
                @if let Some(g) = detail["grant_id"].as_str() { dt { "Answered by grant" } dd { code { (g) } } }
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

/// Where the message was announced (issue 20): each channel step — announcement, reminder,
/// escalation, outcome update — with its state, so a failing channel is visible here.
fn notifications(n: &ma2h_core::channels::outbox::Notification, now: ma2h_protocol::time::Timestamp) -> Markup {
    use ma2h_core::channels::outbox::{StepKind, StepStatus};
    let what = |k: StepKind| match k {
        StepKind::Created => "announced",
        StepKind::Reminder => "reminded",
        StepKind::Escalated => "escalated",
        StepKind::Outcome => "outcome shown",
        StepKind::Ladder => "on call",
    };
    html! {
        section.notifications aria-label="Notifications" {
            h2 { "Notifications" }
            p.hint { "Route " code { (n.route) } }
            table.cards {
                thead { tr { th { "Channel" } th { "Step" } th { "State" } th { "When" } } }
                tbody {
                    @for s in &n.steps {
                        tr {
                            td data-label="Channel" { @if s.channel.is_empty() { "ladder" } @else { code { (s.channel) } } }
                            td data-label="Step" {
                                (what(s.kind))
                                // issue 40: who a ladder rung is for
                                @if let (Some(r), Some(who)) = (s.rung, &s.recipient) {
                                    ": human:" (who) " " span.hint { "(rung " (u16::from(r) + 1) ")" }
                                }
                            }
                            td data-label="State" {
                                @match s.status {
                                    StepStatus::Sent => { "sent" }
                                    StepStatus::Pending if s.attempts > 0 => { "retrying (" (s.attempts) " attempts)" }
                                    StepStatus::Pending => { "scheduled" }
                                    StepStatus::Failed => { strong.failed { "failed" } }
                                    StepStatus::Cancelled => { "not needed" }
                                }
                                @if let Some(e) = &s.last_error { " " span.hint { "— " (e) } }
                            }
                            td data-label="When" { (stamp(s.done_at.unwrap_or(s.due_at), now)) }
                        }
                    }
                }
            }
        }
    }
}

fn push_json(view: &InboxMessage) -> Value {
    view.record.push.as_ref().map_or(Value::Null, |p| serde_json::to_value(p.view()).unwrap_or_default())
}

/// A chosen option as its label, with the value beside it when they differ.
fn option_label(view: &InboxMessage, v: &Value) -> String {
    let value = scalar(v);
    match view.envelope.request().map(|r| r.label_of(&value)) {
        Some(l) if l != value => format!("{l} ({value})"),
        _ => value,
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

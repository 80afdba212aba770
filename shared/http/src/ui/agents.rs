//! The human→agent side of the inbox: an agent's page — its presence (§15.4: "listening now" or
//! "will receive on its next run"), a form to send it a directive (§13), and its recent
//! directives with their delivery tracks (§14.2) — and one directive's page. The agent's ack note
//! is untrusted text: rendered escaped, never as markup (§14.4).
//!
//! | route | page |
//! |---|---|
//! | `GET /inbox/agents` | open an agent by id; agents with open messages |
//! | `GET /inbox/agents/{*agent}` | the agent page (ids may contain `/`) |
//! | `POST /inbox/directives` | send (CSRF-checked), through the same use case as the API |
//! | `GET /inbox/directives/{id}` | one directive and its track |

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use ma2h_core::mailbox::directives;
use ma2h_core::mailbox::model::{MailboxEntry, Track};
use ma2h_core::mailbox::presence;
use ma2h_core::mailbox::presence::PresenceState;
use ma2h_core::messages::list;
use ma2h_core::messages::list::ListParams;
use ma2h_core::messages::listing::ListFilter;
use ma2h_core::{Hub, HubError};
use ma2h_protocol::time::{self, Timestamp};
use maud::{Markup, PreEscaped, html};
use serde_json::{Value, json};

use super::session::Session;
use super::{csrf_refused, form_get, form_pairs, notice, page, render_markdown, respond, went_wrong};
use crate::extract::{Body, Params, Path};

/// Recent directives shown on an agent page.
const RECENT: usize = 20;

pub(super) fn agent_href(agent: &str) -> String {
    format!(
        "/inbox/agents/{}",
        agent
            .split('/')
            .map(|s| url::form_urlencoded::byte_serialize(s.as_bytes()).collect::<String>())
            .collect::<Vec<_>>()
            .join("/")
    )
}

/// `GET /inbox/agents`.
pub async fn index(State(hub): State<Hub>, session: Session, params: Params) -> Response {
    if let Some(agent) = params.get("agent").map(str::trim).filter(|a| !a.is_empty()) {
        return Redirect::to(&agent_href(agent)).into_response();
    }
    let query =
        ListParams { resolved: false, filter: ListFilter::default(), cursor: None, limit: Some(500), counts: false };
    // Issue 39: every agent of the account (its credentials' roster), with how many of the
    // first 500 open messages are its own.
    let open: Vec<String> = match list::list(&hub, &session.principal, query).await {
        Ok(l) => l.page.items.iter().map(|m| m.agent_id.to_string()).collect(),
        Err(e) => return went_wrong(Some(&session), "agents page", &e),
    };
    let mut agents: Vec<String> = match ma2h_core::mailbox::inbox::agents(&hub, &session.principal).await {
        Ok(all) => all.iter().map(ToString::to_string).collect(),
        Err(e) => return went_wrong(Some(&session), "agents page", &e),
    };
    agents.extend(open.iter().cloned());
    agents.sort();
    agents.dedup();
    let open_of = |a: &str| open.iter().filter(|o| o.as_str() == a).count();
    let policy = ma2h_core::inter_agent::rules::read(&hub, &session.principal).await.unwrap_or_default();
    let body = html! {
        h1 { "Agents" }
        form.inline method="get" action="/inbox/agents" {
            label for="agent" { "Agent id " }
            input #agent type="text" name="agent" required placeholder="deploybot/web";
            button type="submit" { "Open" }
        }
        h2 { "Every agent" }
        @if agents.is_empty() { p { "No agent has a credential yet (" code { "ma2h-hub admin create-agent" } ")." } }
        @else {
            table.cards {
                thead { tr { th { "Agent" } th { "Open messages" } } }
                tbody {
                    @for a in &agents {
                        tr {
                            td data-label="Agent" { a.id href=(agent_href(a)) { (a) } }
                            td data-label="Open messages" { @match open_of(a) { 0 => { "—" }, n => { (n) } } }
                        }
                    }
                }
            }
        }
        (super::inter_agent::section(&hub, &policy, &session.csrf))
    };
    respond(StatusCode::OK, page("Agents", Some(&session), body))
}

/// `GET /inbox/agents/{*agent}`.
pub async fn agent(State(hub): State<Hub>, session: Session, Path(agent): Path<String>, params: Params) -> Response {
    let info = params
        .get("sent")
        .map(|id| format!("Directive {id} queued."))
        .or_else(|| params.get("done").map(str::to_owned));
    render_agent(&hub, &session, &agent, info, None, StatusCode::OK).await
}

async fn render_agent(
    hub: &Hub,
    session: &Session,
    agent: &str,
    info: Option<String>,
    error: Option<(String, Vec<(String, String)>)>,
    status: StatusCode,
) -> Response {
    let (presence, recent, sessions) = match (
        presence::read(hub, &session.principal, agent).await,
        directives::recent(hub, &session.principal, agent, RECENT).await,
        agent_sessions(hub, session, agent).await,
    ) {
        (Ok(p), Ok(r), Ok(s)) => (p, r, s),
        (Err(e), _, _) | (_, Err(e), _) | (_, _, Err(e)) => {
            return went_wrong(Some(session), "agent page", &e);
        }
    };
    let now = hub.clock.now();
    let (error, values) = error.unwrap_or_default();
    let value = |k: &str| values.iter().find(|(n, _)| n == k).map(|(_, v)| v.as_str()).unwrap_or("");
    let body = html! {
        @if let Some(i) = &info { p.notice role="status" { (i) } }
        h1 { "Agent " (agent) }
        p.meta {
            @match presence.state {
                PresenceState::Online => { span.badge.online { "online" } " listening now — a directive is picked up promptly" }
                PresenceState::Offline => { span.badge { "offline" } " will receive on its next run" }
                PresenceState::Unknown => { span.badge { "unknown" } " never seen polling; will receive on its first run" }
            }
            @if let Some(seen) = presence.last_seen { " · last seen " (ago(seen, now)) }
        }
        (super::agent_sessions::section(session, agent, &sessions.0, sessions.1.as_ref(), now))
        h2 #send { "Send a directive" }
        form method="post" action="/inbox/directives" {
            input type="hidden" name="csrf" value=(session.csrf);
            input type="hidden" name="to" value=(format!("agent:{agent}"));
            @if !error.is_empty() { p.notice.error role="alert" { (super::prose(&error)) } }
            label for="title" { "Title" }
            input #title type="text" name="title" required maxlength="200" value=(value("title"));
            label for="body" { "Details " span.hint { "(Markdown, optional)" } }
            textarea #body name="body" { (value("body")) }
            label for="priority" { "Priority" }
            select #priority name="priority" {
                @for p in ["normal", "low", "high", "urgent"] { option value=(p) selected[value("priority") == p] { (p) } }
            }
            label for="expires" { "Expires in minutes " span.hint { "(optional; undelivered after this, it is dropped)" } }
            input #expires type="number" name="expires_in_minutes" min="1" max=(MAX_EXPIRY_MINUTES) value=(value("expires_in_minutes"));
            div.actions { button type="submit" { "Send" } }
        }
        h2 { "Recent directives" }
        @if recent.is_empty() { p { "None yet." } }
        @else {
            table.cards {
                thead { tr { th { "Directive" } th { "Sent" } th { "Delivery" } th { "Note" } } }
                tbody {
                    @for (e, t) in &recent {
                        tr {
                            td data-label="Directive" { a href=(format!("/inbox/directives/{}", e.key)) { (title_of(e)) } }
                            td data-label="Sent" { (ago(e.enqueued_at, now)) }
                            td data-label="Delivery" { (track_text(t, now)) }
                            td data-label="Note" { @if let Track::Acknowledged { ack, .. } = t { @if let Some(n) = &ack.note { (n) } } }
                        }
                    }
                }
            }
        }
    };
    respond(status, page(&format!("Agent {agent}"), Some(session), body))
}

/// The agent's sessions and its stop record (none for an id that cannot be an agent's).
async fn agent_sessions(
    hub: &Hub,
    session: &Session,
    agent: &str,
) -> Result<(Vec<ma2h_core::sessions::model::SessionRecord>, Option<ma2h_core::sessions::model::StopRecord>), HubError>
{
    let Some(id) = ma2h_protocol::ids::AgentId::parse(agent) else { return Ok((Vec::new(), None)) };
    let list = ma2h_core::sessions::lease::of_agent(hub, &session.principal, &id).await?;
    Ok((list, ma2h_core::sessions::lease::stop_status(hub, &session.principal, agent).await?))
}

fn title_of(e: &MailboxEntry) -> String {
    e.payload.get("title").and_then(Value::as_str).unwrap_or(&e.key).to_owned()
}

/// The inbox's one way of writing a time: relative, then absolute in UTC ([`super::rows::stamp`]).
pub(super) fn ago(t: Timestamp, now: Timestamp) -> Markup {
    super::rows::stamp(t, now)
}

fn track_text(t: &Track, now: Timestamp) -> Markup {
    html! {
        @match t {
            Track::Queued => "queued — not yet delivered",
            Track::Delivered { delivered_at } => { "delivered " (ago(*delivered_at, now)) ", not acknowledged" }
            Track::Acknowledged { ack, .. } => { "acknowledged " (ago(ack.acked_at, now)) " by " (ack.by) }
            Track::Expired => "expired — never delivered",
            Track::Bounced { delivered_at: Some(_), at } => { "bounced " (ago(*at, now)) " — delivered, never acknowledged: its session ended, or its retention passed" }
            Track::Bounced { delivered_at: None, at } => { "bounced " (ago(*at, now)) " — its session ended before delivery" }
        }
    }
}

/// The directive form's longest expiry: ten years, in minutes.
const MAX_EXPIRY_MINUTES: i64 = 10 * 366 * 24 * 60;

/// `POST /inbox/directives`: the form through `directives::create`, attested `human:<you>`.
pub async fn send(State(hub): State<Hub>, session: Session, Body(body): Body) -> Response {
    let pairs = form_pairs(&body);
    if !session.csrf_ok(form_get(&pairs, "csrf")) {
        return csrf_refused(Some(&session));
    }
    let to = form_get(&pairs, "to").unwrap_or_default().to_owned();
    let agent = to.strip_prefix("agent:").unwrap_or_default().to_owned();
    let mut input = json!({ "to": to, "title": form_get(&pairs, "title").unwrap_or_default().trim() });
    if let Some(b) = form_get(&pairs, "body").filter(|b| !b.trim().is_empty()) {
        input["body"] = json!(b);
    }
    if let Some(p) = form_get(&pairs, "priority").filter(|p| *p != "normal") {
        input["priority"] = json!(p);
    }
    if let Some(m) = form_get(&pairs, "expires_in_minutes").map(str::trim).filter(|m| !m.is_empty()) {
        match m.parse::<i64>() {
            // Bounded, so the date is always representable (found by a black-box pass: a huge
            // number overflowed the clock arithmetic).
            Ok(n @ 1..=MAX_EXPIRY_MINUTES) => {
                input["expires_at"] = json!(time::format(hub.clock.now() + chrono::Duration::minutes(n)));
            }
            _ => {
                let err = (
                    format!("Expires in minutes must be a whole number from 1 to {MAX_EXPIRY_MINUTES} (ten years)."),
                    pairs.clone(),
                );
                return render_agent(&hub, &session, &agent, None, Some(err), StatusCode::UNPROCESSABLE_ENTITY).await;
            }
        }
    }
    match directives::create(&hub, &session.principal, &input).await {
        Ok(entry) => Redirect::to(&format!("{}?sent={}", agent_href(&agent), entry.key)).into_response(),
        Err(e @ (HubError::Protocol(_) | HubError::UnknownDestination(_) | HubError::RateLimited { .. })) => {
            let status = if matches!(e, HubError::RateLimited { .. }) {
                StatusCode::TOO_MANY_REQUESTS
            } else {
                StatusCode::UNPROCESSABLE_ENTITY
            };
            render_agent(&hub, &session, &agent, None, Some((e.to_string(), pairs)), status).await
        }
        Err(e) => went_wrong(Some(&session), "sending a directive", &e),
    }
}

/// `GET /inbox/directives/{id}`.
pub async fn directive(State(hub): State<Hub>, session: Session, Path(id): Path<String>) -> Response {
    let (entry, track) = match directives::read(&hub, &session.principal, &id).await {
        Ok(v) => v,
        Err(HubError::NotFound) => {
            return notice(
                StatusCode::NOT_FOUND,
                Some(&session),
                "Not found",
                "There is no such directive in your account.",
            );
        }
        Err(e) => return went_wrong(Some(&session), "directive page", &e),
    };
    let now = hub.clock.now();
    let agent = entry.mailbox.agent.to_string();
    let d = &entry.payload;
    let body = html! {
        h1 { (title_of(&entry)) }
        p.meta {
            span { "to " a href=(agent_href(&agent)) { (agent) } }
            span { "from " (d.get("from").and_then(Value::as_str).unwrap_or("")) }
            @if let Some(p) = d.get("priority").and_then(Value::as_str) { span class=(format!("badge p-{p}")) { (p) } }
            span { "sent " (ago(entry.enqueued_at, now)) }
            span { (entry.key) }
        }
        @if let Some(b) = d.get("body").and_then(Value::as_str) {
            section.body aria-label="Directive body" { (PreEscaped(render_markdown(b))) }
        }
        h2 { "Delivery" }
        p { (track_text(&track, now)) @if entry.deliveries > 1 { " · delivered " (entry.deliveries) " times" } }
        @if let Track::Acknowledged { ack, .. } = &track {
            @if let Some(n) = &ack.note { blockquote { (n) } }
        }
    };
    respond(StatusCode::OK, page("Directive", Some(&session), body))
}

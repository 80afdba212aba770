//! The agent page's sessions (§16): each session with its state, lease and last sighting, the
//! operator's kill-switch per live session, and the agent's durable stop (§16.4.1) with the one
//! control that lifts it. Every control is a CSRF-checked form through the same use cases as the
//! API.
//!
//! | route | action |
//! |---|---|
//! | `POST /inbox/sessions/{id}/close` | close a session as the operator (also stops the agent) |
//! | `POST /inbox/agent-stop` | `action=stop` (close every live session) or `action=lift` |

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use ma2h_core::sessions::lease;
use ma2h_core::sessions::model::{EndKind, SessionRecord, SessionState, StopRecord};
use ma2h_core::{Hub, HubError};
use ma2h_protocol::time::Timestamp;
use maud::{Markup, html};
use serde_json::Value;

use super::agents::ago;
use super::session::Session;
use super::{confirm_page, confirmed, csrf_refused, form_get, form_pairs, notice, went_wrong};
use crate::extract::{Body, Path};

/// The sessions section of the agent page.
pub fn section(
    session: &Session,
    agent: &str,
    list: &[SessionRecord],
    stop: Option<&StopRecord>,
    now: Timestamp,
) -> Markup {
    html! {
        h2 #sessions { "Sessions" }
        @if let Some(s) = stop {
            div.notice.error role="status" {
                strong { "Stopped" } " by " (s.by) " " (ago(s.at, now))
                " — this agent cannot register new sessions until you lift the stop."
                (control(session, "/inbox/agent-stop", agent, "lift", "Lift the stop"))
            }
        } @else {
            p.hint { "Stopping the agent closes every live session and refuses new ones until you lift it." }
            (control(session, "/inbox/agent-stop", agent, "stop", "Stop this agent"))
        }
        @if list.is_empty() { p { "No sessions." } }
        @else {
            table.cards {
                thead { tr { th { "Session" } th { "State" } th { "Lease" } th { "Last seen" } th {} } }
                tbody {
                    @for s in list {
                        tr {
                            td data-label="Session" { code { (s.id) } @if let Some(l) = s.meta.get("label").and_then(Value::as_str) { br; (l) } }
                            td data-label="State" { (state_text(s, now)) }
                            td data-label="Lease" {
                                @match s.state(now) {
                                    SessionState::Active => { "expires " (ago(s.expires_at, now)) }
                                    SessionState::Ended(end) => { "ended " (ago(end.at, now)) }
                                }
                            }
                            td data-label="Last seen" { @if let Some(seen) = s.last_seen { (ago(seen, now)) } }
                            td.act {
                                @if s.is_live(now) {
                                    form.inline method="post" action=(format!("/inbox/sessions/{}/close", s.id)) {
                                        input type="hidden" name="csrf" value=(session.csrf);
                                        input type="hidden" name="agent" value=(agent);
                                        button.danger type="submit" { "Close (kill-switch)" }
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn control(session: &Session, action: &str, agent: &str, what: &str, label: &str) -> Markup {
    html! {
        form.inline method="post" action=(action) {
            input type="hidden" name="csrf" value=(session.csrf);
            input type="hidden" name="agent" value=(agent);
            input type="hidden" name="action" value=(what);
            button.danger[what == "stop"].secondary[what != "stop"] type="submit" { (label) }
        }
    }
}

fn state_text(s: &SessionRecord, now: Timestamp) -> &'static str {
    match s.state(now) {
        SessionState::Active => "active",
        SessionState::Ended(end) => match end.kind {
            EndKind::Closed => "closed by the agent",
            EndKind::ClosedByOperator => "closed by an operator",
            EndKind::Expired => "expired (lease lapsed)",
        },
    }
}

/// `POST /inbox/sessions/{id}/close`.
pub async fn close(State(hub): State<Hub>, session: Session, Path(id): Path<String>, Body(body): Body) -> Response {
    let pairs = form_pairs(&body);
    if !session.csrf_ok(form_get(&pairs, "csrf")) {
        return csrf_refused(Some(&session));
    }
    if !confirmed(&pairs) {
        let agent = form_get(&pairs, "agent").unwrap_or_default();
        return confirm_page(
            &session,
            "Close this session?",
            &format!(
                "Closing session {id} stops the agent that holds it now (kill-switch): its next call is refused, \
                 and mail addressed to it bounces to the senders. The agent can start a new session unless you also stop it."
            ),
            &format!("/inbox/sessions/{id}/close"),
            &pairs,
            "Close the session",
            &format!("{}#sessions", super::agents::agent_href(agent)),
        );
    }
    match lease::close(&hub, &session.principal, &id).await {
        Ok(s) => back_to(s.agent.as_str(), &format!("Session {} closed; the agent is stopped.", s.id)),
        Err(e) => failed(&session, e),
    }
}

/// `POST /inbox/agent-stop` (`action=stop|lift`).
pub async fn stop(State(hub): State<Hub>, session: Session, Body(body): Body) -> Response {
    let pairs = form_pairs(&body);
    if !session.csrf_ok(form_get(&pairs, "csrf")) {
        return csrf_refused(Some(&session));
    }
    let agent = form_get(&pairs, "agent").unwrap_or_default().to_owned();
    if form_get(&pairs, "action") == Some("stop") && !confirmed(&pairs) {
        return confirm_page(
            &session,
            &format!("Stop agent {agent}?"),
            "Stopping the agent closes every live session it holds and refuses new ones until you lift the stop. \
             Work it is doing now is interrupted.",
            "/inbox/agent-stop",
            &pairs,
            "Stop the agent",
            &format!("{}#sessions", super::agents::agent_href(&agent)),
        );
    }
    let result = match form_get(&pairs, "action") {
        Some("stop") => lease::stop_agent(&hub, &session.principal, &agent).await.map(|_| "Agent stopped."),
        Some("lift") => lease::lift_stop(&hub, &session.principal, &agent).await.map(|_| "Stop lifted."),
        _ => Err(HubError::validation("action must be stop or lift")),
    };
    match result {
        Ok(done) => back_to(&agent, done),
        Err(e) => failed(&session, e),
    }
}

fn back_to(agent: &str, done: &str) -> Response {
    let done: String = url::form_urlencoded::byte_serialize(done.as_bytes()).collect();
    Redirect::to(&format!("{}?done={done}#sessions", super::agents::agent_href(agent))).into_response()
}

fn failed(session: &Session, e: HubError) -> Response {
    match e {
        HubError::NotFound | HubError::UnknownSession => notice(
            StatusCode::NOT_FOUND,
            Some(session),
            "Not found",
            "There is no such session or agent in your account.",
        ),
        HubError::Protocol(_) => notice(StatusCode::BAD_REQUEST, Some(session), "Not done", &e.to_string()),
        e => went_wrong(Some(session), "session control", &e),
    }
}

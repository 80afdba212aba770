//! The operator's inter-agent controls (§8.0 opt-in, §13.5 sender allowlists) on the agents
//! page: whether the account's agents may message each other, and who may address whom. Both go
//! through the same use case as `PATCH /v1/operator/inter-agent`.
//!
//! | route | action |
//! |---|---|
//! | `POST /inbox/inter-agent` | `enabled=true|false`, or `destination` + `senders` (CSRF-checked) |

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use ma2h_core::inter_agent::policy::AccountPolicy;
use ma2h_core::inter_agent::rules;
use ma2h_core::{Hub, HubError};
use maud::{Markup, html};
use serde_json::json;

use super::session::Session;
use super::{csrf_refused, form_get, form_pairs, notice, went_wrong};
use crate::extract::Body;

/// The section shown on `/inbox/agents`.
pub(super) fn section(hub: &Hub, policy: &AccountPolicy, csrf: &str) -> Markup {
    let ceiling = hub.settings.inter_agent.enabled;
    html! {
        section.a2a aria-label="Agent-to-agent messaging" {
            h2 { "Agent-to-agent messaging" }
            @if !ceiling {
                p.notice { "Turned off for this whole deployment (MA2H_INTER_AGENT=false)." }
            } @else {
                p {
                    "Agents of this account "
                    strong { (if policy.inter_agent { "may" } else { "may not" }) }
                    " send messages to each other (off by default). You can open any addressed message to see who sent it to whom and its delivery track; unless its sender listed you as a resolver, only the addressee can answer it — closing the addressee's session is your way to unstick one."
                }
                form.inline method="post" action="/inbox/inter-agent" {
                    input type="hidden" name="csrf" value=(csrf);
                    input type="hidden" name="enabled" value=(if policy.inter_agent { "false" } else { "true" });
                    button type="submit" { (if policy.inter_agent { "Turn off" } else { "Turn on" }) }
                }
                h3 { "Who may address whom" }
                @if policy.allowlists.is_empty() {
                    p { "No restrictions: any agent of the account may address any other." }
                } @else {
                    table.cards {
                        thead { tr { th { "Agent" } th { "Accepts messages only from" } } }
                        tbody {
                            @for (dest, senders) in &policy.allowlists {
                                tr { td data-label="Agent" { code { (dest) } } td data-label="Accepts messages only from" { (senders.iter().cloned().collect::<Vec<_>>().join(", ")) } }
                            }
                        }
                    }
                }
                form method="post" action="/inbox/inter-agent" {
                    input type="hidden" name="csrf" value=(csrf);
                    label for="destination" { "Agent " }
                    input #destination type="text" name="destination" required placeholder="deploybot/web";
                    label for="senders" { " accepts messages only from " }
                    input #senders type="text" name="senders" placeholder="coordinator, ci/bot (empty: anyone)";
                    button type="submit" { "Save" }
                }
            }
        }
    }
}

/// `POST /inbox/inter-agent`.
pub async fn update(State(hub): State<Hub>, session: Session, Body(body): Body) -> Response {
    let pairs = form_pairs(&body);
    if !session.csrf_ok(form_get(&pairs, "csrf")) {
        return csrf_refused(Some(&session));
    }
    let patch = match (form_get(&pairs, "enabled"), form_get(&pairs, "destination")) {
        (Some("true"), _) => json!({ "enabled": true }),
        (Some("false"), _) => json!({ "enabled": false }),
        // Anything else is no decision: it must not read as "turn off".
        (Some(_), _) => {
            return notice(
                StatusCode::UNPROCESSABLE_ENTITY,
                Some(&session),
                "Not saved",
                "`enabled` is true or false.",
            );
        }
        (None, Some(dest)) => {
            let senders: Vec<&str> = form_get(&pairs, "senders")
                .unwrap_or_default()
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .collect();
            json!({ "allowlists": { dest.trim(): senders } })
        }
        (None, None) => json!({}),
    };
    match rules::update(&hub, &session.principal, &patch).await {
        Ok(_) => Redirect::to("/inbox/agents").into_response(),
        Err(e @ HubError::Protocol(_)) => {
            notice(StatusCode::UNPROCESSABLE_ENTITY, Some(&session), "Not saved", &e.to_string())
        }
        Err(HubError::NotAuthorized(m)) => notice(StatusCode::FORBIDDEN, Some(&session), "Not allowed", &m),
        Err(e) => went_wrong(Some(&session), "inter-agent policy update", &e),
    }
}

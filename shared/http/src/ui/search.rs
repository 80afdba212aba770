//! `GET /inbox/search?q=…` (issue 39): the account's messages, open and resolved, whose words
//! start with every word searched — titles and bodies on the local Hub (SQLite FTS5), titles of
//! the newest messages on AWS (say so on the page). A sensitive message is found by its title
//! only, and shown like any row (its body masked).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use ma2h_core::messages::search::{self, Found};
use ma2h_core::{Hub, HubError};
use maud::{Markup, html};

use super::rows::stamp;
use super::session::Session;
use super::{notice, page, respond, went_wrong};
use crate::extract::Params;

/// The search box (the inbox page and the results page).
pub fn form(current: &str) -> Markup {
    html! {
        form.search method="get" action="/inbox/search" role="search" aria-label="Search messages" {
            label.visually-hidden for="q" { "Search messages" }
            input #q type="search" name="q" value=(current) maxlength="200" placeholder="Search titles and bodies";
            button.secondary type="submit" { "Search" }
        }
    }
}

pub async fn results(State(hub): State<Hub>, session: Session, params: Params) -> Response {
    let q = params.get("q").unwrap_or("").trim().to_owned();
    let found = match search::search(&hub, &session.principal, &q).await {
        Ok(f) => f,
        Err(e @ HubError::Protocol(_)) => {
            return notice(StatusCode::BAD_REQUEST, Some(&session), "Cannot search that", &e.to_string());
        }
        Err(e) => return went_wrong(Some(&session), "inbox search", &e),
    };
    let now = hub.clock.now();
    let Found { hits, full_text } = found;
    let body = html! {
        h1 { "Search" }
        (form(&q))
        @if !full_text { p.hint { "This Hub searches titles only (on AWS, of the newest messages)." } }
        @if q.is_empty() {
            p { "Type words from a message's title" @if full_text { " or body" } "." }
        } @else if hits.items.is_empty() {
            p.notice { "Nothing matches “" (q) "”." }
        } @else {
            p.counts { (super::rows::plural(hits.items.len() as u64, "message")) " found, newest first"
                @if hits.items.len() >= search::LIMIT { " (the first " (search::LIMIT) ")" } }
            ul.items {
                @for s in &hits.items {
                    li class=(format!("item prio-{}", s.priority.as_str())) {
                        a.title href=(format!("/inbox/{}", s.id)) { (s.title) }
                        div.meta {
                            span class=(format!("badge p-{}", s.priority.as_str())) { (s.priority.as_str()) }
                            span.badge { (s.status.as_str()) }
                            span { (s.kind.as_str()) }
                            span { "agent " (s.agent_id.as_str()) }
                            span { "sent " (stamp(s.created_at, now)) }
                        }
                    }
                }
            }
        }
        @if !hits.complete { p.hint { "Older messages were not searched." } }
    };
    respond(StatusCode::OK, page("Search", Some(&session), body))
}

//! `GET /inbox` (open messages, urgent/high first then oldest, with filters and counts) and
//! `GET /inbox/history` (resolved messages with outcome, actor, time, comment and the push
//! delivery state). Both read `ma2h_core::list::list`, which never includes `client_ref` or
//! `state` (§9.1, §9.3).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use ma2h_core::Hub;
use ma2h_core::list::{self, ListParams, MAX_LIST};
use ma2h_protocol::time;
use maud::{Markup, html};
use serde_json::Value;

use super::session::Session;
use super::{human_duration, notice, page, respond};
use crate::extract::Params;

const TYPES: [&str; 3] = ["ask", "task", "notify"];
const PRIORITIES: [&str; 4] = ["urgent", "high", "normal", "low"];

/// The filters of the inbox form; empty means "any".
#[derive(Debug, Default)]
struct Filters {
    kind: String,
    priority: String,
    agent: String,
    project: String,
    tag: String,
}

impl Filters {
    fn from(params: &Params) -> Self {
        let get = |k: &str| params.get(k).unwrap_or("").trim().to_owned();
        Self {
            kind: get("type"),
            priority: get("priority"),
            agent: get("agent"),
            project: get("project"),
            tag: get("tag"),
        }
    }

    fn matches(&self, m: &Value) -> bool {
        let eq = |want: &str, got: Option<&str>| want.is_empty() || got == Some(want);
        eq(&self.kind, m["type"].as_str())
            && eq(&self.priority, m["priority"].as_str())
            && eq(&self.agent, m["agent"]["id"].as_str())
            && eq(&self.project, m["agent"]["project"].as_str())
            && (self.tag.is_empty()
                || m["tags"].as_array().is_some_and(|t| t.iter().any(|x| x.as_str() == Some(self.tag.as_str()))))
    }

    fn any(&self) -> bool {
        [&self.kind, &self.priority, &self.agent, &self.project, &self.tag].iter().any(|f| !f.is_empty())
    }
}

async fn fetch(hub: &Hub, session: &Session, resolved: bool) -> Result<Vec<Value>, Response> {
    let params = ListParams { resolved, limit: Some(MAX_LIST), ..ListParams::default() };
    match list::list(hub, &session.principal, params).await {
        Ok(v) => Ok(v["messages"].as_array().cloned().unwrap_or_default()),
        Err(e) => {
            tracing::error!(error = %e, "inbox listing failed");
            Err(notice(StatusCode::INTERNAL_SERVER_ERROR, Some(session), "Inbox unavailable", "The listing failed."))
        }
    }
}

/// `GET /inbox`.
pub async fn inbox(State(hub): State<Hub>, session: Session, params: Params) -> Response {
    let all = match fetch(&hub, &session, false).await {
        Ok(all) => all,
        Err(resp) => return resp,
    };
    let filters = Filters::from(&params);
    let shown: Vec<&Value> = all.iter().filter(|m| filters.matches(m)).collect();
    let now = hub.clock.now();
    let count = |field: &str, v: &str| all.iter().filter(|m| m[field].as_str() == Some(v)).count();
    let body = html! {
        h1 { "Open messages" }
        p.counts {
            (all.len()) " open"
            @for p in ["urgent", "high"] { @let n = count("priority", p); @if n > 0 { " · " (n) " " (p) } }
            @for t in ["ask", "task"] { " · " (count("type", t)) " " (t) "s" }
            @if filters.any() { " — showing " (shown.len()) " matching" }
        }
        (filter_form(&filters))
        @if shown.is_empty() {
            p.notice { @if filters.any() { "Nothing matches these filters." } @else { "Nothing waiting for you." } }
        } @else {
            ul.items {
                @for m in &shown { li { (item(m, now)) } }
            }
        }
    };
    respond(StatusCode::OK, page("Inbox", Some(&session), body))
}

fn select(name: &str, label: &str, values: &[&str], current: &str) -> Markup {
    html! {
        div {
            label for=(format!("f-{name}")) { (label) }
            select #(format!("f-{name}")) name=(name) {
                option value="" selected[current.is_empty()] { "any" }
                @for v in values { option value=(v) selected[*v == current] { (v) } }
            }
        }
    }
}

fn text_filter(name: &str, label: &str, current: &str) -> Markup {
    html! {
        div {
            label for=(format!("f-{name}")) { (label) }
            input #(format!("f-{name}")) type="text" name=(name) value=(current);
        }
    }
}

fn filter_form(f: &Filters) -> Markup {
    html! {
        form.filters method="get" action="/inbox" role="search" aria-label="Filter messages" {
            (select("type", "Type", &TYPES[..2], &f.kind))
            (select("priority", "Priority", &PRIORITIES, &f.priority))
            (text_filter("agent", "Agent", &f.agent))
            (text_filter("project", "Project", &f.project))
            (text_filter("tag", "Tag", &f.tag))
            div.actions { button.secondary type="submit" { "Filter" } @if f.any() { a href="/inbox" { "Clear" } } }
        }
    }
}

fn ts(v: &Value) -> Option<time::Timestamp> {
    v.as_str().and_then(time::parse)
}

fn item(m: &Value, now: time::Timestamp) -> Markup {
    let id = m["id"].as_str().unwrap_or("");
    let priority = m["priority"].as_str().unwrap_or("normal");
    html! {
        a.title href=(format!("/inbox/{id}")) { (m["title"].as_str().unwrap_or("(untitled)")) }
        div.meta {
            span class=(format!("badge p-{priority}")) { (priority) }
            span { (m["type"].as_str().unwrap_or("")) }
            span { "agent " (m["agent"]["id"].as_str().unwrap_or("")) }
            @if let Some(p) = m["agent"]["project"].as_str() { span { "project " (p) } }
            @if let Some(c) = ts(&m["created_at"]) {
                span { time datetime=(time::format(c)) { (human_duration(now - c)) " ago" } }
            }
            @if let Some(e) = ts(&m["expires_at"]) { (expiry(e, now)) }
            @if let Some(tags) = m["tags"].as_array() {
                @for t in tags { @if let Some(t) = t.as_str() { span { "#" (t) } } }
            }
        }
    }
}

/// "expires in 2 h" or an overdue warning.
pub(super) fn expiry(e: time::Timestamp, now: time::Timestamp) -> Markup {
    html! {
        @if e > now {
            span { "expires in " time datetime=(time::format(e)) { (human_duration(e - now)) } }
        } @else {
            span.overdue { "expired " (human_duration(now - e)) " ago" }
        }
    }
}

/// The push delivery state of a resolved message (§8.3/§14.2), as the listing reports it.
pub(super) fn delivery(push: &Value) -> String {
    match push["status"].as_str() {
        Some("delivered") => "push delivered".to_owned(),
        Some("pending") => format!("push retrying ({} attempts so far)", push["attempts"].as_u64().unwrap_or(0)),
        Some("failed") => "push failed — the agent can still pull it".to_owned(),
        _ => "pull (no push callback)".to_owned(),
    }
}

/// `GET /inbox/history`.
pub async fn history(State(hub): State<Hub>, session: Session, params: Params) -> Response {
    let all = match fetch(&hub, &session, true).await {
        Ok(all) => all,
        Err(resp) => return resp,
    };
    let filters = Filters::from(&params);
    let shown: Vec<&Value> = all.iter().filter(|m| filters.matches(m)).collect();
    let body = html! {
        h1 { "History" }
        p.counts { (shown.len()) " resolved or delivered message" @if shown.len() != 1 { "s" } ", newest first" }
        @if shown.is_empty() { p.notice { "Nothing resolved yet." } }
        ul.items {
            @for m in &shown { li { (history_item(m)) } }
        }
    };
    respond(StatusCode::OK, page("History", Some(&session), body))
}

fn history_item(m: &Value) -> Markup {
    let id = m["id"].as_str().unwrap_or("");
    let outcome = m["resolution"].as_str().or(m["status"].as_str()).unwrap_or("");
    html! {
        a.title href=(format!("/inbox/{id}")) { (m["title"].as_str().unwrap_or("(untitled)")) }
        div.meta {
            span.badge { (outcome) }
            span { (m["type"].as_str().unwrap_or("")) }
            span { "agent " (m["agent"]["id"].as_str().unwrap_or("")) }
            @if let Some(a) = m["actor"].as_str() { span { "by " (a) } }
            @if let Some(t) = m["resolved_at"].as_str() { span { time datetime=(t) { (t) } } }
            @if m["type"].as_str() != Some("notify") { span { (delivery(&m["push"])) } }
        }
        @if let Some(c) = m["comment"].as_str() { p { "“" (c) "”" } }
    }
}

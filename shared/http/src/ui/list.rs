//! `GET /inbox` (open messages, urgent/high first then oldest, with filters, counts and pages)
//! and `GET /inbox/history` (resolved messages with outcome, actor, time, comment and the push
//! delivery state). Both read `ma2h_core::messages::list::list`: the store filters, counts and pages, and
//! hands back summaries without `client_ref` or `state` (§9.1, §9.3).

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use ma2h_core::mailbox::inbox::{Allowed, Glance};
use ma2h_core::messages::list;
use ma2h_core::messages::list::{ListParams, Listing};
use ma2h_core::{Hub, HubError};
use ma2h_protocol::envelope::{MessageType, Priority};
use ma2h_protocol::time;
use maud::{Markup, html};
use serde_json::Value;

use super::rows::{self, answerable, chosen, plural, preview, stamp};
use super::session::Session;
use super::{notice, page, respond};
use crate::extract::Params;
use crate::operator::filter_from;

const TYPES: [&str; 3] = ["ask", "task", "notify"];
const PRIORITIES: [&str; 4] = ["urgent", "high", "normal", "low"];
/// Messages per inbox page.
const PAGE: usize = 50;

/// The filters of the inbox form as typed; empty means "any".
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

    fn pairs(&self) -> [(&'static str, &str); 5] {
        [
            ("type", &self.kind),
            ("priority", &self.priority),
            ("agent", &self.agent),
            ("project", &self.project),
            ("tag", &self.tag),
        ]
    }

    fn any(&self) -> bool {
        self.pairs().iter().any(|(_, v)| !v.is_empty())
    }

    /// `path?filters[&cursor=…]`: a page of the same filtered listing.
    fn href(&self, path: &str, cursor: Option<&str>) -> String {
        let mut q = url::form_urlencoded::Serializer::new(String::new());
        for (k, v) in self.pairs().iter().filter(|(_, v)| !v.is_empty()) {
            q.append_pair(k, v);
        }
        if let Some(c) = cursor {
            q.append_pair("cursor", c);
        }
        match q.finish() {
            q if q.is_empty() => path.to_owned(),
            q => format!("{path}?{q}"),
        }
    }
}

/// One page from the store, or the page to show instead (400 for a bad filter or cursor).
async fn fetch(hub: &Hub, session: &Session, params: &Params, resolved: bool) -> Result<Listing, Response> {
    let bad = |text: &str| notice(StatusCode::BAD_REQUEST, Some(session), "Cannot list that", text);
    let filter = filter_from(params).map_err(|e| bad(&e.to_string()))?;
    let cursor = params.get("cursor").map(Into::into);
    let query = ListParams { resolved, filter, cursor, limit: Some(PAGE), counts: !resolved };
    match list::list(hub, &session.principal, query).await {
        Ok(listing) => Ok(listing),
        Err(e @ HubError::Protocol(_)) => Err(bad(&e.to_string())),
        Err(e) => {
            tracing::error!(error = %e, "inbox listing failed");
            Err(notice(StatusCode::INTERNAL_SERVER_ERROR, Some(session), "Inbox unavailable", "The listing failed."))
        }
    }
}

/// The items of a listing as JSON rows (the API's shape: one renderer for both), each with its
/// [`Glance`] (the question, its options, whether this operator may answer).
async fn rows(hub: &Hub, session: &Session, listing: &Listing) -> Vec<(Value, Option<Glance>)> {
    let rows = crate::operator::listing_json(listing).messages;
    let json: Vec<Value> = rows.iter().map(|r| serde_json::to_value(r).unwrap_or_default()).collect();
    let ids: Vec<_> = listing.page.items.iter().map(|s| s.id.clone()).collect();
    let glances = match ma2h_core::mailbox::inbox::glance(hub, &session.principal, &ids).await {
        Ok(g) => g,
        Err(e) => {
            // The rows still list (title, priority, agent…); only the previews are missing.
            tracing::warn!(error = %e, "inbox previews unavailable");
            vec![None; ids.len()]
        }
    };
    json.into_iter().zip(glances.into_iter().chain(std::iter::repeat(None))).collect()
}

fn pager(filters: &Filters, path: &str, listing: &Listing, paged: bool, next_label: &str) -> Markup {
    html! {
        nav.pager aria-label="Pages" {
            @if paged { a href=(filters.href(path, None)) { "← First page" } }
            @if let Some(next) = &listing.page.next {
                a href=(filters.href(path, Some(&next.encode()))) rel="next" { (next_label) }
            }
        }
    }
}

/// `GET /inbox`.
pub async fn inbox(State(hub): State<Hub>, session: Session, params: Params) -> Response {
    let listing = match fetch(&hub, &session, &params, false).await {
        Ok(l) => l,
        Err(resp) => return resp,
    };
    let filters = Filters::from(&params);
    let shown = rows(&hub, &session, &listing).await;
    let paged = params.get("cursor").is_some();
    let now = hub.clock.now();
    let c = listing.counts.unwrap_or_default();
    // Issue 39: claims are shown on every row; what this operator snoozed leaves their list
    // (`?snoozed=1` shows only those).
    let ids: Vec<_> = listing.page.items.iter().map(|s| s.id.clone()).collect();
    let triage = ma2h_core::messages::triage::read(&hub, &session.principal, &ids).await.unwrap_or_else(|e| {
        tracing::warn!(error = %e, "triage unavailable: rows shown without claims or snoozes");
        vec![None; ids.len()]
    });
    let me = super::claims::me(&session);
    let only_snoozed = params.get("snoozed").is_some();
    let mut snoozed = 0;
    let shown: Vec<_> = shown
        .into_iter()
        .zip(triage.into_iter().chain(std::iter::repeat(None)))
        .filter(|(_, t)| {
            let is = t.as_ref().zip(me).is_some_and(|(t, h)| t.snoozed_by(h, now).is_some());
            snoozed += usize::from(is);
            is == only_snoozed
        })
        .map(|((m, g), t)| (m, g, t))
        .collect();
    let selectable = shown.iter().any(|(_, g, _)| g.as_ref().is_some_and(bulk_ok));
    let body = html! {
      div data-live="list" {
        @if params.get("caught_up").is_some() {
            p.notice role="status" { "Your answer was recorded. Nothing else is waiting for you." }
        }
        @if let Some(done) = params.get("done") { p.notice role="status" { (done) } }
        h1 { "Open messages" }
        p.counts {
            (c.total) " open"
            @for p in [Priority::Urgent, Priority::High] {
                @let n = c.priority(p); @if n > 0 { " · " (n) " " (p.as_str()) }
            }
            @for k in [MessageType::Ask, MessageType::Task] {
                " · " (plural(c.kind(k), k.as_str()))
            }
            @if filters.any() { " — " (c.matching) @if c.matching_partial { "+" } " matching" }
        }
        @if only_snoozed {
            p.notice { "Snoozed by you (on this page of the list). " a href="/inbox" { "Back to the open list" } }
        } @else if snoozed > 0 {
            p.hint { (rows::plural(snoozed as u64, "message")) " on this page snoozed by you — " a href="/inbox?snoozed=1" { "show them" } }
        }
        (super::search::form(""))
        (filter_form(&filters))
        @if shown.is_empty() {
            p.notice { @if filters.any() { "Nothing matches these filters." } @else { "Nothing waiting for you." } }
        } @else {
            p.hint.kbd-help { "Keyboard: " kbd { "j" } "/" kbd { "k" } " move, " kbd { "Enter" } " opens, " kbd { "x" } " ticks, "
                kbd { "1" } "–" kbd { "9" } " picks an option on a message." }
            // Issue 39: bulk triage — rows this operator may decline carry a checkbox; the
            // action is confirmed on the next page (works without JavaScript).
            form #bulk method="post" action="/inbox/bulk" {
                input type="hidden" name="csrf" value=(session.csrf);
                @if selectable {
                    div.bulk.actions {
                        button.danger type="submit" name="act" value="decline" { "Decline / dismiss selected" }
                        span.hint { "Tick rows first; you confirm on the next page." }
                    }
                }
                ul.items {
                    @for (m, g, t) in &shown { (item(m, g.as_ref(), t.as_ref(), me, now)) }
                }
            }
        }
        (pager(&filters, "/inbox", &listing, paged, "Next page →"))
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
    // Issue 39: on a phone the filters fold behind one control (a CSS-only toggle, works
    // without JavaScript); open when a filter is set, so what narrows the list is visible.
    html! {
        input.fold-toggle #filter-toggle type="checkbox" checked[f.any()] aria-controls="filters";
        label.fold-label for="filter-toggle" { "Filters" @if f.any() { " (set)" } }
        form.filters #filters method="get" action="/inbox" role="search" aria-label="Filter messages" {
            (select("type", "Type", &TYPES[..2], &f.kind))
            (select("priority", "Priority", &PRIORITIES, &f.priority))
            (text_filter("agent", "Agent", &f.agent))
            (text_filter("project", "Project", &f.project))
            (text_filter("tag", "Tag", &f.tag))
            div.actions { button.secondary type="submit" { "Filter" } @if f.any() { a href="/inbox" { "Clear" } } }
        }
    }
}

/// Whether a row may be declined (an ask with `allow_ignore`) or dismissed (a task) by this
/// operator: the bulk action's checkbox.
fn bulk_ok(g: &Glance) -> bool {
    matches!(g.allowed, Allowed::Resolve(a) if a.decline || a.dismiss)
}

fn ts(v: &Value) -> Option<time::Timestamp> {
    v.as_str().and_then(time::parse)
}

fn item(
    m: &Value,
    glance: Option<&Glance>,
    triage: Option<&ma2h_core::messages::triage::TriageRecord>,
    me: Option<&ma2h_protocol::ids::HumanId>,
    now: time::Timestamp,
) -> Markup {
    let id = m["id"].as_str().unwrap_or("");
    let priority = m["priority"].as_str().unwrap_or("normal");
    let expires = ts(&m["expires_at"]);
    let soon = expires.is_some_and(|e| e > now && e - now <= rows::SOON);
    html! {
        li class=(format!("item prio-{priority}{}", if soon { " due-soon" } else { "" })) {
            @if glance.is_some_and(bulk_ok) {
                // labelled by the title link (an attribute would carry agent text unmarked, §9.6)
                input.pick type="checkbox" name="id" value=(id) aria-labelledby=(format!("t-{id}"));
            }
            a.title #(format!("t-{id}")) href=(format!("/inbox/{id}")) { (m["title"].as_str().unwrap_or("(untitled)")) }
            div.meta {
                span class=(format!("badge p-{priority}")) { (priority) }
                span { (m["type"].as_str().unwrap_or("")) }
                span { "agent " (m["agent"]["id"].as_str().unwrap_or("")) }
                @if let Some(p) = m["agent"]["project"].as_str() { span { "project " (p) } }
                @if let Some(c) = ts(&m["created_at"]) { span { "asked " (stamp(c, now)) } }
                @if let Some(e) = expires { (rows::expiry(e, now)) }
                @if let Some(tags) = m["tags"].as_array() {
                    @for t in tags { @if let Some(t) = t.as_str() { span { "#" (t) } } }
                }
                @if let Some(g) = glance { (answerable(g)) }
                (super::claims::badge(triage, me, now))
            }
            @if let Some(g) = glance { (preview(g)) }
        }
    }
}

/// The push delivery state of a resolved message (§8.3/§14.2), as the listing reports it; a
/// failure says why (the Hub's own words, e.g. `receiver answered 500`).
pub(super) fn delivery(push: &Value) -> String {
    let reason = push["last_error"].as_str();
    match push["status"].as_str() {
        Some("delivered") => "push delivered".to_owned(),
        Some("pending") => match reason {
            Some(r) => {
                format!("push retrying after {}: {r}", plural(push["attempts"].as_u64().unwrap_or(0), "attempt"))
            }
            None => "push queued".to_owned(),
        },
        Some("failed") => {
            format!("push failed: {} — the agent can still pull it", reason.unwrap_or("no reason recorded"))
        }
        _ => "pull (no push callback)".to_owned(),
    }
}

/// `GET /inbox/history`.
pub async fn history(State(hub): State<Hub>, session: Session, params: Params) -> Response {
    resolved_page(hub, session, params, false).await
}

/// `GET /inbox/fyi`: the agents' notifies — informational, never waiting for anyone (§5.1) —
/// newest first, so they are seen without crowding the open list.
pub async fn fyi(State(hub): State<Hub>, session: Session, mut params: Params) -> Response {
    params.0.insert("type".into(), "notify".into());
    resolved_page(hub, session, params, true).await
}

async fn resolved_page(hub: Hub, session: Session, params: Params, fyi: bool) -> Response {
    let listing = match fetch(&hub, &session, &params, true).await {
        Ok(l) => l,
        Err(resp) => return resp,
    };
    let filters = Filters::from(&params);
    let shown = rows(&hub, &session, &listing).await;
    let paged = params.get("cursor").is_some();
    let now = hub.clock.now();
    let (title, path) = if fyi { ("FYI", "/inbox/fyi") } else { ("History", "/inbox/history") };
    let body = html! {
      div data-live="list" {
        h1 { (title) }
        p.counts {
            @if fyi { "Notifications from your agents, newest first" } @else { "Resolved and delivered messages, newest first" }
            @if filters.any() && !fyi { ", filtered" }
        }
        @if shown.is_empty() {
            p.notice { @if paged { "No older messages." } @else if fyi { "No notifications yet." } @else { "Nothing resolved yet." } }
        }
        ul.items {
            @for (m, g) in &shown { (history_item(m, g.as_ref(), now)) }
        }
        (pager(&filters, path, &listing, paged, "Older →"))
      }
    };
    respond(StatusCode::OK, page(title, Some(&session), body))
}

fn history_item(m: &Value, glance: Option<&Glance>, now: time::Timestamp) -> Markup {
    let id = m["id"].as_str().unwrap_or("");
    let notify = m["type"].as_str() == Some("notify");
    let outcome = m["resolution"].as_str().or(m["status"].as_str()).unwrap_or("");
    let priority = m["priority"].as_str().unwrap_or("normal");
    // Issue 39: agent↔agent mail (§8.7.1) is audited here, never presented as if it were for
    // the human: it says who it was for and how it ended (a bounce is `undeliverable`).
    let to = glance.and_then(|g| g.envelope.to.as_deref());
    html! {
        li class=(format!("item prio-{priority}")) {
            a.title href=(format!("/inbox/{id}")) { (m["title"].as_str().unwrap_or("(untitled)")) }
            div.meta {
                @if let Some(to) = to {
                    span.badge.a2a { "agent to agent" }
                    span { "to " strong { (to) } }
                    @if outcome != "resolved" && !outcome.is_empty() { span { (outcome) } }
                }
                @if notify { span class=(format!("badge p-{priority}")) { (priority) } } @else { span.badge { (outcome) } }
                span { (m["type"].as_str().unwrap_or("")) }
                span { "agent " (m["agent"]["id"].as_str().unwrap_or("")) }
                @if let Some(a) = m["actor"].as_str() { span { "by " (a) } }
                @if notify {
                    @if let Some(t) = ts(&m["created_at"]) { span { "sent " (stamp(t, now)) } }
                } @else if let Some(t) = ts(&m["resolved_at"]) {
                    span { "resolved " (stamp(t, now)) }
                }
                @if !notify { span.delivery { (delivery(&m["push"])) } }
            }
            @if let Some(label) = glance.and_then(chosen) { p.choices { "Chose " strong { (label) } } }
            @if notify { @if let Some(g) = glance { (preview(g)) } }
            @if let Some(c) = m["comment"].as_str() { p.comment { "Comment: “" (c) "”" } }
        }
    }
}

//! `GET /inbox/audit` (issue 42): the account's audit ledger, newest first, filtered by kind,
//! actor, agent and time; `GET /inbox/audit/export` downloads the signed export of the same
//! window (JSON Lines, what `ma2h audit verify` checks).

use axum::extract::State;
use axum::http::{StatusCode, header};
use axum::response::{IntoResponse, Response};
use ma2h_core::audit::browse::{self, Filter, KINDS};
use ma2h_core::{Hub, HubError};
use ma2h_protocol::time::{self, Timestamp};
use maud::html;

use super::session::Session;
use super::{notice, page, respond, went_wrong};
use crate::extract::Params;

/// An RFC 3339 time, or a `datetime-local` form value (`2026-06-04T12:00`, read as UTC).
fn when(v: Option<&str>) -> Result<Option<Timestamp>, String> {
    let Some(v) = v.map(str::trim).filter(|v| !v.is_empty()) else { return Ok(None) };
    time::parse(v)
        .or_else(|| time::parse(&format!("{v}:00Z")))
        .map(Some)
        .ok_or_else(|| format!("“{v}” is not a time (2026-06-04T12:00, UTC)"))
}

fn field(params: &Params, name: &str) -> Option<String> {
    params.get(name).map(str::trim).filter(|v| !v.is_empty()).map(str::to_owned)
}

/// The `datetime-local` value of a time (UTC, to the minute).
fn local(t: Option<Timestamp>) -> String {
    t.map(|t| t.format("%Y-%m-%dT%H:%M").to_string()).unwrap_or_default()
}

pub async fn page_get(State(hub): State<Hub>, session: Session, params: Params) -> Response {
    let (since, until) = match (when(params.get("since")), when(params.get("until"))) {
        (Ok(s), Ok(u)) => (s, u),
        (Err(e), _) | (_, Err(e)) => return notice(StatusCode::BAD_REQUEST, Some(&session), "Cannot filter", &e),
    };
    let filter = Filter {
        actor: field(&params, "actor"),
        agent: field(&params, "agent").map(|a| a.trim_start_matches("agent:").to_owned()),
        kind: field(&params, "kind"),
        since,
        until,
    };
    let view = match browse::browse(&hub, &session.principal, &filter).await {
        Ok(v) => v,
        Err(e @ HubError::Protocol(_)) => {
            return notice(StatusCode::BAD_REQUEST, Some(&session), "Cannot filter", &e.to_string());
        }
        Err(e) => return went_wrong(Some(&session), "audit page", &e),
    };
    let now = hub.clock.now();
    let export = format!(
        "/inbox/audit/export?since={}&until={}",
        view.since.map(time::format).unwrap_or_default(),
        view.until.map(time::format).unwrap_or_default()
    );
    let body = html! {
        h1 { "Audit" }
        p.hint { "Every security-relevant event, recorded as it committed and sealed by the Hub's signed checkpoints. "
            a href=(export) download="audit.jsonl" { "Download this window’s signed export" }
            " and check it with " code { "ma2h audit verify FILE --discover-keys" } "." }
        form.filters.audit-filters method="get" action="/inbox/audit" aria-label="Filter the audit ledger" {
            label { "Kind "
                select name="kind" {
                    option value="" { "any" }
                    @for k in KINDS {
                        option value=(k) selected[filter.kind.as_deref() == Some(*k)] {
                            @if k.ends_with('.') { (k) "*" } @else { (k) }
                        }
                    }
                }
            }
            label { "Who " input type="text" name="actor" value=(filter.actor.clone().unwrap_or_default()) placeholder="human:alice" size="14"; }
            label { "Agent " input type="text" name="agent" value=(filter.agent.clone().unwrap_or_default()) placeholder="deploybot" size="12"; }
            label { "From (UTC) " input type="datetime-local" name="since" value=(local(view.since)); }
            label { "To (UTC) " input type="datetime-local" name="until" value=(local(filter.until)); }
            button.secondary type="submit" { "Filter" }
            " " a href="/inbox/audit" { "Reset" }
        }
        @if view.entries.is_empty() {
            p.notice { "No entries in this window match." }
        } @else {
            p.counts { (view.entries.len()) @if view.entries.len() == 1 { " entry" } @else { " entries" } ", newest first"
                @if view.more { " — the window holds more: narrow it" } }
            table.cards.audit {
                thead { tr { th { "When (UTC)" } th { "Event" } th { "Who" } th { "About" } th { "Detail" } } }
                tbody {
                    @for e in &view.entries {
                        tr {
                            td data-label="When" {
                                time datetime=(time::format(e.at)) title=(super::rows::stamp_text(e.at, now)) {
                                    (e.at.format("%Y-%m-%d %H:%M:%S"))
                                }
                            }
                            td data-label="Event" { code { (e.kind) } }
                            td data-label="Who" { span.id { (e.principal) } }
                            td data-label="About" {
                                @match e.target.as_deref() {
                                    Some(t) if t.starts_with("msg_") => a.id href=(format!("/inbox/{t}")) { (t) },
                                    Some(t) if t.starts_with("dir_") => a.id href=(format!("/inbox/directives/{t}")) { (t) },
                                    Some(t) => span.id { (t) },
                                    None => "",
                                }
                            }
                            td data-label="Detail" {
                                @for (k, v) in &e.detail {
                                    code.kv { (k) "=" (v.as_str().map_or_else(|| v.to_string(), str::to_owned)) } " "
                                }
                                @if let Some(d) = &e.digest { code.kv title=(d) { "sha256=" (&d[..12.min(d.len())]) "…" } }
                            }
                        }
                    }
                }
            }
        }
    };
    respond(StatusCode::OK, page("Audit", Some(&session), body))
}

/// The signed export of a window, for the browser to save.
pub async fn export(State(hub): State<Hub>, session: Session, params: Params) -> Response {
    match ma2h_core::audit::export::export_for(&hub, &session.principal, &params.0).await {
        Ok(page) => {
            let mut body = page.lines.join("\n");
            body.push('\n');
            (
                [
                    (header::CONTENT_TYPE, "application/jsonl"),
                    (header::CONTENT_DISPOSITION, "attachment; filename=\"audit.jsonl\""),
                    (header::CACHE_CONTROL, "no-store"),
                ],
                body,
            )
                .into_response()
        }
        Err(e @ HubError::Protocol(_)) => {
            notice(StatusCode::BAD_REQUEST, Some(&session), "Cannot export", &e.to_string())
        }
        Err(e) => went_wrong(Some(&session), "audit export", &e),
    }
}

//! The message page's triage box (issue 39): who is on it ("I'm on it", release, take over),
//! this operator's snooze (1 h, 4 h, tomorrow 09:00 UTC, 3 days, or a time), and the handlers
//! `POST /inbox/{id}/claim` and `POST /inbox/{id}/snooze`. Claims are seen by every operator of
//! the account (rows and this box); a snooze hides the message from this operator's open list.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use chrono::{Duration, NaiveDateTime, TimeZone, Utc};
use ma2h_core::kernel::credentials::PrincipalId;
use ma2h_core::mailbox::inbox::InboxMessage;
use ma2h_core::messages::triage::{self, ClaimOutcome, TriageRecord};
use ma2h_core::{Hub, HubError};
use ma2h_protocol::ids::HumanId;
use ma2h_protocol::time::Timestamp;
use maud::{Markup, html};

use super::rows::stamp;
use super::session::Session;
use super::{csrf_refused, form_get, form_pairs, message, notice};
use crate::extract::{Body, Path};

/// The operator behind the session.
pub(super) fn me(session: &Session) -> Option<&HumanId> {
    match &session.principal.id {
        PrincipalId::Operator(h) => Some(h),
        PrincipalId::Agent(_) => None,
    }
}

/// "you're on it" / "human:bob is on it" for a row or the box; nothing when unclaimed.
pub(super) fn badge(t: Option<&TriageRecord>, me: Option<&HumanId>, now: Timestamp) -> Markup {
    html! {
        @if let Some(c) = t.and_then(|t| t.data.claim.as_ref()) {
            @if Some(&c.by) == me { span.claim.mine { "you're on it" } }
            @else { span.claim { "human:" (c.by) " is on it · " (stamp(c.at, now)) } }
        }
    }
}

/// The box on an open message's page.
pub fn section(view: &InboxMessage, session: &Session, now: Timestamp) -> Markup {
    let id = view.record.id.as_str();
    let me = me(session);
    let t = view.triage.as_ref();
    let claim = t.and_then(|t| t.data.claim.as_ref());
    let snoozed = t.zip(me).and_then(|(t, h)| t.snoozed_by(h, now));
    html! {
        section.triage aria-label="Triage" {
            h2 { "Triage" }
            p { @match claim {
                None => { "Nobody has said they are on it." }
                Some(_) => { (badge(t, me, now)) }
            } }
            form.inline method="post" action=(format!("/inbox/{id}/claim")) {
                input type="hidden" name="csrf" value=(session.csrf);
                @match claim {
                    None => { button.secondary type="submit" name="claim" value="claim" { "I'm on it" } }
                    Some(c) if Some(&c.by) == me => { button.secondary type="submit" name="claim" value="release" { "Release" } }
                    Some(_) => { button.secondary type="submit" name="claim" value="take" { "Take over" } }
                }
            }
            form.snooze method="post" action=(format!("/inbox/{id}/snooze")) {
                input type="hidden" name="csrf" value=(session.csrf);
                @if let Some(until) = snoozed {
                    p { "Snoozed for you until " (stamp(until, now)) ". " }
                    button.secondary type="submit" name="for" value="wake" { "Wake it now" }
                } @else {
                    label for="snooze-for" { "Snooze for me " span.hint { "(hidden from your open list until then; others still see it)" } }
                    div.actions {
                        select #snooze-for name="for" {
                            option value="1h" { "1 hour" }
                            option value="4h" { "4 hours" }
                            option value="tomorrow" { "tomorrow 09:00 UTC" }
                            option value="3d" { "3 days" }
                            option value="until" { "until the time below" }
                        }
                        input type="datetime-local" name="until" aria-label="Snooze until (UTC)";
                        button.secondary type="submit" { "Snooze" }
                    }
                }
            }
        }
    }
}

/// `POST /inbox/{id}/claim` (`claim=claim|take|release`).
pub async fn claim(State(hub): State<Hub>, session: Session, Path(id): Path<String>, Body(body): Body) -> Response {
    let pairs = form_pairs(&body);
    if !session.csrf_ok(form_get(&pairs, "csrf")) {
        return csrf_refused(Some(&session));
    }
    let result = match form_get(&pairs, "claim") {
        Some("claim") => triage::claim(&hub, &session.principal, &id, false).await,
        Some("take") => triage::claim(&hub, &session.principal, &id, true).await,
        Some("release") => triage::release(&hub, &session.principal, &id).await.map(|()| ClaimOutcome::Claimed),
        _ => Err(HubError::validation("claim must be claim, take or release")),
    };
    match result {
        Ok(ClaimOutcome::Claimed) => Redirect::to(&format!("/inbox/{id}#triage")).into_response(),
        Ok(ClaimOutcome::HeldBy(c)) => {
            let info = format!("human:{} is already on it. Take over if you are sure.", c.by);
            message::show(&hub, &session, &id, false, Some(info)).await
        }
        Err(e) => refused(&hub, &session, &id, e).await,
    }
}

/// `POST /inbox/{id}/snooze` (`for=1h|4h|tomorrow|3d|until|wake`, `until`=a UTC date-time).
pub async fn snooze(State(hub): State<Hub>, session: Session, Path(id): Path<String>, Body(body): Body) -> Response {
    let pairs = form_pairs(&body);
    if !session.csrf_ok(form_get(&pairs, "csrf")) {
        return csrf_refused(Some(&session));
    }
    let now = hub.clock.now();
    let until = match until_of(form_get(&pairs, "for").unwrap_or(""), form_get(&pairs, "until"), now) {
        Ok(u) => u,
        Err(e) => return refused(&hub, &session, &id, e).await,
    };
    match triage::snooze(&hub, &session.principal, &id, until).await {
        Ok(()) if until.is_some() => Redirect::to("/inbox?done=Snoozed.").into_response(),
        Ok(()) => Redirect::to(&format!("/inbox/{id}#triage")).into_response(),
        Err(e) => refused(&hub, &session, &id, e).await,
    }
}

/// The end of a snooze from the form's choice (`None`: wake now).
fn until_of(choice: &str, custom: Option<&str>, now: Timestamp) -> Result<Option<Timestamp>, HubError> {
    Ok(Some(match choice {
        "wake" => return Ok(None),
        "1h" => now + Duration::hours(1),
        "4h" => now + Duration::hours(4),
        "3d" => now + Duration::days(3),
        "tomorrow" => {
            let day = (now + Duration::days(1)).date_naive();
            Utc.from_utc_datetime(&day.and_hms_opt(9, 0, 0).unwrap_or_default())
        }
        "until" => {
            let raw = custom.unwrap_or("").trim();
            let parsed = NaiveDateTime::parse_from_str(raw, "%Y-%m-%dT%H:%M")
                .or_else(|_| NaiveDateTime::parse_from_str(raw, "%Y-%m-%dT%H:%M:%S"))
                .map_err(|_| HubError::validation("choose a date and time (UTC) to snooze until"))?;
            Utc.from_utc_datetime(&parsed)
        }
        _ => return Err(HubError::validation("choose how long to snooze")),
    }))
}

async fn refused(hub: &Hub, session: &Session, id: &str, e: HubError) -> Response {
    match e {
        HubError::NotFound | HubError::Gone => message::error_page(session, &e),
        HubError::Protocol(_) | HubError::NotAuthorized(_) => {
            let mut resp = message::show(hub, session, id, false, Some(format!("Not done: {e}"))).await;
            *resp.status_mut() = StatusCode::UNPROCESSABLE_ENTITY;
            resp
        }
        HubError::RateLimited { .. } => notice(StatusCode::TOO_MANY_REQUESTS, Some(session), "Busy", &e.to_string()),
        other => super::went_wrong(Some(session), "triage", &other),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn snooze_choices_end_where_they_say() {
        let now = ma2h_protocol::time::parse("2026-12-04T22:30:00Z").unwrap();
        let at = |c, u| until_of(c, u, now).unwrap().map(ma2h_protocol::time::format);
        assert_eq!(at("1h", None).as_deref(), Some("2026-12-04T23:30:00.000Z"));
        assert_eq!(at("tomorrow", None).as_deref(), Some("2026-12-05T09:00:00.000Z"));
        assert_eq!(at("until", Some("2026-12-06T07:15")).as_deref(), Some("2026-12-06T07:15:00.000Z"));
        assert_eq!(at("wake", None), None);
        assert!(until_of("until", Some("soon"), now).is_err());
        assert!(until_of("forever", None, now).is_err());
    }
}

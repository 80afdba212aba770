//! Passkeys in the inbox (issue 41): the Devices page's **Passkeys** section (add, list, remove
//! — `POST /inbox/passkeys`), **Log in with a passkey** on the login page (`POST
//! /login/passkey`), and the fields an answer form carries when a policy asks for a passkey.
//! The WebAuthn options and the sealed ceremony state are put in the page; `passkeys.js` runs
//! the browser's ceremony and posts the result in the page's own form (CSRF-checked).

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use ma2h_core::passkeys::ceremony::{self, Refused};
use ma2h_core::passkeys::relying_party::RelyingParty;
use ma2h_core::passkeys::{self, Passkey};
use ma2h_core::{Hub, HubError};
use maud::{Markup, html};

use super::session::{self, Session};
use super::{csrf_refused, form_get, form_pairs, notice, went_wrong};
use crate::extract::Body;

/// Where passkeys cannot work, the sentence that says where they would.
fn unavailable(hub: &Hub) -> Option<String> {
    RelyingParty::of(hub).err()
}

/// The Devices page's Passkeys section.
pub fn section(hub: &Hub, session: &Session, passkeys: &[Passkey]) -> Markup {
    let now = hub.clock.now();
    let started = ceremony::begin_registration(hub, &session.principal, passkeys);
    html! {
        h2 #passkeys { "Passkeys" }
        p { "Log in with your phone's or computer's screen lock instead of a key, and confirm answers that a policy "
            "marks as needing a passkey." }
        @match (unavailable(hub), started) {
            (Some(why), _) => { p.notice { (why) } }
            (None, Err(e)) => { p.notice.error { (e.to_string()) } }
            (None, Ok(s)) => {
                form method="post" action="/inbox/passkeys" data-passkey=(s.options) data-passkey-kind="create" data-rp=(s.rp) {
                    input type="hidden" name="csrf" value=(session.csrf);
                    input type="hidden" name="action" value="add";
                    input type="hidden" name="state" value=(s.state);
                    input type="hidden" name="response" value="";
                    label for="passkey-name" { "Name " span.hint { "(so you can tell them apart)" } }
                    input #passkey-name type="text" name="name" maxlength="64" placeholder="Work laptop" autocomplete="off";
                    div.actions { button #passkey-add type="button" data-passkey-go hidden { "Add a passkey" } }
                    p.hint data-passkey-status role="status" hidden {}
                    noscript { p.hint { "Adding a passkey needs JavaScript in this browser." } }
                }
            }
        }
        @if passkeys.is_empty() { p { "No passkey yet." } }
        @else {
            table.cards #passkey-list {
                thead { tr { th { "Passkey" } th { "Added" } th { "Last used" } th {} } }
                tbody {
                    @for p in passkeys {
                        tr {
                            td data-label="Passkey" { (p.name) }
                            td data-label="Added" { (super::rows::stamp(p.created_at, now)) }
                            td data-label="Last used" {
                                @if let Some(t) = p.last_used_at { (super::rows::stamp(t, now)) } @else { "never" }
                            }
                            td.act {
                                form.inline method="post" action="/inbox/passkeys" {
                                    input type="hidden" name="csrf" value=(session.csrf);
                                    input type="hidden" name="action" value="remove";
                                    input type="hidden" name="id" value=(p.id);
                                    button.link type="submit" { "Remove" }
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

fn done(what: &str) -> Response {
    Redirect::to(&format!("/inbox/devices?done={}#passkeys", what.replace(' ', "+"))).into_response()
}

/// `POST /inbox/passkeys` (`action=add` with `state`, `response`, `name`; `action=remove` with `id`).
pub async fn update(State(hub): State<Hub>, session: Session, Body(body): Body) -> Response {
    let pairs = form_pairs(&body);
    if !session.csrf_ok(form_get(&pairs, "csrf")) {
        return csrf_refused(Some(&session));
    }
    let result = match form_get(&pairs, "action") {
        Some("add") => {
            let state = form_get(&pairs, "state").unwrap_or_default();
            let response = form_get(&pairs, "response").unwrap_or_default();
            let name = form_get(&pairs, "name").unwrap_or_default();
            ceremony::finish_registration(&hub, &session.principal, state, response.as_bytes(), name)
                .await
                .map(|_| "Passkey added.")
        }
        Some("remove") => passkeys::remove(&hub, &session.principal, form_get(&pairs, "id").unwrap_or_default())
            .await
            .map(|()| "Passkey removed.")
            .map_err(Refused::Hub),
        _ => Err(Refused::Hub(HubError::validation("action must be add or remove"))),
    };
    match result {
        Ok(what) => done(what),
        Err(Refused::No(why)) => notice(StatusCode::FORBIDDEN, Some(&session), "Passkey not added", &why),
        Err(Refused::Hub(HubError::NotFound)) => {
            notice(StatusCode::NOT_FOUND, Some(&session), "Not found", "There is no such passkey.")
        }
        Err(Refused::Hub(HubError::Protocol(e))) => {
            notice(StatusCode::UNPROCESSABLE_ENTITY, Some(&session), "Not saved", &e.to_string())
        }
        Err(Refused::Hub(e)) => went_wrong(Some(&session), "passkeys update", &e),
    }
}

/// The login page's passkey form (posts to `/login/passkey` with the login form's token).
pub fn login_form(hub: &Hub, csrf: &str, next: &str) -> Markup {
    if unavailable(hub).is_some() {
        return html! {};
    }
    match ceremony::begin_assertion(hub, None) {
        Ok(s) => html! {
            form method="post" action="/login/passkey" data-passkey=(s.options) data-passkey-kind="get" data-rp=(s.rp) {
                input type="hidden" name="csrf" value=(csrf);
                input type="hidden" name="next" value=(next);
                input type="hidden" name="state" value=(s.state);
                input type="hidden" name="response" value="";
                div.actions { button #passkey-login.secondary type="button" data-passkey-go hidden { "Log in with a passkey" } }
                p.hint data-passkey-status role="status" hidden {}
            }
        },
        Err(e) => {
            tracing::warn!(error = %e, "the login page's passkey options could not be made");
            html! {}
        }
    }
}

/// `POST /login/passkey`: the login form's token, then the assertion; on success the session.
pub async fn login(State(hub): State<Hub>, headers: HeaderMap, Body(body): Body) -> Response {
    let pairs = form_pairs(&body);
    let next = form_get(&pairs, "next");
    match session::claim_login_form(&hub, &headers, form_get(&pairs, "csrf")).await {
        Ok(true) => {}
        Ok(false) => {
            return super::login::render(
                &hub,
                next,
                Some("The login form expired, was already used, or was not sent from this site. Please try again."),
                StatusCode::FORBIDDEN,
            );
        }
        Err(e) => return crate::error::ApiError(e).into_response(),
    }
    let state = form_get(&pairs, "state").unwrap_or_default();
    let response = form_get(&pairs, "response").unwrap_or_default();
    match ceremony::finish_login(&hub, state, response.as_bytes()).await {
        Ok(principal) => {
            let cookie = match session::start(&hub, &principal, "passkey").await {
                Ok(cookie) => cookie,
                Err(e) => return crate::error::ApiError(e).into_response(),
            };
            let mut resp = Redirect::to(session::safe_next(next)).into_response();
            let h = resp.headers_mut();
            h.append(header::SET_COOKIE, session::clear_login(&hub));
            h.append(header::SET_COOKIE, cookie);
            resp
        }
        Err(Refused::No(why)) => super::login::render(&hub, next, Some(&why), StatusCode::UNAUTHORIZED),
        Err(Refused::Hub(e)) => crate::error::ApiError(e).into_response(),
    }
}

/// For an answer form a passkey policy gates: the request options and the sealed state, bound
/// to this operator and message.
pub fn step_up(hub: &Hub, session: &Session, message: &str) -> Result<ceremony::Started, String> {
    ceremony::begin_assertion(hub, Some((&session.principal, message))).map_err(|e| e.to_string())
}

//! `GET/POST /inbox/devices` (issue 41): the operator's devices that receive Web Push
//! notifications — subscribe this browser (a button pwa.js drives: the browser asks for
//! permission, subscribes with the Hub's VAPID key and posts the subscription here), see each
//! device's push service and when it was added, remove one. And `POST /inbox/push/answer`: what a
//! notification's answer button posts (`{"token": …}`), from the service worker.

use axum::Json;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use ma2h_core::channels::answer_token::{self, Applied, LinkError, Purpose};
use ma2h_core::channels::webpush;
use ma2h_core::{Hub, HubError};
use maud::html;
use serde_json::{Value, json};

use super::session::Session;
use super::{csrf_refused, form_get, form_pairs, notice, page, respond, went_wrong};
use crate::extract::{Body, Params};

/// `GET /inbox/devices`.
pub async fn page_get(State(hub): State<Hub>, session: Session, params: Params) -> Response {
    let devices = match webpush::mine(&hub, &session.principal).await {
        Ok(d) => d,
        Err(e) => return went_wrong(Some(&session), "devices page", &e),
    };
    let passkeys = match ma2h_core::passkeys::mine(&hub, &session.principal).await {
        Ok(p) => p,
        Err(e) => return went_wrong(Some(&session), "devices page", &e),
    };
    let now = hub.clock.now();
    let done = params.get("done");
    let body = html! {
        @if let Some(d) = done { p.notice role="status" { (d) } }
        h1 { "Devices" }
        p { "Get a notification on this phone or computer when an agent asks — with answer buttons for a yes/no "
            "or two-way question (others open the message). Nothing sensitive is ever put in a notification." }
        div #push data-key=(webpush::public_key(&hub)) data-csrf=(session.csrf) {
            button #subscribe type="button" hidden { "Notify this device" }
            p #push-status role="status" {}
            noscript { p.hint { "Subscribing needs JavaScript in this browser." } }
        }
        p.hint { "On an iPhone or iPad: first add the inbox to your Home Screen (Share → Add to Home Screen), open it from there, then press the button. "
            "On Android, Chrome and Edge: press the button and allow notifications." }
        @if devices.is_empty() { p { "No device yet." } }
        @else {
            table.cards #device-list {
                thead { tr { th { "Device" } th { "Push service" } th { "Added" } th {} } }
                tbody {
                    @for d in &devices {
                        tr {
                            td data-label="Device" { (d.label) }
                            td data-label="Push service" { code { (d.push_host) } }
                            td data-label="Added" { (super::rows::stamp(d.created_at, now)) }
                            td.act {
                                form.inline method="post" action="/inbox/devices" {
                                    input type="hidden" name="csrf" value=(session.csrf);
                                    input type="hidden" name="action" value="remove";
                                    input type="hidden" name="id" value=(d.id);
                                    button.link type="submit" { "Remove" }
                                }
                            }
                        }
                    }
                }
            }
        }
        (super::passkeys::section(&hub, &session, &passkeys))
    };
    respond(StatusCode::OK, page("Devices", Some(&session), body))
}

/// `POST /inbox/devices` (`action=subscribe` with `subscription` — the browser's
/// `PushSubscription` as JSON — and `label`; or `action=remove` with `id`).
pub async fn update(State(hub): State<Hub>, session: Session, Body(body): Body) -> Response {
    let pairs = form_pairs(&body);
    if !session.csrf_ok(form_get(&pairs, "csrf")) {
        return csrf_refused(Some(&session));
    }
    let result = match form_get(&pairs, "action") {
        Some("subscribe") => {
            let sub: Value =
                serde_json::from_str(form_get(&pairs, "subscription").unwrap_or_default()).unwrap_or(Value::Null);
            let label = form_get(&pairs, "label").unwrap_or_default();
            webpush::subscribe(&hub, &session.principal, &sub, label).await.map(|_| "This device is subscribed.")
        }
        Some("remove") => webpush::remove(&hub, &session.principal, form_get(&pairs, "id").unwrap_or_default())
            .await
            .map(|()| "Device removed."),
        _ => Err(HubError::validation("action must be subscribe or remove")),
    };
    match result {
        Ok(done) => Redirect::to(&format!("/inbox/devices?done={}", done.replace(' ', "+"))).into_response(),
        Err(HubError::Protocol(e)) => {
            notice(StatusCode::UNPROCESSABLE_ENTITY, Some(&session), "Not saved", &e.to_string())
        }
        Err(HubError::NotFound) => {
            notice(StatusCode::NOT_FOUND, Some(&session), "Not found", "There is no such device.")
        }
        Err(e) => went_wrong(Some(&session), "devices update", &e),
    }
}

/// `POST /inbox/push/answer` `{"token": …}`: a notification's answer button, posted by the
/// service worker. The single-use, operator- and device-bound token is the credential (no
/// cookie is needed; none is trusted). Answers JSON for the worker to show: `outcome` is
/// `answered`, `already_used`, `refused` (with `reason`), `step_up` (with `url`: a policy asks
/// for a passkey, so the worker opens the message to confirm there), `expired`, `gone` or
/// `invalid`.
pub async fn answer(State(hub): State<Hub>, Body(body): Body) -> Response {
    let token = serde_json::from_slice::<Value>(&body).ok().and_then(|v| v["token"].as_str().map(str::to_owned));
    let Some(token) = token else {
        return (StatusCode::BAD_REQUEST, Json(json!({"outcome": "invalid"}))).into_response();
    };
    let reply = |status: StatusCode, v: Value| (status, Json(v)).into_response();
    match answer_token::apply(&hub, Purpose::Push, &token).await {
        Ok(Applied::Answered(v)) => reply(
            StatusCode::OK,
            json!({"outcome": "answered", "title": v.title, "answer": v.option_label, "status": v.status, "id": v.message_id}),
        ),
        Ok(Applied::AlreadyUsed(v)) => reply(
            StatusCode::CONFLICT,
            json!({"outcome": "already_used", "title": v.title, "status": v.status, "id": v.message_id}),
        ),
        // issue 41: the worker opens the message, where the answer is confirmed with a passkey
        Ok(Applied::NeedsPasskey(v)) => reply(
            StatusCode::FORBIDDEN,
            json!({"outcome": "step_up", "title": v.title, "id": v.message_id, "url": format!("/inbox/{}#answer", v.message_id)}),
        ),
        Ok(Applied::Refused(v, reason)) => reply(
            StatusCode::CONFLICT,
            json!({"outcome": "refused", "title": v.title, "status": v.status, "reason": reason, "id": v.message_id}),
        ),
        Err(LinkError::Invalid) => reply(StatusCode::NOT_FOUND, json!({"outcome": "invalid"})),
        Err(LinkError::Expired) => reply(StatusCode::GONE, json!({"outcome": "expired"})),
        Err(LinkError::Gone) => reply(StatusCode::GONE, json!({"outcome": "gone"})),
        Err(LinkError::Unavailable) => reply(StatusCode::SERVICE_UNAVAILABLE, json!({"outcome": "unavailable"})),
    }
}

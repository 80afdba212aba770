//! Triage (issue 39): answer-and-next (`GET /inbox/next`) and bulk decline/dismiss of selected
//! rows (`POST /inbox/bulk`). Both go through the same use cases as one answer: §9.1 decides per
//! message, a bulk action is confirmed first, and what was refused is said, not hidden.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Redirect, Response};
use ma2h_core::mailbox::inbox::{Allowed, glance};
use ma2h_core::messages::list::{ListParams, list};
use ma2h_core::messages::resolve;
use ma2h_core::{Hub, HubError};
use ma2h_protocol::envelope::MessageType;
use ma2h_protocol::ids::MessageId;
use serde_json::json;

use super::session::Session;
use super::{confirm_page, confirmed, csrf_refused, form_pairs, went_wrong};
use crate::extract::{Body, Params};

/// Open messages read to find the next one (inbox order: urgent/high first, then oldest).
const NEXT_WINDOW: usize = 100;
/// Rows one bulk action takes at most (one inbox page).
pub const MAX_BULK: usize = 50;

/// `GET /inbox/next?after=msg_…`: the first open message (inbox order) this operator may answer,
/// other than the one just answered; the inbox when nothing is left.
pub async fn next(State(hub): State<Hub>, session: Session, params: Params) -> Response {
    let after = params.get("after").unwrap_or("");
    let query = ListParams { limit: Some(NEXT_WINDOW), ..ListParams::default() };
    let listing = match list(&hub, &session.principal, query).await {
        Ok(l) => l,
        Err(e) => return went_wrong(Some(&session), "answer-and-next", &e),
    };
    let ids: Vec<MessageId> =
        listing.page.items.iter().filter(|s| s.id.as_str() != after).map(|s| s.id.clone()).collect();
    let glances = match glance(&hub, &session.principal, &ids).await {
        Ok(g) => g,
        Err(e) => return went_wrong(Some(&session), "answer-and-next", &e),
    };
    let found =
        ids.iter().zip(glances).find(|(_, g)| g.as_ref().is_some_and(|g| matches!(g.allowed, Allowed::Resolve(_))));
    let answered = if after.is_empty() { "" } else { "&answered=1" };
    match found {
        Some((id, _)) => Redirect::to(&format!("/inbox/{id}?then=next{answered}")).into_response(),
        None => Redirect::to("/inbox?caught_up=1").into_response(),
    }
}

/// `POST /inbox/bulk` (`id`=… repeated, `act=decline`): decline the selected asks and dismiss the
/// selected tasks, after a confirmation; each is the §8.8 use case as this operator, so a
/// message they may not resolve, or one already resolved, is refused and counted, never forced.
pub async fn bulk(State(hub): State<Hub>, session: Session, Body(body): Body) -> Response {
    let pairs = form_pairs(&body);
    if !session.csrf_ok(super::form_get(&pairs, "csrf")) {
        return csrf_refused(Some(&session));
    }
    let mut ids: Vec<&str> = pairs.iter().filter(|(k, _)| k == "id").map(|(_, v)| v.as_str()).collect();
    ids.dedup();
    if ids.is_empty() || super::form_get(&pairs, "act") != Some("decline") {
        return done("Nothing selected: tick the messages to decline first.");
    }
    if ids.len() > MAX_BULK {
        return done(&format!("At most {MAX_BULK} messages at once."));
    }
    if !confirmed(&pairs) {
        let n = ids.len();
        return confirm_page(
            &session,
            &format!("Decline {n} message{}?", if n == 1 { "" } else { "s" }),
            "Each selected ask is declined and each task dismissed: its agent learns you chose not to answer \
             (resolution “declined” or “dismissed”), not any of its options. This cannot be undone.",
            "/inbox/bulk",
            &pairs,
            "Decline them",
            "/inbox",
        );
    }
    let (mut ok, mut refused) = (0, Vec::new());
    for id in ids {
        match decline(&hub, &session, id).await {
            Ok(()) => ok += 1,
            Err(HubError::AlreadyTerminal { .. }) => refused.push("already resolved".to_owned()),
            Err(e @ (HubError::NotAuthorized(_) | HubError::NotFound | HubError::Protocol(_))) => {
                refused.push(match e {
                    HubError::NotAuthorized(_) => "you may not resolve it".to_owned(),
                    HubError::NotFound => "not found".to_owned(),
                    other => other.to_string(),
                });
            }
            Err(e) => {
                tracing::error!(error = %e, "bulk decline failed");
                refused.push("the Hub could not record it".to_owned());
            }
        }
    }
    let mut text = format!("Declined {ok}.");
    if !refused.is_empty() {
        let n = refused.len();
        refused.sort();
        refused.dedup();
        text.push_str(&format!(" Not declined: {n} ({}).", refused.join("; ")));
    }
    done(&text)
}

/// Decline an ask or dismiss a task, as the operator (§8.8: the use case decides).
async fn decline(hub: &Hub, session: &Session, id: &str) -> Result<(), HubError> {
    let view = ma2h_core::mailbox::inbox::view(hub, &session.principal, id).await?;
    let resolution = match view.record.kind {
        MessageType::Ask => "declined",
        MessageType::Task => "dismissed",
        MessageType::Notify => return Err(HubError::NotAuthorized("a notify is not answered".into())),
    };
    let body = serde_json::to_vec(&json!({"resolution": resolution})).unwrap_or_default();
    resolve::resolve(hub, &session.principal, None, id, &body).await.map(|_| ())
}

fn done(text: &str) -> Response {
    let q: String = url::form_urlencoded::byte_serialize(text.as_bytes()).collect();
    let mut resp = Redirect::to(&format!("/inbox?done={q}")).into_response();
    *resp.status_mut() = StatusCode::SEE_OTHER;
    resp
}

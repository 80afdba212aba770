//! `GET/POST /a/{token}` (issue 20): the answer links of a notification mail. The GET only shows
//! what the link would do, with a button (link scanners prefetch mail links: a fetch must never
//! answer); the POST applies it once, as the operator the mail was for (`ma2h_core::channels::email`).
//! No session cookie: the single-use, operator-bound, expiring token is the credential.

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::Response;
use ma2h_core::Hub;
use ma2h_core::channels::email;
use ma2h_core::channels::email::{Applied, LinkError, LinkView};
use maud::html;

use super::{notice, page, respond};
use crate::extract::Path;

fn refused(e: &LinkError) -> Response {
    match e {
        LinkError::Invalid => notice(StatusCode::NOT_FOUND, None, "Not a valid link", "This answer link is not valid."),
        LinkError::Expired => notice(
            StatusCode::GONE,
            None,
            "This link has expired",
            "The question it answered has expired; open the inbox to see what happened.",
        ),
        LinkError::Gone => notice(StatusCode::GONE, None, "Removed", "This message no longer exists."),
        LinkError::Unavailable => notice(
            StatusCode::SERVICE_UNAVAILABLE,
            None,
            "Try again",
            "The Hub could not record this right now; nothing was answered. Try the link again in a moment.",
        ),
    }
}

fn summary(v: &LinkView) -> maud::Markup {
    html! {
        dl.kv {
            dt { "Question" } dd { (v.title) }
            dt { "Answer" } dd { strong { (v.option_label) } }
            dt { "As" } dd { code { "human:" (v.human) } }
            dt { "Status now" } dd { (v.status) }
        }
    }
}

/// `GET /a/{token}`: a confirmation page. Changes nothing.
pub async fn confirm(State(hub): State<Hub>, Path(token): Path<String>) -> Response {
    let view = match email::view_link(&hub, &token).await {
        Ok(v) => v,
        Err(e) => return refused(&e),
    };
    let body = html! {
        h1 { "Answer from your email" }
        (summary(&view))
        @if view.used {
            p.notice role="note" { "This link was already used. " a href=(format!("/inbox/{}", view.message_id)) { "Open the message" } }
        } @else if view.status != "open" {
            p.notice role="note" { "This message is already " (view.status) ". " a href=(format!("/inbox/{}", view.message_id)) { "Open the message" } }
        } @else {
            form method="post" action=(format!("/a/{token}")) {
                button type="submit" { "Answer “" (view.option_label) "”" }
            }
            p.hint { "Nothing is answered until you press the button. The link works once." }
        }
    };
    respond(StatusCode::OK, page("Answer from email", None, body))
}

/// `POST /a/{token}`: apply the answer once.
pub async fn apply(State(hub): State<Hub>, Path(token): Path<String>) -> Response {
    let (status, heading, text, view) = match email::apply_link(&hub, &token).await {
        Ok(Applied::Answered(v)) => (StatusCode::OK, "Answered", "Your answer was recorded.".to_owned(), v),
        Ok(Applied::AlreadyUsed(v)) => {
            (StatusCode::CONFLICT, "Already used", "This link was already used; nothing changed.".to_owned(), v)
        }
        Ok(Applied::Refused(v, why)) => (StatusCode::CONFLICT, "Not answered", format!("Not answered: {why}."), v),
        Ok(Applied::NeedsPasskey(v)) => (
            StatusCode::FORBIDDEN,
            "Confirm in the inbox",
            "Not answered: this ask needs your passkey. Open it in the inbox and answer there.".to_owned(),
            v,
        ),
        Err(e) => return refused(&e),
    };
    let body = html! {
        h1 { (heading) }
        p.notice role="status" { (text) }
        (summary(&view))
        p { a href=(format!("/inbox/{}", view.message_id)) { "Open the message in the inbox" } }
    };
    respond(status, page(heading, None, body))
}

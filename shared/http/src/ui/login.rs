//! `GET/POST /login` and `POST /logout`. Logging in takes an operator API key (the same
//! credential as `Authorization: Bearer` on the API), a passkey the operator added
//! ([`super::passkeys`], `POST /login/passkey`) or the account's identity provider
//! ([`super::sso`], issue 42); an agent key is refused. The key is never
//! stored in the cookie — only the credential id, sealed.

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use ma2h_core::kernel::auth;
use ma2h_core::kernel::credentials::PrincipalId;
use ma2h_core::{Hub, HubError};
use maud::html;

use super::session::{self, Session};
use super::{csrf_refused, form_get, form_pairs, page, respond};
use crate::extract::{Body, MaybeClientIp, Params};

/// The login form. Already logged in → straight to the inbox.
pub async fn form(State(hub): State<Hub>, headers: HeaderMap, params: Params) -> Response {
    if let Ok(Some(_)) = session::current(&hub, &headers).await {
        return Redirect::to(session::safe_next(params.get("next"))).into_response();
    }
    render_for(&hub, params.get("account"), params.get("next"), None, StatusCode::OK)
}

pub(super) fn render(hub: &Hub, next: Option<&str>, error: Option<&str>, status: StatusCode) -> Response {
    render_for(hub, None, next, error, status)
}

/// The login page; `account` (from `/login?account=A`) fills in the single sign-on form.
fn render_for(
    hub: &Hub,
    account: Option<&str>,
    next: Option<&str>,
    error: Option<&str>,
    status: StatusCode,
) -> Response {
    let (csrf, cookie) = session::login_form(hub);
    let next = session::safe_next(next);
    let body = html! {
        h1 { "Log in" }
        p { "Use an operator API key (" code { "ma2h_op_…" } "), as created by "
            code { "ma2h-hub admin create-operator" } "." }
        @if let Some(e) = error {
            p.notice.error role="alert" #login-error { (e) }
        }
        form method="post" action="/login" {
            input type="hidden" name="csrf" value=(csrf);
            input type="hidden" name="next" value=(next);
            label for="api_key" { "Operator API key" }
            input #api_key type="password" name="api_key" autocomplete="current-password" required
                autofocus aria-describedby=[error.map(|_| "login-error")];
            div.actions { button type="submit" { "Log in" } }
        }
        // issue 41: a passkey instead of the key (shown when this browser can use one)
        (super::passkeys::login_form(hub, &csrf, next))
        // issue 42: the account's identity provider
        (super::sso::login_form(hub, account, next))
    };
    let mut resp = respond(status, page("Log in", None, body));
    resp.headers_mut().append(header::SET_COOKIE, cookie);
    resp
}

/// Check the login form's CSRF token and the key; on success set the session cookie.
pub async fn submit(State(hub): State<Hub>, headers: HeaderMap, client: MaybeClientIp, Body(body): Body) -> Response {
    let pairs = form_pairs(&body);
    let next = form_get(&pairs, "next");
    match session::claim_login_form(&hub, &headers, form_get(&pairs, "csrf")).await {
        Ok(true) => {}
        Ok(false) => {
            return render(
                &hub,
                next,
                Some("The login form expired, was already used, or was not sent from this site. Please try again."),
                StatusCode::FORBIDDEN,
            );
        }
        Err(e) => return crate::error::ApiError(e).into_response(),
    }
    let principal = match auth::authenticate_from(&hub, form_get(&pairs, "api_key"), client.0).await {
        Ok(p) => p,
        Err(HubError::Unauthenticated) => {
            return render(&hub, next, Some("That key is unknown, revoked or expired."), StatusCode::UNAUTHORIZED);
        }
        Err(HubError::RateLimited { retry_after_secs, .. }) => {
            let msg = format!("Too many failed sign-ins from your address. Try again in {retry_after_secs} s.");
            let mut resp = render(&hub, next, Some(&msg), StatusCode::TOO_MANY_REQUESTS);
            resp.headers_mut().insert(header::RETRY_AFTER, retry_after_secs.into());
            return resp;
        }
        Err(e) => return crate::error::ApiError(e).into_response(),
    };
    if !matches!(principal.id, PrincipalId::Operator(_)) {
        return render(
            &hub,
            next,
            Some("That is an agent key. The inbox needs an operator key (ma2h_op_…)."),
            StatusCode::FORBIDDEN,
        );
    }
    // Issue 42: an account on SSO may turn key login off (break-glass: `admin sso set
    // --key-login true`); the API and the CLI keep their keys.
    match ma2h_core::sso::flow::config(&hub, &principal.account).await {
        Ok(Some(sso)) if !sso.key_login => {
            return render(
                &hub,
                next,
                Some("This account signs in with single sign-on (or a passkey): the key login is turned off."),
                StatusCode::FORBIDDEN,
            );
        }
        Ok(_) => {}
        Err(e) => return crate::error::ApiError(e).into_response(),
    }
    let cookie = match session::start(&hub, &principal, "key").await {
        Ok(cookie) => cookie,
        Err(e) => return crate::error::ApiError(e).into_response(),
    };
    let mut resp = Redirect::to(session::safe_next(next)).into_response();
    let h = resp.headers_mut();
    h.append(header::SET_COOKIE, session::clear_login(&hub));
    h.append(header::SET_COOKIE, cookie);
    resp
}

/// For an SSO session of an account with `provider_logout` on: the provider's end-session URL
/// (OpenID Connect RP-Initiated Logout), coming back to the login page. A provider that cannot be
/// reached is logged; the Hub's session has ended regardless.
async fn provider_logout(hub: &Hub, session: &Session) -> Option<String> {
    let hint = session.sso()?;
    let back = format!("{}/login", hub.settings.public_url);
    match ma2h_core::sso::flow::logout_url(hub, &session.principal.account, hint, &back).await {
        Ok(url) => url,
        Err(e) => {
            tracing::warn!(account = %session.principal.account, error = %e, "sso: no provider logout");
            None
        }
    }
}

/// End the session (CSRF-checked, like every state-changing form).
pub async fn logout(State(hub): State<Hub>, session: Session, Body(body): Body) -> Response {
    let pairs = form_pairs(&body);
    if !session.csrf_ok(form_get(&pairs, "csrf")) {
        return csrf_refused(Some(&session));
    }
    if let Err(e) = session::end(&hub, &session).await {
        return crate::error::ApiError(e).into_response();
    }
    let mut resp = match provider_logout(&hub, &session).await {
        // A page that moves on by itself: the CSP's `form-action 'self'` would hold this form's
        // redirect to the provider (as for the SSO login, ui/sso.rs).
        Some(url) => {
            let body = html! {
                meta http-equiv="refresh" content=(format!("0;url={url}"));
                h1 { "Logged out" }
                p { "Signing you out of " a #sso-logout href=(url) { "your identity provider" } " too…" }
            };
            respond(StatusCode::OK, page("Logged out", None, body))
        }
        None => Redirect::to("/login").into_response(),
    };
    for c in session::clear(&hub) {
        resp.headers_mut().append(header::SET_COOKIE, c);
    }
    resp
}

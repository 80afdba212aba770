//! `GET /login/sso` and `GET /login/sso/callback` (issue 42): the inbox's single sign-on through
//! the account's OpenID Connect provider ([`ma2h_core::sso`] does the protocol).
//!
//! Between the two legs the browser carries the login's state, nonce and PKCE verifier in a
//! cookie sealed under the master key (context `ui-sso`, 10 minutes). It is `SameSite=Lax`, not
//! `Strict` like the session: the provider's redirect back is a cross-site top-level GET, which
//! must carry it. Each state logs in at most once (a store counter), so a captured callback URL
//! cannot be replayed. Any failure shows the login page with a generic message; the cause is
//! logged, never the code or a token.

use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Redirect, Response};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ma2h_core::Hub;
use ma2h_core::sso::Refusal;
use ma2h_core::sso::flow::{self, Pending, SsoError};
use ma2h_protocol::ids::AccountId;
use maud::html;
use serde::{Deserialize, Serialize};
use subtle::ConstantTimeEq;

use super::session;
use super::{page, respond};
use crate::extract::Params;

const CONTEXT: &str = "ui-sso";
const MINUTES: i64 = 10;
const FAILED: &str = "Single sign-on did not complete. Please try again, or ask your Hub's admin.";

#[derive(Serialize, Deserialize)]
struct Carried {
    a: String,
    s: String,
    n: String,
    v: String,
    next: String,
    exp: i64,
}

fn cookie_name(hub: &Hub) -> &'static str {
    if session::secure(hub) { "__Host-ma2h_sso" } else { "ma2h_sso" }
}

fn cookie(hub: &Hub, value: &str, max_age: i64) -> HeaderValue {
    let secure = if session::secure(hub) { "; Secure" } else { "" };
    let v = format!("{}={value}; Path=/; HttpOnly; SameSite=Lax; Max-Age={max_age}{secure}", cookie_name(hub));
    HeaderValue::from_str(&v).expect("cookie values are base64url")
}

/// Where the provider sends the browser back (register exactly this with the provider).
pub fn redirect_uri(hub: &Hub) -> String {
    format!("{}/login/sso/callback", hub.settings.public_url)
}

fn failed(hub: &Hub, next: Option<&str>, message: &str, status: StatusCode) -> Response {
    let mut resp = super::login::render(hub, next, Some(message), status);
    resp.headers_mut().append(header::SET_COOKIE, cookie(hub, "", 0));
    resp
}

/// Leg one: `?account=A[&next=/inbox/…]` → a redirect to the account's provider.
pub async fn begin(State(hub): State<Hub>, params: Params) -> Response {
    let next = session::safe_next(params.get("next")).to_owned();
    // none named: the Hub's own (`MA2H_SSO_ACCOUNT`), if it has one
    let named = params.get("account").map(str::trim).filter(|a| !a.is_empty());
    let account = match named {
        Some(a) => AccountId::parse(a),
        None => hub.settings.sso_account.clone(),
    };
    let Some(account) = account else {
        return failed(&hub, Some(&next), "Enter the account to sign in to.", StatusCode::BAD_REQUEST);
    };
    match flow::begin(&hub, &account, &redirect_uri(&hub)).await {
        Ok((url, pending)) => {
            let carried = Carried {
                a: pending.account.to_string(),
                s: pending.state,
                n: pending.nonce,
                v: pending.verifier,
                next,
                exp: hub.clock.now().timestamp() + MINUTES * 60,
            };
            let plain = serde_json::to_vec(&carried).expect("a plain struct serializes");
            let sealed = URL_SAFE_NO_PAD.encode(hub.master_key.seal(hub.random.as_ref(), CONTEXT, &plain));
            // From the login form, a page that moves on by itself: the login page's CSP
            // (`form-action 'self'`) would block the form's redirect to another origin. A link
            // or bookmark to this route gets the plain redirect.
            let mut resp = if params.get("form").is_some() {
                let body = html! {
                    meta http-equiv="refresh" content=(format!("0;url={url}"));
                    h1 { "Single sign-on" }
                    p { "Continuing to " a #sso-continue href=(url) { "your identity provider" } "…" }
                };
                respond(StatusCode::OK, page("Single sign-on", None, body))
            } else {
                Redirect::to(&url).into_response()
            };
            resp.headers_mut().append(header::SET_COOKIE, cookie(&hub, &sealed, MINUTES * 60));
            resp
        }
        Err(SsoError::NotConfigured) => {
            failed(&hub, Some(&next), "That account does not use single sign-on.", StatusCode::NOT_FOUND)
        }
        Err(SsoError::Hub(e)) => crate::error::ApiError(e).into_response(),
        Err(e) => {
            tracing::warn!(account = %account, error = %e, "sso: the login could not start");
            failed(&hub, Some(&next), FAILED, StatusCode::BAD_GATEWAY)
        }
    }
}

fn carried(hub: &Hub, headers: &HeaderMap) -> Option<Carried> {
    let value = session::cookie(headers, cookie_name(hub))?;
    let plain = hub.master_key.open(CONTEXT, &URL_SAFE_NO_PAD.decode(value).ok()?).ok()?;
    let c: Carried = serde_json::from_slice(&plain).ok()?;
    (c.exp > hub.clock.now().timestamp()).then_some(c)
}

/// Leg two: the provider's redirect back (`?code&state`, or `?error`).
pub async fn callback(State(hub): State<Hub>, headers: HeaderMap, params: Params) -> Response {
    let Some(c) = carried(&hub, &headers) else {
        return failed(
            &hub,
            None,
            "The sign-in expired or was not started in this browser. Please try again.",
            StatusCode::BAD_REQUEST,
        );
    };
    let next = c.next.clone();
    if let Some(error) = params.get("error") {
        // The provider's own refusal (the user cancelled, or is not assigned to the app).
        tracing::info!(error = %error.chars().take(64).collect::<String>(), "sso: the provider answered with an error");
        return failed(&hub, Some(&next), FAILED, StatusCode::UNAUTHORIZED);
    }
    let state = params.get("state").unwrap_or("");
    let (Some(code), true) = (params.get("code"), bool::from(c.s.as_bytes().ct_eq(state.as_bytes()))) else {
        tracing::warn!("sso: a callback whose state is not this browser's");
        return failed(&hub, Some(&next), FAILED, StatusCode::BAD_REQUEST);
    };
    let Some(account) = AccountId::parse(&c.a) else {
        return failed(&hub, Some(&next), FAILED, StatusCode::BAD_REQUEST);
    };
    // Each state logs in at most once, whatever the outcome.
    let expires = ma2h_protocol::time::from_millis(c.exp.saturating_mul(1000));
    match hub.messages.incr_counter(&format!("ui-sso/{}", c.s), expires, hub.clock.now()).await {
        Ok(1) => {}
        Ok(_) => {
            tracing::warn!(account = %account, "sso: a callback replayed");
            return failed(&hub, Some(&next), FAILED, StatusCode::BAD_REQUEST);
        }
        Err(e) => return crate::error::ApiError(e.into()).into_response(),
    }
    let pending = Pending { account: account.clone(), state: c.s, nonce: c.n, verifier: c.v };
    let login = match flow::finish(&hub, &pending, code, &redirect_uri(&hub)).await {
        Ok(login) => login,
        Err(SsoError::Hub(e)) => return crate::error::ApiError(e).into_response(),
        Err(SsoError::Unmapped { refusal: Refusal::NotInGroup, .. }) => {
            tracing::info!(account = %account, "sso: a valid identity in none of the account's required groups");
            let msg = "Your identity provider signed you in, but you are not in a group this account \
                       requires. Ask your identity provider's admin to add you to one.";
            return failed(&hub, Some(&next), msg, StatusCode::FORBIDDEN);
        }
        Err(SsoError::Unmapped { subject, .. }) => {
            tracing::info!(account = %account, "sso: a valid identity that is no operator of the account");
            // The person's own subject, so an admin can link it (`admin sso link`).
            let subject: String = subject.chars().filter(|c| !c.is_control()).take(255).collect();
            let msg = format!(
                "Your identity provider signed you in, but you are not an operator of this account. \
                 An admin can link you: admin sso link --account {account} --subject {subject} --human <you>"
            );
            return failed(&hub, Some(&next), &msg, StatusCode::FORBIDDEN);
        }
        Err(e) => {
            tracing::warn!(account = %account, error = %e, "sso: login refused");
            return failed(&hub, Some(&next), FAILED, StatusCode::UNAUTHORIZED);
        }
    };
    let session_cookie = match session::start_sso(&hub, &login).await {
        Ok(cookie) => cookie,
        Err(e) => return crate::error::ApiError(e).into_response(),
    };
    // The session cookie is SameSite=Strict, and this response ends a navigation that began at
    // the provider: a redirect from here would not carry the cookie yet. A page that moves on by
    // itself (same-site) does.
    let next = session::safe_next(Some(&next)).to_owned();
    let body = html! {
        meta http-equiv="refresh" content=(format!("0;url={next}"));
        h1 { "Signed in" }
        p { "Continuing to " a href=(next) { "the inbox" } "…" }
    };
    let mut resp = respond(StatusCode::OK, page("Signed in", None, body));
    let h = resp.headers_mut();
    h.append(header::SET_COOKIE, cookie(&hub, "", 0));
    h.append(header::SET_COOKIE, session_cookie);
    resp
}

/// The login page's SSO form (a GET to leg one).
pub fn login_form(hub: &Hub, account: Option<&str>, next: &str) -> maud::Markup {
    // A Hub serving one team (`MA2H_SSO_ACCOUNT`) asks for no account: one button. A link that
    // names one (`/login?account=A`) still picks it.
    let default = hub.settings.sso_account.as_ref().map(AccountId::as_str).filter(|_| account.is_none());
    html! {
        form.sso method="get" action="/login/sso" {
            h2 { "Single sign-on" }
            @if let Some(acct) = default {
                p.hint { "If your team signs in with its identity provider (Google, Okta, Entra ID, Keycloak…), use it here." }
                input type="hidden" name="account" value=(acct);
            } @else {
                p.hint { "If your team signs in with its identity provider (Google, Okta, Entra ID, Keycloak…), enter the account your Hub's admin gave you." }
            }
            input type="hidden" name="next" value=(next);
            input type="hidden" name="form" value="1";
            @if default.is_none() {
                label for="sso_account" { "Account" }
                input #sso_account type="text" name="account" value=[account] autocomplete="organization" required;
            }
            div.actions { button #sso-login.secondary type="submit" { "Sign in with your identity provider" } }
        }
    }
}

//! The inbox session: a cookie holding `{credential_id, session id, expires_at, csrf}` sealed with
//! XChaCha20-Poly1305 under the Hub master key (context `ui-session`). Every request reopens it
//! and re-checks that the credential is still an active operator credential, so revoking the key
//! ends its sessions at once, and that the session id was not logged out: logout records the id
//! in the store (a counter that expires with the session), so a copy of the cookie taken before
//! logout is dead too. The CSRF token lives inside the sealed cookie and in a hidden field of
//! every POST form; the two are compared in constant time.
//!
//! Before login a second sealed cookie (context `ui-login`) carries the login form's CSRF token,
//! so the login form itself cannot be forged cross-site either; each such token logs in at most
//! once (claimed with a store counter).

use axum::extract::FromRequestParts;
use axum::http::request::Parts;
use axum::http::{HeaderMap, HeaderValue, header};
use axum::response::{IntoResponse, Redirect, Response};
use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use ma2h_core::kernel::auth::Principal;
use ma2h_core::kernel::credentials::PrincipalId;
use ma2h_core::kernel::settings::Mode;
use ma2h_core::sso::Via;
use ma2h_core::{Hub, HubError};
use ma2h_protocol::ids::{AccountId, HumanId};
use serde::{Deserialize, Serialize};
use subtle::ConstantTimeEq;

/// How long a login lasts.
pub const SESSION_HOURS: i64 = 12;
/// How long the login form's token lasts.
const LOGIN_FORM_MINUTES: i64 = 30;
const SESSION_CONTEXT: &str = "ui-session";
const LOGIN_CONTEXT: &str = "ui-login";

/// The sealed cookie payload.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct Sealed {
    /// `cred_…` of the operator credential (empty for the pre-login cookie).
    cid: String,
    /// The session id (hex; empty for the pre-login cookie). Cookies from before session ids
    /// existed open with an empty one and are refused.
    #[serde(default)]
    sid: String,
    /// Unix seconds.
    exp: i64,
    /// The CSRF token (hex).
    csrf: String,
    /// Issue 42: a session made by single sign-on — whose operator it is and how they were
    /// mapped (`cid` is then `sso:…`, no credential). Re-checked on every request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    sso: Option<SsoSeal>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
struct SsoSeal {
    a: String,
    h: String,
    v: Via,
    /// The ID token, for the logout's `id_token_hint` (RP-Initiated Logout).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    t: Option<String>,
}

/// An authenticated inbox session.
#[derive(Debug, Clone)]
pub struct Session {
    pub principal: Principal,
    pub csrf: String,
    sid: String,
    /// Unix seconds.
    expires: i64,
    /// `Some` for a single sign-on session: the ID token kept for the provider's logout, if any.
    sso_hint: Option<Option<String>>,
}

impl Session {
    /// `true` iff `presented` equals this session's CSRF token (constant time).
    pub fn csrf_ok(&self, presented: Option<&str>) -> bool {
        csrf_eq(&self.csrf, presented)
    }

    /// `human:<id>`.
    pub fn who(&self) -> String {
        self.principal.actor().to_string()
    }

    /// `Some(id_token_hint)` iff this session was made by single sign-on.
    pub fn sso(&self) -> Option<Option<&str>> {
        self.sso_hint.as_ref().map(Option::as_deref)
    }
}

/// Constant-time comparison of a CSRF token with the presented form value.
pub fn csrf_eq(expected: &str, presented: Option<&str>) -> bool {
    let presented = presented.unwrap_or("");
    !expected.is_empty() && bool::from(expected.as_bytes().ct_eq(presented.as_bytes()))
}

pub(super) fn secure(hub: &Hub) -> bool {
    hub.settings.mode != Mode::Dev
}

/// The cookie names: `__Host-` prefixed (Secure, host-only, Path=/) outside dev mode.
fn cookie_name(hub: &Hub, login: bool) -> &'static str {
    match (secure(hub), login) {
        (true, false) => "__Host-ma2h_inbox",
        (true, true) => "__Host-ma2h_login",
        (false, false) => "ma2h_inbox",
        (false, true) => "ma2h_login",
    }
}

fn set_cookie(hub: &Hub, name: &str, value: &str, max_age_secs: i64) -> HeaderValue {
    let secure = if secure(hub) { "; Secure" } else { "" };
    let v = format!("{name}={value}; Path=/; HttpOnly; SameSite=Strict; Max-Age={max_age_secs}{secure}");
    HeaderValue::from_str(&v).expect("cookie values are base64url")
}

fn random_token(hub: &Hub) -> String {
    let mut b = [0u8; 32];
    hub.random.fill(&mut b);
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn seal(hub: &Hub, context: &str, payload: &Sealed) -> String {
    let plain = serde_json::to_vec(payload).expect("a plain struct serializes");
    URL_SAFE_NO_PAD.encode(hub.master_key.seal(hub.random.as_ref(), context, &plain))
}

fn open(hub: &Hub, context: &str, value: &str) -> Option<Sealed> {
    let sealed = URL_SAFE_NO_PAD.decode(value).ok()?;
    let plain = hub.master_key.open(context, &sealed).ok()?;
    let payload: Sealed = serde_json::from_slice(&plain).ok()?;
    (payload.exp > hub.clock.now().timestamp()).then_some(payload)
}

/// The value of cookie `name` in the request headers.
pub(super) fn cookie<'a>(headers: &'a HeaderMap, name: &str) -> Option<&'a str> {
    headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|kv| kv.trim().split_once('='))
        .find(|(k, _)| *k == name)
        .map(|(_, v)| v)
}

/// Start a session for an authenticated operator (`method`: how they proved it): the
/// `Set-Cookie` value. Issue 42: the login is in the ledger before the cookie exists — a login
/// whose entry could not be written does not happen.
pub async fn start(hub: &Hub, principal: &Principal, method: &str) -> Result<HeaderValue, HubError> {
    mint(hub, principal, method, None, None).await
}

/// [`start`] for a single sign-on (issue 42): the session remembers how its operator was mapped.
pub async fn start_sso(hub: &Hub, login: &ma2h_core::sso::flow::Login) -> Result<HeaderValue, HubError> {
    let PrincipalId::Operator(human) = &login.principal.id else { return Err(HubError::Unauthenticated) };
    let seal = SsoSeal {
        a: login.principal.account.to_string(),
        h: human.to_string(),
        v: login.via.clone(),
        t: login.id_token_hint.clone(),
    };
    mint(hub, &login.principal, "sso", Some(seal), Some(&login.issuer)).await
}

async fn mint(
    hub: &Hub,
    principal: &Principal,
    method: &str,
    sso: Option<SsoSeal>,
    issuer: Option<&str>,
) -> Result<HeaderValue, HubError> {
    let exp = hub.clock.now().timestamp() + SESSION_HOURS * 3600;
    let payload =
        Sealed { cid: principal.credential_id.clone(), sid: random_token(hub), exp, csrf: random_token(hub), sso };
    let event = ma2h_core::audit::Event::new("login", principal.actor())
        .target(&principal.credential_id)
        .detail("method", method)
        .detail("session", short_sid(&payload.sid));
    let event = match issuer {
        Some(issuer) => event.detail("issuer", issuer),
        None => event,
    };
    ma2h_core::audit::record_now(hub, &principal.account, event).await?;
    Ok(set_cookie(hub, cookie_name(hub, false), &seal(hub, SESSION_CONTEXT, &payload), SESSION_HOURS * 3600))
}

/// The store counter that marks a session logged out (it expires with the session).
fn logged_out_key(sid: &str) -> String {
    format!("ui-logout/{sid}")
}

/// End `session` server-side: every copy of its cookie stops working.
pub async fn end(hub: &Hub, session: &Session) -> Result<(), HubError> {
    let expires = ma2h_protocol::time::from_millis(session.expires.saturating_mul(1000));
    // Issue 42: the logout is recorded in the write that ends the session.
    let event = ma2h_core::audit::Event::new("logout", session.who()).detail("session", short_sid(&session.sid));
    let key = logged_out_key(&session.sid);
    let put = hub.messages.incr_counter(&key, expires, hub.clock.now());
    ma2h_core::audit::within(hub, &session.principal.account, vec![event], put).await?;
    Ok(())
}

/// A session's name in the ledger: a digest of its id, never the id (which the cookie carries).
pub fn short_sid(sid: &str) -> String {
    ma2h_core::audit::short_digest(sid)
}

/// The `Set-Cookie` values that end a session (and any pending login form).
pub fn clear(hub: &Hub) -> [HeaderValue; 2] {
    [set_cookie(hub, cookie_name(hub, false), "", 0), set_cookie(hub, cookie_name(hub, true), "", 0)]
}

/// The `Set-Cookie` value that drops the login form's cookie once it has served.
pub fn clear_login(hub: &Hub) -> HeaderValue {
    set_cookie(hub, cookie_name(hub, true), "", 0)
}

/// A fresh login-form token and the cookie that carries it.
pub fn login_form(hub: &Hub) -> (String, HeaderValue) {
    let csrf = random_token(hub);
    let exp = hub.clock.now().timestamp() + LOGIN_FORM_MINUTES * 60;
    let payload = Sealed { cid: String::new(), sid: String::new(), exp, csrf: csrf.clone(), sso: None };
    let cookie = set_cookie(hub, cookie_name(hub, true), &seal(hub, LOGIN_CONTEXT, &payload), LOGIN_FORM_MINUTES * 60);
    (csrf, cookie)
}

/// `true` iff the login form's token matches the login cookie and was not used before (a token
/// is claimed by its first use, successful or not, so a captured form cannot be replayed).
pub async fn claim_login_form(hub: &Hub, headers: &HeaderMap, presented: Option<&str>) -> Result<bool, HubError> {
    let form = cookie(headers, cookie_name(hub, true)).and_then(|v| open(hub, LOGIN_CONTEXT, v));
    let Some(form) = form.filter(|s| csrf_eq(&s.csrf, presented)) else { return Ok(false) };
    let expires = ma2h_protocol::time::from_millis(form.exp.saturating_mul(1000));
    let uses = hub.messages.incr_counter(&format!("ui-login/{}", form.csrf), expires, hub.clock.now()).await?;
    Ok(uses == 1)
}

/// Reopen the session cookie and re-check its credential. `None` → log in again.
pub async fn current(hub: &Hub, headers: &HeaderMap) -> Result<Option<Session>, HubError> {
    let Some(sealed) = cookie(headers, cookie_name(hub, false)).and_then(|v| open(hub, SESSION_CONTEXT, v)) else {
        return Ok(None);
    };
    if sealed.sid.is_empty() {
        return Ok(None);
    }
    let principal = match &sealed.sso {
        Some(sso) => match sso_principal(hub, sso, &sealed.cid).await? {
            Some(p) => p,
            None => return Ok(None),
        },
        None => {
            let Some(record) = hub.credentials.credential_by_id(&sealed.cid).await? else { return Ok(None) };
            if !record.is_active(hub.clock.now()) || !matches!(record.principal, PrincipalId::Operator(_)) {
                return Ok(None);
            }
            Principal { account: record.account, id: record.principal, credential_id: record.id }
        }
    };
    if hub.messages.read_counter(&logged_out_key(&sealed.sid), hub.clock.now()).await? > 0 {
        return Ok(None);
    }
    let sso_hint = sealed.sso.map(|s| s.t);
    Ok(Some(Session { principal, csrf: sealed.csrf, sid: sealed.sid, expires: sealed.exp, sso_hint }))
}

/// An SSO session's operator, iff the account still has SSO and the mapping that made the
/// session still yields them (an admin's unlink or domain removal ends it at the next request —
/// or within `MA2H_CHANNELS_CACHE_MS` on another process, which caches account policies).
async fn sso_principal(hub: &Hub, sso: &SsoSeal, cid: &str) -> Result<Option<Principal>, HubError> {
    let (Some(account), Some(human)) = (AccountId::parse(&sso.a), HumanId::parse(&sso.h)) else { return Ok(None) };
    let Some(config) = ma2h_core::sso::flow::config(hub, &account).await? else { return Ok(None) };
    if !config.still_maps(&human, &sso.v) {
        return Ok(None);
    }
    Ok(Some(Principal { account, id: PrincipalId::Operator(human), credential_id: cid.to_owned() }))
}

/// The header live.js sends on its background page refreshes (not operator activity).
pub const LIVE_HEADER: &str = "x-ma2h-live";

/// Where to send someone without a session: `/login`, remembering an inbox page to return to.
pub fn to_login(path_and_query: &str) -> Response {
    if path_and_query.starts_with("/inbox") && path_and_query != "/inbox" {
        let next: String = url::form_urlencoded::byte_serialize(path_and_query.as_bytes()).collect();
        Redirect::to(&format!("/login?next={next}")).into_response()
    } else {
        Redirect::to("/login").into_response()
    }
}

/// Only local inbox pages are valid return targets (no open redirect).
pub fn safe_next(next: Option<&str>) -> &str {
    match next {
        Some(n)
            if n.starts_with("/inbox")
                && !n.contains("//")
                && !n.contains('\\')
                && n.chars().all(|c| c.is_ascii_graphic()) =>
        {
            n
        }
        _ => "/inbox",
    }
}

impl FromRequestParts<Hub> for Session {
    type Rejection = Response;

    async fn from_request_parts(parts: &mut Parts, hub: &Hub) -> Result<Self, Self::Rejection> {
        match current(hub, &parts.headers).await {
            Ok(Some(session)) => {
                // issue 40: a page the operator opens, or an action, is activity; a live tab's
                // background reads (`/inbox/live`, `/inbox/events`, live.js's page refresh) are not
                let background = parts.uri.path().starts_with("/inbox/live")
                    || parts.uri.path() == "/inbox/events"
                    || parts.headers.contains_key(LIVE_HEADER);
                if let (false, PrincipalId::Operator(human)) = (background, &session.principal.id) {
                    ma2h_core::decisions::presence::seen(hub, &session.principal.account, human).await;
                }
                Ok(session)
            }
            Ok(None) => {
                let target = parts.uri.path_and_query().map_or("/inbox", |p| p.as_str());
                let target = if parts.method == axum::http::Method::GET { target } else { "/inbox" };
                Err(to_login(target))
            }
            Err(e) => Err(crate::error::ApiError(e).into_response()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csrf_tokens_must_match_exactly() {
        assert!(csrf_eq("abc123", Some("abc123")));
        assert!(!csrf_eq("abc123", Some("abc124")));
        assert!(!csrf_eq("abc123", Some("abc12")));
        assert!(!csrf_eq("abc123", None));
        assert!(!csrf_eq("", Some("")));
    }

    #[test]
    fn only_local_inbox_pages_are_return_targets() {
        assert_eq!(safe_next(Some("/inbox/msg_1")), "/inbox/msg_1");
        assert_eq!(safe_next(Some("https://evil.example/inbox")), "/inbox");
        assert_eq!(safe_next(Some("/inbox//evil.example")), "/inbox");
        assert_eq!(safe_next(Some("/inbox\\@evil")), "/inbox");
        assert_eq!(safe_next(None), "/inbox");
    }
}

//! The single sign-on harness (issue 42): the tests' provider stand-in
//! (`ma2h_test_support::idp`) reached through the Hub's outbound port without a socket, an
//! account `acme` that signs in through it, and the browser's legs of a login and a logout.

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use http_body_util::BodyExt;
use ma2h_core::audit::export::export;
use ma2h_core::ports::{FetchReply, FetchRequest, PushOutcome, PushRequest, PushSender};
use ma2h_core::sso::manage::{self, SsoSpec};
use ma2h_protocol::ids::AccountId;
use ma2h_test_support::idp::{Alg, CLIENT_ID, CLIENT_SECRET, Idp};
use serde_json::Value;
use tower::ServiceExt;

use super::*;

pub const ISSUER: &str = "https://idp.test";

/// The Hub's outbound HTTP, answered by the stand-in's Router (only its host).
pub struct ToIdp(pub axum::Router);

#[async_trait::async_trait]
impl PushSender for ToIdp {
    async fn send(&self, _: &PushRequest) -> PushOutcome {
        PushOutcome::Refused { reason: "pushes are not part of these tests".into() }
    }

    async fn fetch(&self, request: &FetchRequest) -> Result<FetchReply, String> {
        let rest = request.url.strip_prefix(ISSUER).ok_or_else(|| format!("unreachable: {}", request.url))?;
        let method = if request.body.is_some() { Method::POST } else { Method::GET };
        let mut req = Request::builder().method(method).uri(rest);
        for (k, v) in &request.headers {
            req = req.header(k, v);
        }
        let req = req.body(Body::from(request.body.clone().unwrap_or_default())).unwrap();
        let resp = self.0.clone().oneshot(req).await.unwrap();
        let status = resp.status().as_u16();
        let content_type = resp.headers().get("content-type").map(|v| v.to_str().unwrap().to_owned());
        let body = resp.into_body().collect().await.unwrap().to_bytes().to_vec();
        Ok(FetchReply { status, content_type, body })
    }
}

pub fn acme() -> AccountId {
    AccountId::parse("acme").unwrap()
}

/// A test Hub whose account `acme` signs in through the stand-in (verified `@acme.com` emails).
pub async fn setup(alg: Alg) -> (TestHub, Idp) {
    setup_with(alg, settings()).await
}

pub async fn setup_with(alg: Alg, settings: ma2h_core::kernel::settings::Settings) -> (TestHub, Idp) {
    let t = hub_with(settings).await;
    let clock = t.clock.clone();
    let idp = Idp::new(ISSUER, alg, move || ma2h_core::ports::Clock::now(clock.as_ref()).timestamp());
    let t = t.with_outbound(Arc::new(ToIdp(idp.router())));
    let spec = SsoSpec {
        issuer: Some(ISSUER.into()),
        client_id: Some(CLIENT_ID.into()),
        client_secret: Some(CLIENT_SECRET.into()),
        email_domains: Some(vec!["acme.com".into()]),
        ..SsoSpec::default()
    };
    manage::set(&t.hub, "admin", &acme(), spec).await.unwrap();
    (t, idp)
}

/// The path and query of an absolute URL.
pub fn path_of(url: &str) -> String {
    let u = url::Url::parse(url).unwrap();
    format!("{}?{}", u.path(), u.query().unwrap_or(""))
}

pub struct Leg {
    /// The callback's path and query, as the provider sent the browser back.
    pub callback: String,
    /// The `ma2h_sso` cookie pair leg one set.
    pub cookie: String,
}

/// Leg one and the provider's part: the browser's way back to the Hub, signed in at the
/// provider as `hint` (an email or a subject).
pub async fn to_provider_and_back(t: &TestHub, idp: &Idp, hint: &str) -> Leg {
    let begin = t.page(Method::GET, "/login/sso?account=acme&next=/inbox/history", None, None).await;
    assert_eq!(begin.status, StatusCode::SEE_OTHER, "{}", begin.html);
    let authorize = begin.location().to_owned();
    assert!(authorize.starts_with("https://idp.test/authorize?"), "{authorize}");
    for must in ["code_challenge_method=S256", "code_challenge=", "nonce=", "state=", "scope=openid+email+profile"] {
        assert!(authorize.contains(must), "{must} in {authorize}");
    }
    assert!(authorize.contains("redirect_uri=https%3A%2F%2Fhub.test%2Flogin%2Fsso%2Fcallback"), "{authorize}");
    let set = begin.set_cookies().into_iter().find(|c| c.starts_with("ma2h_sso=")).expect("the sso cookie");
    assert!(set.contains("SameSite=Lax") && set.contains("HttpOnly"), "{set}");
    let hinted = format!("{}&login_hint={}", path_of(&authorize), ma2h_test_support::form_encode(hint));
    let resp = idp.router().oneshot(Request::get(hinted).body(Body::empty()).unwrap()).await.unwrap();
    assert_eq!(resp.status(), StatusCode::SEE_OTHER);
    let back = resp.headers()["location"].to_str().unwrap().to_owned();
    assert!(back.starts_with("https://hub.test/login/sso/callback?code="), "{back}");
    Leg { callback: path_of(&back), cookie: cookie_pair(&set) }
}

/// The session cookie pair a callback reply set, if any.
pub fn session_of(page: &Page) -> Option<String> {
    page.set_cookies()
        .into_iter()
        .find(|c| c.starts_with("ma2h_inbox=") && !c.starts_with("ma2h_inbox=;"))
        .map(|c| cookie_pair(&c))
}

/// A whole login as `hint`: the callback's reply.
pub async fn sso_login(t: &TestHub, idp: &Idp, hint: &str) -> Page {
    let leg = to_provider_and_back(t, idp, hint).await;
    t.page(Method::GET, &leg.callback, Some(&leg.cookie), None).await
}

pub async fn ledger(t: &TestHub) -> Vec<Value> {
    export(&t.hub, &acme(), None, None)
        .await
        .unwrap()
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v.get("kind").is_some())
        .collect()
}

pub fn refused(page: &Page, status: StatusCode) {
    assert_eq!(page.status, status, "{}", page.html);
    assert_eq!(session_of(page), None, "no session for a refused login");
    assert!(page.html.contains("login-error"), "the login page says why: {}", page.html);
}

/// Log `cookie`'s session out; the reply.
pub async fn logout(t: &TestHub, cookie: &str) -> Page {
    let inbox = t.page(Method::GET, "/inbox", Some(cookie), None).await;
    t.page(Method::POST, "/logout", Some(cookie), Some(&[("csrf", &inbox.csrf())])).await
}

/// The provider logout URL a logout page moves on to.
pub fn provider_logout_url(page: &Page) -> url::Url {
    assert_eq!(page.status, StatusCode::OK, "{}", page.html);
    let (_, rest) = page.html.split_once(r#"id="sso-logout" href=""#).expect("a link to the provider's logout");
    url::Url::parse(&rest[..rest.find('"').unwrap()].replace("&amp;", "&")).unwrap()
}

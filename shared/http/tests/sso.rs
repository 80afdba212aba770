//! Issue 42 on every backend (`MA2H_TEST_STORE`): single sign-on to the inbox through the
//! account's OpenID Connect provider — here the tests' local stand-in
//! (`ma2h_test_support::idp`), reached through the Hub's outbound port without a socket.
//!
//! A good login lands in the inbox as the mapped operator, with a `login` ledger entry; a token
//! with the wrong audience, issuer or nonce, expired, issued in the future or signed by another
//! key, an unverified email, an unmapped subject, a replayed or foreign state and a callback
//! without its cookie are each refused with nothing logged in. Key login can be turned off per
//! account; unlinking or removing SSO ends its sessions; logout ends one server-side (and, when
//! the account asks, at the provider: RP-Initiated Logout); required groups admit only members.

mod common;

use std::sync::Arc;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use common::*;
use http_body_util::BodyExt;
use ma2h_core::audit::export::export;
use ma2h_core::ports::{FetchReply, FetchRequest, PushOutcome, PushRequest, PushSender};
use ma2h_core::sso::manage::{self, SsoSpec};
use ma2h_protocol::ids::AccountId;
use ma2h_test_support::idp::{Alg, CLIENT_ID, CLIENT_SECRET, Idp};
use serde_json::{Value, json};
use tower::ServiceExt;

const ISSUER: &str = "https://idp.test";

/// The Hub's outbound HTTP, answered by the stand-in's Router (only its host).
struct ToIdp(axum::Router);

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

fn acme() -> AccountId {
    AccountId::parse("acme").unwrap()
}

/// A test Hub whose account `acme` signs in through the stand-in (verified `@acme.com` emails).
async fn setup(alg: Alg) -> (TestHub, Idp) {
    let t = hub().await;
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
fn path_of(url: &str) -> String {
    let u = url::Url::parse(url).unwrap();
    format!("{}?{}", u.path(), u.query().unwrap_or(""))
}

struct Leg {
    /// The callback's path and query, as the provider sent the browser back.
    callback: String,
    /// The `ma2h_sso` cookie pair leg one set.
    cookie: String,
}

/// Leg one and the provider's part: the browser's way back to the Hub, signed in at the
/// provider as `hint` (an email or a subject).
async fn to_provider_and_back(t: &TestHub, idp: &Idp, hint: &str) -> Leg {
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
fn session_of(page: &Page) -> Option<String> {
    page.set_cookies()
        .into_iter()
        .find(|c| c.starts_with("ma2h_inbox=") && !c.starts_with("ma2h_inbox=;"))
        .map(|c| cookie_pair(&c))
}

/// A whole login as `hint`: the callback's reply.
async fn sso_login(t: &TestHub, idp: &Idp, hint: &str) -> Page {
    let leg = to_provider_and_back(t, idp, hint).await;
    t.page(Method::GET, &leg.callback, Some(&leg.cookie), None).await
}

async fn ledger(t: &TestHub) -> Vec<Value> {
    export(&t.hub, &acme(), None, None)
        .await
        .unwrap()
        .iter()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .filter(|v| v.get("kind").is_some())
        .collect()
}

fn refused(page: &Page, status: StatusCode) {
    assert_eq!(page.status, status, "{}", page.html);
    assert_eq!(session_of(page), None, "no session for a refused login");
    assert!(page.html.contains("login-error"), "the login page says why: {}", page.html);
}

#[tokio::test]
async fn a_verified_email_in_the_domain_signs_in_as_its_operator_with_a_ledger_entry() {
    let (t, idp) = setup(Alg::EdDsa).await;
    let done = sso_login(&t, &idp, "alice@acme.com").await;
    assert_eq!(done.status, StatusCode::OK, "{}", done.html);
    assert!(done.html.contains(r#"content="0;url=/inbox/history""#), "moves on to next: {}", done.html);
    let cookie = session_of(&done).expect("a session");
    let inbox = t.page(Method::GET, "/inbox", Some(&cookie), None).await;
    assert_eq!(inbox.status, StatusCode::OK);
    assert!(inbox.html.contains("human:alice"), "signed in as alice");
    let log = ledger(&t).await;
    let login = log.iter().find(|e| e["kind"] == "login").expect("a login entry");
    assert_eq!(login["principal"], "human:alice");
    assert_eq!(login["detail"]["method"], "sso");
    assert_eq!(login["detail"]["issuer"], ISSUER);
    assert!(login["target"].as_str().unwrap().starts_with("sso:"));
    assert!(!login.to_string().contains("alice@acme.com"), "no email in the ledger: {login}");
    assert!(log.iter().any(|e| e["kind"] == "policy.changed" && e["target"] == "sso"), "the setup is recorded");
    assert_eq!(idp.token_calls(), ["ok"], "PKCE, redirect URI and client credentials were right");
}

#[tokio::test]
async fn from_the_login_form_the_provider_is_reached_by_a_page_not_a_redirect() {
    // the login page's CSP says `form-action 'self'`, which also holds the form's redirects
    let (t, _idp) = setup(Alg::EdDsa).await;
    let login = t.page(Method::GET, "/login", None, None).await;
    assert!(login.html.contains(r#"action="/login/sso""#) && login.html.contains(r#"name="form" value="1""#));
    let csp = login.headers["content-security-policy"].to_str().unwrap();
    assert!(csp.contains("form-action 'self'"), "{csp}");
    let page = t.page(Method::GET, "/login/sso?account=acme&form=1", None, None).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.html.contains(r#"content="0;url=https://idp.test/authorize?"#), "{}", page.html);
    assert!(page.set_cookies().iter().any(|c| c.starts_with("ma2h_sso=")));
}

#[tokio::test]
async fn an_es256_provider_works_too() {
    let (t, idp) = setup(Alg::Es256).await;
    let done = sso_login(&t, &idp, "bob@acme.com").await;
    assert_eq!(done.status, StatusCode::OK, "{}", done.html);
    assert!(session_of(&done).is_some());
}

/// How a case bends the provider's next ID token.
type Shape = Box<dyn Fn(&Idp)>;

#[tokio::test]
async fn tokens_with_a_wrong_claim_or_key_are_refused() {
    let (t, idp) = setup(Alg::EdDsa).await;
    let cases: Vec<(&str, Shape)> = vec![
        ("another audience", Box::new(|i: &Idp| i.reshape_next(|c| c["aud"] = json!("someone-else")))),
        ("an extra audience", Box::new(|i: &Idp| i.reshape_next(|c| c["aud"] = json!([CLIENT_ID, "someone-else"])))),
        ("another issuer", Box::new(|i: &Idp| i.reshape_next(|c| c["iss"] = json!("https://evil.test")))),
        ("another nonce", Box::new(|i: &Idp| i.reshape_next(|c| c["nonce"] = json!("not-this-login")))),
        ("no nonce", Box::new(|i: &Idp| i.reshape_next(|c| _ = c.as_object_mut().unwrap().remove("nonce")))),
        ("expired", Box::new(|i: &Idp| i.reshape_next(|c| c["exp"] = json!(c["iat"].as_i64().unwrap() - 10)))),
        (
            "issued in the future",
            Box::new(|i: &Idp| i.reshape_next(|c| c["iat"] = json!(c["iat"].as_i64().unwrap() + 600))),
        ),
        ("signed by another key", Box::new(|i: &Idp| i.sign_next_with_other_key())),
        ("alg none", Box::new(|i: &Idp| i.reshape_next(|c| c["_header"]["alg"] = json!("none")))),
        ("an unverified email", Box::new(|i: &Idp| i.reshape_next(|c| c["email_verified"] = json!(false)))),
    ];
    for (name, shape) in cases {
        shape(&idp);
        let page = sso_login(&t, &idp, "alice@acme.com").await;
        let status = if name == "an unverified email" { StatusCode::FORBIDDEN } else { StatusCode::UNAUTHORIZED };
        assert_eq!(page.status, status, "{name}: {}", page.html);
        refused(&page, status);
        assert_eq!(
            idp.token_calls().last().map(String::as_str),
            Some("ok"),
            "{name}: refused by the Hub, not the provider"
        );
    }
    assert!(!ledger(&t).await.iter().any(|e| e["kind"] == "login"), "nobody logged in");
    // and the same provider still signs a good token in
    assert!(session_of(&sso_login(&t, &idp, "alice@acme.com").await).is_some());
}

#[tokio::test]
async fn a_rotated_provider_key_is_fetched_once_and_accepted() {
    let (t, idp) = setup(Alg::EdDsa).await;
    assert!(session_of(&sso_login(&t, &idp, "alice@acme.com").await).is_some(), "k1, now cached");
    idp.rotate();
    let after = sso_login(&t, &idp, "alice@acme.com").await;
    assert!(session_of(&after).is_some(), "k2 is unknown to the cached set: fetched again: {}", after.html);
    // and the old key no longer signs in
    idp.sign_next_with_other_key();
    refused(&sso_login(&t, &idp, "alice@acme.com").await, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn a_subject_signs_in_only_once_linked_and_unlinking_ends_its_session() {
    let (t, idp) = setup(Alg::EdDsa).await;
    let page = sso_login(&t, &idp, "00u-root").await;
    refused(&page, StatusCode::FORBIDDEN);
    assert!(page.html.contains("not an operator of this account"));
    assert!(page.html.contains("--subject 00u-root"), "the person sees the subject to hand to an admin");
    let log = ledger(&t).await;
    let no = log.iter().find(|e| e["kind"] == "login.refused").expect("the refusal is recorded");
    assert!(!no.to_string().contains("00u-root"), "the subject only as a digest: {no}");

    manage::link(&t.hub, "admin", &acme(), "00u-root", Some("human:root")).await.unwrap();
    let done = sso_login(&t, &idp, "00u-root").await;
    let cookie = session_of(&done).expect("a session once linked");
    assert!(t.page(Method::GET, "/inbox", Some(&cookie), None).await.html.contains("human:root"));

    manage::link(&t.hub, "admin", &acme(), "00u-root", None).await.unwrap();
    let after = t.page(Method::GET, "/inbox", Some(&cookie), None).await;
    assert_eq!(after.status, StatusCode::SEE_OTHER, "the unlinked session is over");
    assert!(after.location().starts_with("/login"));
}

#[tokio::test]
async fn removing_sso_or_the_domain_ends_email_sessions() {
    let (t, idp) = setup(Alg::EdDsa).await;
    let cookie = session_of(&sso_login(&t, &idp, "alice@acme.com").await).unwrap();
    let spec = SsoSpec { email_domains: Some(vec!["other.com".into()]), ..SsoSpec::default() };
    manage::set(&t.hub, "admin", &acme(), spec).await.unwrap();
    assert_eq!(t.page(Method::GET, "/inbox", Some(&cookie), None).await.status, StatusCode::SEE_OTHER);

    let spec = SsoSpec { email_domains: Some(vec!["acme.com".into()]), ..SsoSpec::default() };
    manage::set(&t.hub, "admin", &acme(), spec).await.unwrap();
    let cookie = session_of(&sso_login(&t, &idp, "alice@acme.com").await).unwrap();
    manage::remove(&t.hub, "admin", &acme()).await.unwrap();
    assert_eq!(t.page(Method::GET, "/inbox", Some(&cookie), None).await.status, StatusCode::SEE_OTHER);
    let page = t.page(Method::GET, "/login/sso?account=acme", None, None).await;
    assert_eq!(page.status, StatusCode::NOT_FOUND);
    assert!(page.html.contains("does not use single sign-on"));
}

#[tokio::test]
async fn required_groups_admit_only_members_and_a_session_ends_when_its_group_is_dropped() {
    let (t, idp) = setup(Alg::EdDsa).await;
    let spec = SsoSpec { required_groups: Some(vec!["ma2h-reviewers".into(), "sre".into()]), ..SsoSpec::default() };
    let shown = manage::set(&t.hub, "admin", &acme(), spec).await.unwrap();
    assert_eq!(
        (&shown["sso"]["required_groups"], &shown["sso"]["groups_claim"]),
        (&json!(["ma2h-reviewers", "sre"]), &json!("groups"))
    );

    // in no required group (or none listed): refused, and the ledger says why
    idp.reshape_next(|c| c["groups"] = json!(["everyone"]));
    let page = sso_login(&t, &idp, "alice@acme.com").await;
    refused(&page, StatusCode::FORBIDDEN);
    assert!(page.html.contains("not in a group this account requires"), "{}", page.html);
    refused(&sso_login(&t, &idp, "alice@acme.com").await, StatusCode::FORBIDDEN);
    let log = ledger(&t).await;
    let reasons: Vec<&Value> =
        log.iter().filter(|e| e["kind"] == "login.refused").map(|e| &e["detail"]["reason"]).collect();
    assert_eq!(reasons, [&json!("not_in_group"), &json!("not_in_group")]);

    // a member signs in
    idp.reshape_next(|c| c["groups"] = json!(["everyone", "sre"]));
    let cookie = session_of(&sso_login(&t, &idp, "alice@acme.com").await).expect("a member signs in");
    assert!(t.page(Method::GET, "/inbox", Some(&cookie), None).await.html.contains("human:alice"));

    // another claim (Entra ID app roles): `groups` no longer counts, `roles` does (one string too)
    let roles = SsoSpec { groups_claim: Some("roles".into()), ..SsoSpec::default() };
    manage::set(&t.hub, "admin", &acme(), roles).await.unwrap();
    idp.reshape_next(|c| c["groups"] = json!(["sre"]));
    refused(&sso_login(&t, &idp, "bob@acme.com").await, StatusCode::FORBIDDEN);
    idp.reshape_next(|c| c["roles"] = json!("ma2h-reviewers"));
    assert!(session_of(&sso_login(&t, &idp, "bob@acme.com").await).is_some(), "a role as one string");

    // alice's session holds while `sre` is required, and ends when it is not
    assert_eq!(t.page(Method::GET, "/inbox", Some(&cookie), None).await.status, StatusCode::OK);
    let fewer = SsoSpec { required_groups: Some(vec!["ma2h-reviewers".into()]), ..SsoSpec::default() };
    manage::set(&t.hub, "admin", &acme(), fewer).await.unwrap();
    assert_eq!(t.page(Method::GET, "/inbox", Some(&cookie), None).await.status, StatusCode::SEE_OTHER);

    // a subject link is not gated by groups
    manage::link(&t.hub, "admin", &acme(), "00u-root", Some("human:root")).await.unwrap();
    assert!(session_of(&sso_login(&t, &idp, "00u-root").await).is_some(), "links are admin decisions");
}

#[tokio::test]
async fn a_replayed_foreign_or_cookieless_callback_is_refused() {
    let (t, idp) = setup(Alg::EdDsa).await;
    let leg = to_provider_and_back(&t, &idp, "alice@acme.com").await;
    // without the cookie leg one set
    refused(&t.page(Method::GET, &leg.callback, None, None).await, StatusCode::BAD_REQUEST);
    // with another login's cookie (its state differs)
    let other = to_provider_and_back(&t, &idp, "alice@acme.com").await;
    refused(&t.page(Method::GET, &leg.callback, Some(&other.cookie), None).await, StatusCode::BAD_REQUEST);
    // the real pair works once
    assert!(session_of(&t.page(Method::GET, &leg.callback, Some(&leg.cookie), None).await).is_some());
    refused(&t.page(Method::GET, &leg.callback, Some(&leg.cookie), None).await, StatusCode::BAD_REQUEST);
    // the provider's own error
    let error = leg.callback.replace("code=", "error=access_denied&x=");
    refused(&t.page(Method::GET, &error, Some(&other.cookie), None).await, StatusCode::UNAUTHORIZED);
    let logins = ledger(&t).await.iter().filter(|e| e["kind"] == "login").count();
    assert_eq!(logins, 1);
}

#[tokio::test]
async fn key_login_can_be_turned_off_per_account_and_back_on() {
    let (t, idp) = setup(Alg::EdDsa).await;
    let off = SsoSpec { key_login: Some(false), ..SsoSpec::default() };
    manage::set(&t.hub, "admin", &acme(), off).await.unwrap();
    let form = t.page(Method::GET, "/login", None, None).await;
    let login_cookie = cookie_pair(&form.set_cookies()[0]);
    let key = t.operator.clone();
    let r =
        t.page(Method::POST, "/login", Some(&login_cookie), Some(&[("csrf", &form.csrf()), ("api_key", &key)])).await;
    refused(&r, StatusCode::FORBIDDEN);
    assert!(r.html.contains("single sign-on"));
    // the API keeps the key
    let api = t.call(Method::GET, "/v1/operator/messages", Some(&t.operator), None).await;
    assert_eq!(api.status, StatusCode::OK);
    // SSO works
    assert!(session_of(&sso_login(&t, &idp, "alice@acme.com").await).is_some());
    // break-glass
    manage::set(&t.hub, "admin", &acme(), SsoSpec { key_login: Some(true), ..SsoSpec::default() }).await.unwrap();
    t.ui_login(&t.operator).await;
    let shown = manage::show(&t.hub, &acme()).await.unwrap();
    assert_eq!(shown["sso"]["key_login"], true);
    assert_eq!(shown["sso"]["client_secret"], "(set)");
    assert!(!shown.to_string().contains(CLIENT_SECRET));
}

#[tokio::test]
async fn logout_ends_an_sso_session_server_side() {
    let (t, idp) = setup(Alg::EdDsa).await;
    let cookie = session_of(&sso_login(&t, &idp, "alice@acme.com").await).unwrap();
    let inbox = t.page(Method::GET, "/inbox", Some(&cookie), None).await;
    let out = t.page(Method::POST, "/logout", Some(&cookie), Some(&[("csrf", &inbox.csrf())])).await;
    assert_eq!(out.status, StatusCode::SEE_OTHER);
    // a copy of the cookie taken before logout is dead too
    assert_eq!(t.page(Method::GET, "/inbox", Some(&cookie), None).await.status, StatusCode::SEE_OTHER);
    assert!(ledger(&t).await.iter().any(|e| e["kind"] == "logout" && e["principal"] == "human:alice"));
}

/// Log `cookie`'s session out; the reply.
async fn logout(t: &TestHub, cookie: &str) -> Page {
    let inbox = t.page(Method::GET, "/inbox", Some(cookie), None).await;
    t.page(Method::POST, "/logout", Some(cookie), Some(&[("csrf", &inbox.csrf())])).await
}

/// The provider logout URL a logout page moves on to.
fn provider_logout_url(page: &Page) -> url::Url {
    assert_eq!(page.status, StatusCode::OK, "{}", page.html);
    let (_, rest) = page.html.split_once(r#"id="sso-logout" href=""#).expect("a link to the provider's logout");
    url::Url::parse(&rest[..rest.find('"').unwrap()].replace("&amp;", "&")).unwrap()
}

#[tokio::test]
async fn with_provider_logout_on_an_sso_logout_ends_the_providers_session_too() {
    let (t, idp) = setup(Alg::EdDsa).await;
    let on = SsoSpec { provider_logout: Some(true), ..SsoSpec::default() };
    assert_eq!(manage::set(&t.hub, "admin", &acme(), on).await.unwrap()["sso"]["provider_logout"], true);
    // a key session has no provider to leave
    let key = t.ui_login(&t.operator).await;
    assert_eq!(logout(&t, &key).await.location(), "/login");

    let cookie = session_of(&sso_login(&t, &idp, "alice@acme.com").await).unwrap();
    let out = logout(&t, &cookie).await;
    let url = provider_logout_url(&out);
    assert!(url.as_str().starts_with("https://idp.test/logout?"), "{url}");
    let q: std::collections::HashMap<_, _> = url.query_pairs().into_owned().collect();
    assert_eq!(q["client_id"], CLIENT_ID);
    assert_eq!(q["post_logout_redirect_uri"], "https://hub.test/login");
    assert_eq!(Some(&q["id_token_hint"]), idp.issued().last(), "the hint is the token this session was made with");
    // the Hub's own session ended first, whatever the provider does
    assert_eq!(t.page(Method::GET, "/inbox", Some(&cookie), None).await.status, StatusCode::SEE_OTHER);
    assert!(out.set_cookies().iter().any(|c| c.starts_with("ma2h_inbox=;")), "the cookie is cleared");
    // the provider ends its session and sends the browser back to the Hub's login page
    let req = Request::get(path_of(url.as_str())).body(Body::empty()).unwrap();
    let back = idp.router().oneshot(req).await.unwrap();
    assert_eq!(back.headers()["location"], "https://hub.test/login");
    assert_eq!(idp.logout_calls().len(), 1);

    // an ID token too long to keep in the cookie: the logout names the client only
    idp.reshape_next(|c| c["padding"] = json!("x".repeat(2000)));
    let login = sso_login(&t, &idp, "alice@acme.com").await;
    let set = login.set_cookies().into_iter().find(|c| c.starts_with("ma2h_inbox=")).unwrap();
    assert!(set.len() < 4000, "the session cookie stays within what browsers keep ({} bytes)", set.len());
    let url = provider_logout_url(&logout(&t, &cookie_pair(&set)).await);
    assert!(url.query_pairs().all(|(k, _)| k != "id_token_hint"), "{url}");
    assert!(url.query_pairs().any(|(k, v)| k == "client_id" && v == CLIENT_ID), "{url}");

    // off (the default): the Hub's logout only
    let off = SsoSpec { provider_logout: Some(false), ..SsoSpec::default() };
    manage::set(&t.hub, "admin", &acme(), off).await.unwrap();
    let cookie = session_of(&sso_login(&t, &idp, "alice@acme.com").await).unwrap();
    assert_eq!(logout(&t, &cookie).await.location(), "/login");
    assert_eq!(idp.logout_calls().len(), 1);
}

#[tokio::test]
async fn bad_configuration_is_a_clear_4xx() {
    let (t, _idp) = setup(Alg::EdDsa).await;
    let bad = |spec: SsoSpec| {
        let hub = t.hub.clone();
        async move { manage::set(&hub, "admin", &acme(), spec).await.unwrap_err().to_string() }
    };
    assert!(bad(SsoSpec { issuer: Some("ftp://idp".into()), ..SsoSpec::default() }).await.contains("issuer"));
    assert!(
        bad(SsoSpec { issuer: Some("https://idp.test/?x=1".into()), ..SsoSpec::default() }).await.contains("issuer")
    );
    assert!(
        bad(SsoSpec { email_domains: Some(vec!["not a domain".into()]), ..SsoSpec::default() })
            .await
            .contains("domain")
    );
    let group = bad(SsoSpec { required_groups: Some(vec!["a\u{7}b".into()]), ..SsoSpec::default() }).await;
    assert!(group.contains("required_groups"), "{group}");
    let claim = bad(SsoSpec { groups_claim: Some("my groups".into()), ..SsoSpec::default() }).await;
    assert!(claim.contains("groups_claim"), "{claim}");
    let public = bad(SsoSpec { email_domains: Some(vec!["GMail.com".into()]), ..SsoSpec::default() }).await;
    assert!(public.contains("public mail service"), "{public}");
    let fresh = AccountId::parse("globex").unwrap();
    let e = manage::set(&t.hub, "admin", &fresh, SsoSpec { issuer: Some(ISSUER.into()), ..SsoSpec::default() }).await;
    assert!(e.unwrap_err().to_string().contains("client_id"));
    let e = manage::link(&t.hub, "admin", &fresh, "s", Some("bob")).await;
    assert!(e.unwrap_err().to_string().contains("no SSO"));
    let page = t.page(Method::GET, "/login/sso", None, None).await;
    assert_eq!(page.status, StatusCode::BAD_REQUEST);
    let page = t.page(Method::GET, "/login/sso?account=globex", None, None).await;
    assert_eq!(page.status, StatusCode::NOT_FOUND);
}

#[tokio::test]
async fn an_sso_operator_without_a_key_can_confirm_an_answer_with_a_passkey() {
    use ma2h_core::passkeys::{self, ceremony};
    use ma2h_test_support::authenticator::Authenticator;
    let (t, idp) = setup(Alg::EdDsa).await;
    // carol has no operator key: the SSO session is her only standing
    let cookie = session_of(&sso_login(&t, &idp, "carol@acme.com").await).expect("a session");
    assert!(t.page(Method::GET, "/inbox", Some(&cookie), None).await.html.contains("human:carol"));
    let carol = |credential_id: &str| ma2h_core::kernel::auth::Principal {
        account: acme(),
        id: ma2h_core::kernel::credentials::PrincipalId::Operator(ma2h_protocol::ids::HumanId::parse("carol").unwrap()),
        credential_id: credential_id.into(),
    };
    let sso = carol("sso:0123456789abcdef");
    let mut device = Authenticator::default();
    let started = ceremony::begin_registration(&t.hub, &sso, &passkeys::mine(&t.hub, &sso).await.unwrap()).unwrap();
    let reply = device.create(&serde_json::from_str(&started.options).unwrap(), "https://hub.test").to_string();
    ceremony::finish_registration(&t.hub, &sso, &started.state, reply.as_bytes(), "laptop").await.unwrap();

    let step_up = |who: ma2h_core::kernel::auth::Principal, device: &mut Authenticator| {
        let started = ceremony::begin_assertion(&t.hub, Some((&who, "msg_1"))).unwrap();
        let reply = device.get(0, &serde_json::from_str(&started.options).unwrap(), "https://hub.test").to_string();
        let hub = t.hub.clone();
        async move { ceremony::finish_step_up(&hub, &who, "msg_1", &started.state, reply.as_bytes()).await }
    };
    assert!(step_up(sso.clone(), &mut device).await.is_ok(), "the SSO session vouches for carol");
    let refused = step_up(carol("cred_gone"), &mut device).await;
    assert!(refused.is_err(), "outside an SSO session a keyless operator is no operator");
    // logging in with the passkey alone still needs a key (a passkey session stands on one)
    let started = ceremony::begin_assertion(&t.hub, None).unwrap();
    let reply = device.get(0, &serde_json::from_str(&started.options).unwrap(), "https://hub.test").to_string();
    assert!(ceremony::finish_login(&t.hub, &started.state, reply.as_bytes()).await.is_err());
}

/// A provider that cannot be reached; counts the attempts.
struct Down(std::sync::atomic::AtomicUsize);

#[async_trait::async_trait]
impl PushSender for Down {
    async fn send(&self, _: &PushRequest) -> PushOutcome {
        PushOutcome::Retry { reason: "down".into() }
    }

    async fn fetch(&self, _: &FetchRequest) -> Result<FetchReply, String> {
        self.0.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
        Err("connection refused".into())
    }
}

#[tokio::test]
async fn a_provider_that_is_down_is_a_clear_page_and_is_not_asked_again_at_once() {
    let down = Arc::new(Down(Default::default()));
    let t = hub().await.with_outbound(down.clone());
    let spec = SsoSpec {
        issuer: Some("https://down.test".into()),
        client_id: Some(CLIENT_ID.into()),
        client_secret: Some(CLIENT_SECRET.into()),
        ..SsoSpec::default()
    };
    manage::set(&t.hub, "admin", &acme(), spec).await.unwrap();
    for _ in 0..3 {
        let page = t.page(Method::GET, "/login/sso?account=acme", None, None).await;
        assert_eq!(page.status, StatusCode::BAD_GATEWAY, "{}", page.html);
        assert!(page.html.contains("did not complete"));
    }
    assert_eq!(down.0.load(std::sync::atomic::Ordering::SeqCst), 1, "one attempt, then a pause");
}

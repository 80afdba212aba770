//! Issue 42 on every backend (`MA2H_TEST_STORE`): single sign-on to the inbox through the
//! account's OpenID Connect provider — here the tests' local stand-in
//! (`ma2h_test_support::idp`), reached through the Hub's outbound port without a socket.
//!
//! A good login lands in the inbox as the mapped operator, with a `login` ledger entry; a token
//! with the wrong audience, issuer or nonce, expired, issued in the future or signed by another
//! key, an unverified email, an unmapped subject, a replayed or foreign state and a callback
//! without its cookie are each refused with nothing logged in; unlinking ends its sessions;
//! logout ends one server-side. The account's settings (key login, groups, provider logout, the
//! Hub's own account): `sso_settings.rs`. The harness: `common/sso.rs`.

mod common;

use std::sync::Arc;

use axum::http::{Method, StatusCode};
use common::sso::*;
use common::*;
use ma2h_core::ports::{FetchReply, FetchRequest, PushOutcome, PushRequest, PushSender};
use ma2h_core::sso::manage::{self, SsoSpec};
use ma2h_test_support::idp::{Alg, CLIENT_ID, CLIENT_SECRET, Idp};
use serde_json::json;

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

//! Issue 42 on every backend (`MA2H_TEST_STORE`): an account's single sign-on settings as
//! logins and sessions see them — key login off and back on, required groups, logging out of the
//! provider too, the Hub's own SSO account, removing SSO or its domain, and bad settings refused
//! with a clear 4xx. The harness: `common/sso.rs`.

mod common;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use common::sso::*;
use common::*;
use ma2h_core::sso::manage::{self, SsoSpec};
use ma2h_protocol::ids::AccountId;
use ma2h_test_support::idp::{Alg, CLIENT_ID, CLIENT_SECRET};
use serde_json::{Value, json};
use tower::ServiceExt;

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
async fn a_hub_with_its_own_sso_account_asks_for_none_and_a_link_may_still_name_one() {
    let own = ma2h_core::kernel::settings::Settings { sso_account: AccountId::parse("acme"), ..settings() };
    let (t, _idp) = setup_with(Alg::EdDsa, own).await;
    let login = t.page(Method::GET, "/login", None, None).await;
    assert!(!login.html.contains(r#"id="sso_account""#), "no account field: {}", login.html);
    assert!(login.html.contains(r#"<input type="hidden" name="account" value="acme">"#), "{}", login.html);
    // the button's request names no other account: the Hub's own
    let begin = t.page(Method::GET, "/login/sso?next=/inbox/history", None, None).await;
    assert_eq!(begin.status, StatusCode::SEE_OTHER, "{}", begin.html);
    assert!(begin.location().starts_with("https://idp.test/authorize?"), "{}", begin.location());
    // a link naming an account shows the field, filled in
    let named = t.page(Method::GET, "/login?account=globex", None, None).await;
    assert!(named.html.contains(r#"id="sso_account""#) && named.html.contains(r#"value="globex""#), "{}", named.html);
    // without the setting, no account is still a clear 400 (bad_configuration_is_a_clear_4xx)
    let (plain, _) = setup(Alg::EdDsa).await;
    assert!(plain.page(Method::GET, "/login", None, None).await.html.contains(r#"id="sso_account""#));
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

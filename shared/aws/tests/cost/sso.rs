//! Single sign-on on DynamoDB (issue 42, docs/COST.md "Single sign-on"): what an SSO login and an
//! SSO session's requests cost. The provider's discovery, keys and token endpoint are HTTP calls
//! (discovery and keys cached an hour per issuer, per container); the store sees the account's
//! settings read (cached for `MA2H_CHANNELS_CACHE_MS`), the state's single-use counter, and per
//! request the logout counter — an SSO session has no credential to read, its mapping is in the
//! account settings already cached.

use axum::http::StatusCode;
use ma2h_test_support::idp::Alg;
use tower::ServiceExt;

use crate::env::*;
use crate::metering::Tally;
use crate::support::{raw_event, set_cookie, sso_provider};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_of_an_sso_login_and_of_its_session() {
    with_env("sso", false, |e| async move {
        let (idp, issuer) = sso_provider(&e.dep.hub, e.clock.clone(), Alg::EdDsa).await;
        // logging out also ends the provider's session (the last phase)
        let on = ma2h_core::sso::manage::SsoSpec { provider_logout: Some(true), ..Default::default() };
        let acme = ma2h_protocol::ids::AccountId::parse("acme").unwrap();
        ma2h_core::sso::manage::set(&e.dep.hub, "admin", &acme, on).await.unwrap();
        let app = ma2h_aws::http_app(&e.dep);
        e.phase().await;
        let mut rows: Vec<(String, Tally)> = Vec::new();
        let mut phase = |name: &str, t: Tally, expected: &[(&str, u64)]| {
            crate::cost_eq!(t.requests, expect(expected), "{name}");
            rows.push((name.to_owned(), t));
        };

        let begin = app.clone().oneshot(raw_event("GET", "/login/sso?account=acme", &[], "")).await.unwrap();
        assert_eq!(begin.status(), StatusCode::SEE_OTHER);
        phase(
            "leg one: the account's settings (then cached), discovery over HTTP",
            e.phase().await,
            &[("dynamodb:GetItem", 1)],
        );

        let sso_cookie = set_cookie(&begin, "ma2h_sso").unwrap();
        let authorize = begin.headers()["location"].to_str().unwrap().to_owned();
        let path = authorize.strip_prefix(&issuer).unwrap();
        let req =
            axum::http::Request::get(format!("{path}&login_hint=alice%40acme.com")).body(axum::body::Body::empty());
        let at_idp = idp.router().oneshot(req.unwrap()).await.unwrap();
        let back = at_idp.headers()["location"].to_str().unwrap().to_owned();
        let callback = back.strip_prefix("https://api.test").unwrap().to_owned();
        let done = app.clone().oneshot(raw_event("GET", &callback, &[("cookie", &sso_cookie)], "")).await.unwrap();
        assert_eq!(done.status(), StatusCode::OK);
        phase(
            "leg two: claim the state once (the token exchange is HTTP; the login entry is the ledger's line)",
            e.phase().await,
            &[("dynamodb:UpdateItem", 1), ("dynamodb:PutItem", 1)],
        );

        let session = set_cookie(&done, "ma2h_inbox").unwrap();
        let check = app.clone().oneshot(raw_event("GET", "/login", &[("cookie", &session)], "")).await.unwrap();
        assert_eq!(check.status(), StatusCode::SEE_OTHER, "a live session goes on to the inbox");
        phase(
            "an SSO session's check on each request: the logout counter (the mapping is in the cached settings)",
            e.phase().await,
            &[("dynamodb:GetItem", 1)],
        );

        // logout with provider logout on: the Hub's own logout, then the provider's URL from the
        // cached discovery document (no request to the provider, none more to the store)
        let inbox = app.clone().oneshot(raw_event("GET", "/inbox", &[("cookie", &session)], "")).await.unwrap();
        let html = String::from_utf8_lossy(&http_body_util::BodyExt::collect(inbox.into_body()).await.unwrap().to_bytes())
            .into_owned();
        let (_, rest) = html.split_once(r#"name="csrf" value=""#).unwrap();
        let csrf = rest[..rest.find('"').unwrap()].to_owned();
        e.phase().await;
        let form = [("content-type", "application/x-www-form-urlencoded"), ("cookie", session.as_str())];
        let out = app.clone().oneshot(raw_event("POST", "/logout", &form, &format!("csrf={csrf}"))).await.unwrap();
        assert_eq!(out.status(), StatusCode::OK, "a page moving on to the provider's logout");
        phase(
            "logout, with provider logout: the session's check, its logout counter started (the provider's URL from cache)",
            e.phase().await,
            &[("dynamodb:GetItem", 1), ("dynamodb:UpdateItem", 1), ("dynamodb:PutItem", 1)],
        );
        print_table("Single sign-on (counted on the wire, asserted)", &rows);
    })
    .await;
}

//! Single sign-on on DynamoDB (issue 42, docs/COST.md "Single sign-on"): what an SSO login and an
//! SSO session's requests cost. The provider's discovery, keys and token endpoint are HTTP calls
//! (discovery and keys cached an hour per issuer, per container); the store sees the account's
//! settings read (cached for `MA2H_CHANNELS_CACHE_MS`), the state's single-use counter, and per
//! request the logout counter — an SSO session has no credential to read, its mapping is in the
//! account settings already cached.

use std::future::IntoFuture;

use axum::http::StatusCode;
use ma2h_core::sso::manage::{self, SsoSpec};
use ma2h_protocol::ids::AccountId;
use ma2h_test_support::idp::{Alg, CLIENT_ID, CLIENT_SECRET, Idp};
use tower::ServiceExt;

use crate::env::*;
use crate::metering::Tally;
use crate::support::raw_event;

fn cookie(resp: &axum::response::Response, name: &str) -> Option<String> {
    resp.headers()
        .get_all("set-cookie")
        .iter()
        .map(|v| v.to_str().unwrap().split(';').next().unwrap().to_owned())
        .find(|c| c.starts_with(&format!("{name}=")) && c.len() > name.len() + 1)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_of_an_sso_login_and_of_its_session() {
    with_env("sso", false, |e| async move {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let issuer = format!("http://{}", listener.local_addr().unwrap());
        let clock = e.clock.clone();
        let idp = Idp::new(&issuer, Alg::EdDsa, move || ma2h_core::ports::Clock::now(clock.as_ref()).timestamp());
        tokio::spawn(axum::serve(listener, idp.router()).into_future());
        let spec = SsoSpec {
            issuer: Some(issuer.clone()),
            client_id: Some(CLIENT_ID.into()),
            client_secret: Some(CLIENT_SECRET.into()),
            email_domains: Some(vec!["acme.com".into()]),
            ..SsoSpec::default()
        };
        manage::set(&e.dep.hub, "admin", &AccountId::parse("acme").unwrap(), spec).await.unwrap();
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

        let sso_cookie = cookie(&begin, "ma2h_sso").unwrap();
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

        let session = cookie(&done, "ma2h_inbox").unwrap();
        let check = app.clone().oneshot(raw_event("GET", "/login", &[("cookie", &session)], "")).await.unwrap();
        assert_eq!(check.status(), StatusCode::SEE_OTHER, "a live session goes on to the inbox");
        phase(
            "an SSO session's check on each request: the logout counter (the mapping is in the cached settings)",
            e.phase().await,
            &[("dynamodb:GetItem", 1)],
        );
        print_table("Single sign-on (counted on the wire, asserted)", &rows);
    })
    .await;
}

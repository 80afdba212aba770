//! The web inbox through the Router: login and session cookie, CSRF refusal, account scoping,
//! sanitized bodies, masking, and answering through the §8.8 use case.

mod common;

use axum::http::{Method, StatusCode};
use common::*;
use serde_json::json;

#[tokio::test]
async fn login_sets_an_httponly_samesite_strict_session_cookie() {
    let t = hub().await;
    let form = t.page(Method::GET, "/login", None, None).await;
    assert_eq!(form.status, StatusCode::OK);
    let csp = form.headers.get("content-security-policy").unwrap().to_str().unwrap();
    // scripts only from the Hub's own files (the keyboard shortcuts), never inline
    assert!(csp.contains("default-src 'none'") && csp.contains("script-src 'self';"), "{csp}");
    assert!(!csp.contains("unsafe-eval") && !csp.contains("script-src 'self' 'unsafe-inline'"), "{csp}");
    assert_eq!(form.headers.get("x-content-type-options").unwrap(), "nosniff");
    assert_eq!(form.headers.get("referrer-policy").unwrap(), "no-referrer");
    let login_cookie = cookie_pair(&form.set_cookies()[0]);
    let r = t
        .page(Method::POST, "/login", Some(&login_cookie), Some(&[("csrf", &form.csrf()), ("api_key", &t.operator)]))
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.html);
    assert_eq!(r.location(), "/inbox");
    let session = r.set_cookies().into_iter().find(|c| c.starts_with("ma2h_inbox=")).unwrap();
    assert!(session.contains("HttpOnly") && session.contains("SameSite=Strict"), "{session}");
    assert!(!session.contains("Secure"), "dev mode serves plain http: {session}");
    assert!(!session.contains(&t.operator), "the key never goes into the cookie");
    let inbox = t.page(Method::GET, "/inbox", Some(&cookie_pair(&session)), None).await;
    assert_eq!(inbox.status, StatusCode::OK);
    assert!(inbox.html.contains("human:alice"), "{}", inbox.html);
}

#[tokio::test]
async fn outside_dev_mode_the_cookie_is_secure_and_host_prefixed() {
    let t = hub_with(ma2h_core::kernel::settings::Settings {
        mode: ma2h_core::kernel::settings::Mode::Production,
        ..settings()
    })
    .await;
    let form = t.page(Method::GET, "/login", None, None).await;
    let login_cookie = form.set_cookies()[0].clone();
    assert!(login_cookie.starts_with("__Host-") && login_cookie.contains("; Secure"), "{login_cookie}");
    let r = t
        .page(
            Method::POST,
            "/login",
            Some(&cookie_pair(&login_cookie)),
            Some(&[("csrf", &form.csrf()), ("api_key", &t.operator)]),
        )
        .await;
    let session = r.set_cookies().into_iter().find(|c| c.starts_with("__Host-ma2h_inbox=")).unwrap();
    assert!(session.contains("; Secure") && session.contains("HttpOnly"), "{session}");
}

#[tokio::test]
async fn agent_keys_wrong_keys_and_forged_login_forms_are_refused() {
    let t = hub().await;
    let form = t.page(Method::GET, "/login", None, None).await;
    let cookie = cookie_pair(&form.set_cookies()[0]);
    let csrf = form.csrf();
    let r = t.page(Method::POST, "/login", Some(&cookie), Some(&[("csrf", &csrf), ("api_key", &t.agent)])).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert!(r.set_cookies().iter().all(|c| !c.starts_with("ma2h_inbox=")));
    // each form token is good for one try: the refusal page carries a fresh one
    let (cookie, csrf) = (cookie_pair(&r.set_cookies()[0]), r.csrf());
    let r = t.page(Method::POST, "/login", Some(&cookie), Some(&[("csrf", &csrf), ("api_key", "ma2h_op_nope")])).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
    let r = t.page(Method::POST, "/login", None, Some(&[("csrf", &csrf), ("api_key", &t.operator)])).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "no login cookie: a cross-site login form");
}

#[tokio::test]
async fn without_a_session_pages_redirect_to_login() {
    let t = hub().await;
    let r = t.page(Method::GET, "/inbox", None, None).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    assert_eq!(r.location(), "/login");
    let id = t.submit_ok(ask("r1")).await;
    let r = t.page(Method::GET, &format!("/inbox/{id}"), Some("ma2h_inbox=garbage"), None).await;
    assert_eq!(r.location(), format!("/login?next=%2Finbox%2F{id}"), "the review_url comes back after login");
    let r = t.page(Method::POST, &format!("/inbox/{id}/resolve"), None, Some(&[("act", "declined")])).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
    assert_eq!(t.get(&t.agent, &id).await.body["status"], "open");
}

#[tokio::test]
async fn a_revoked_credential_ends_its_sessions() {
    let t = hub().await;
    let cookie = t.ui_login(&t.operator).await;
    let cred = ma2h_core::kernel::auth::authenticate(&t.hub, Some(&t.operator)).await.unwrap().credential_id;
    ma2h_core::admin::revoke(&t.hub, &cred).await.unwrap();
    let r = t.page(Method::GET, "/inbox", Some(&cookie), None).await;
    assert_eq!((r.status, r.location()), (StatusCode::SEE_OTHER, "/login"));
}

#[tokio::test]
async fn sessions_expire_after_twelve_hours() {
    let t = hub().await;
    let cookie = t.ui_login(&t.operator).await;
    t.advance(chrono::Duration::hours(12) + chrono::Duration::seconds(1));
    let r = t.page(Method::GET, "/inbox", Some(&cookie), None).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER);
}

#[tokio::test]
async fn posts_without_or_with_a_wrong_csrf_token_are_refused_and_resolve_nothing() {
    let t = hub().await;
    let cookie = t.ui_login(&t.operator).await;
    let id = t.submit_ok(ask("c1")).await;
    let uri = format!("/inbox/{id}/resolve");
    let r = t.page(Method::POST, &uri, Some(&cookie), Some(&[("act", "answered"), ("value", "ship")])).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = t
        .page(Method::POST, &uri, Some(&cookie), Some(&[("csrf", "0000"), ("act", "answered"), ("value", "ship")]))
        .await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    let r = t.page(Method::POST, "/logout", Some(&cookie), Some(&[("csrf", "nope")])).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN);
    assert_eq!(t.get(&t.agent, &id).await.body["status"], "open", "nothing resolved");
}

#[tokio::test]
async fn answering_a_select_ask_reaches_the_agent_with_the_human_actor() {
    let t = hub().await;
    let cookie = t.ui_login(&t.operator).await;
    let env = with(
        ask("s1"),
        "/request/options",
        json!([{"value":"ship","label":"Ship it","description":"Deploy right now."},{"value":"hold","label":"Hold"}]),
    );
    let id = t.submit_ok(env).await;
    let page = t.page(Method::GET, &format!("/inbox/{id}"), Some(&cookie), None).await;
    assert!(page.html.contains("Ship it") && page.html.contains("Deploy right now."), "{}", page.html);
    let csrf = page.csrf();
    let r = t
        .page(
            Method::POST,
            &format!("/inbox/{id}/resolve"),
            Some(&cookie),
            Some(&[("csrf", &csrf), ("value", "ship"), ("act", "answered"), ("comment", "LGTM")]),
        )
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.html);
    let got = t.get(&t.agent, &id).await;
    assert_eq!(got.body["status"], "answered");
    assert_eq!(got.body["response"]["response"]["value"], "ship");
    assert_eq!(got.body["response"]["response"]["actor"], "human:alice");
    assert_eq!(got.body["response"]["response"]["comment"], "LGTM");
    let history = t.page(Method::GET, "/inbox/history", Some(&cookie), None).await;
    assert!(history.html.contains("answered") && history.html.contains("LGTM"), "{}", history.html);
    assert!(history.html.contains("pull"), "{}", history.html);
}

fn input_ask(key: &str) -> serde_json::Value {
    with(
        with(ask(key), "/request/mode", json!("input")),
        "/request",
        json!({
            "mode": "input",
            "schema": {"type":"object","required":["replicas"],"properties":{
                "replicas":{"type":"integer","minimum":1,"description":"How many"},
                "token":{"type":"string","x-ma2h-sensitive":true,"minLength":7}}},
            "allowed_resolvers": ["human:alice"]
        }),
    )
}

#[tokio::test]
async fn an_invalid_input_answer_shows_a_field_message_then_a_valid_one_resolves() {
    let t = hub().await;
    let cookie = t.ui_login(&t.operator).await;
    let id = t.submit_ok(input_ask("i1")).await;
    let page = t.page(Method::GET, &format!("/inbox/{id}"), Some(&cookie), None).await;
    assert!(page.html.contains(r#"name="field.replicas""#), "{}", page.html);
    assert!(page.html.contains(r#"type="password" name="field.token""#), "sensitive input is masked");
    let csrf = page.csrf();
    let uri = format!("/inbox/{id}/resolve");
    let r = t
        .page(
            Method::POST,
            &uri,
            Some(&cookie),
            Some(&[("csrf", &csrf), ("field.replicas", "0"), ("field.token", "s3cr"), ("act", "answered")]),
        )
        .await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert!(r.html.contains("must be at least 1"), "{}", r.html);
    // Not even in its own field's error (a black-box pass found jsonschema's message quoting it).
    assert!(r.html.contains("must be at least 7 characters"), "{}", r.html);
    assert!(!r.html.contains("s3cr"), "a sensitive value is never echoed: {}", r.html);
    let api =
        t.resolve(&t.operator, &id, json!({"resolution": "answered", "value": {"replicas": 3, "token": "s3cr"}})).await;
    assert_eq!(api.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", api.body);
    assert!(!api.body.to_string().contains("s3cr"), "nor in the API's 422: {}", api.body);
    let r = t
        .page(Method::POST, &uri, Some(&cookie), Some(&[("csrf", &csrf), ("field.replicas", "x"), ("act", "answered")]))
        .await;
    assert!(r.html.contains("Enter a whole number."), "{}", r.html);
    assert_eq!(t.get(&t.agent, &id).await.body["status"], "open");
    let r = t
        .page(
            Method::POST,
            &uri,
            Some(&cookie),
            Some(&[("csrf", &csrf), ("field.replicas", "3"), ("field.token", "hunter2"), ("act", "answered")]),
        )
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.html);
    let got = t.get(&t.agent, &id).await;
    assert_eq!(got.body["response"]["response"]["value"], json!({"replicas": 3, "token": "hunter2"}));
    let page = t.page(Method::GET, &format!("/inbox/{id}"), Some(&cookie), None).await;
    assert!(!page.html.contains("hunter2"), "sensitive fields are masked by default");
    let page = t.page(Method::GET, &format!("/inbox/{id}?reveal=1"), Some(&cookie), None).await;
    assert!(page.html.contains("hunter2"), "and revealed on request");
}

#[tokio::test]
async fn a_sensitive_message_hides_its_body_until_revealed() {
    let t = hub().await;
    let cookie = t.ui_login(&t.operator).await;
    let env = with(with(ask("sen"), "/sensitive", json!(true)), "/body", json!("the launch code is 0000"));
    let id = t.submit_ok(env).await;
    let page = t.page(Method::GET, &format!("/inbox/{id}"), Some(&cookie), None).await;
    assert!(!page.html.contains("launch code"), "{}", page.html);
    // Issue 39: no answer buttons until the content is shown, and a POST that skipped the
    // reveal is refused (and shows the content to read first).
    assert!(!page.html.contains(r#"name="act""#) && page.html.contains("Reveal and answer"), "{}", page.html);
    let csrf = page.csrf();
    let uri = format!("/inbox/{id}/resolve");
    let blind = t
        .page(Method::POST, &uri, Some(&cookie), Some(&[("csrf", &csrf), ("act", "answered"), ("value", "ship")]))
        .await;
    assert_eq!(blind.status, StatusCode::UNPROCESSABLE_ENTITY, "{}", blind.html);
    assert!(blind.html.contains("launch code") && blind.html.contains("before you answer"), "{}", blind.html);
    assert_eq!(t.get(&t.agent, &id).await.body["status"], "open");
    let page = t.page(Method::GET, &format!("/inbox/{id}?reveal=1"), Some(&cookie), None).await;
    assert!(page.html.contains("launch code"));
    assert!(page.html.contains(r#"name="revealed" value="1""#), "{}", page.html);
    let form = [("csrf", csrf.as_str()), ("revealed", "1"), ("act", "answered"), ("value", "ship")];
    let r = t.page(Method::POST, &uri, Some(&cookie), Some(&form)).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.html);
    assert_eq!(t.get(&t.agent, &id).await.body["status"], "answered");
}

#[tokio::test]
async fn decline_is_explained_beside_the_agents_own_no() {
    let t = hub().await;
    let cookie = t.ui_login(&t.operator).await;
    let confirm = json!({"mode": "confirm", "allowed_resolvers": ["human:alice"],
                         "permissions": {"allow_respond": true, "allow_ignore": true}});
    let env = with(ask("deny"), "/request", confirm);
    let id = t.submit_ok(env).await;
    let page = t.page(Method::GET, &format!("/inbox/{id}"), Some(&cookie), None).await;
    assert!(page.html.contains("Decline answers none of the options"), "{}", page.html);
    assert!(page.html.contains("(“Deny”)"), "the confirm ask's own no is named: {}", page.html);
}

#[tokio::test]
async fn a_hostile_body_renders_inert_and_client_ref_and_state_never_appear() {
    let t = hub().await;
    let cookie = t.ui_login(&t.operator).await;
    let body = "<script>alert(1)</script>\n\n<img src=x onerror=alert(2)>\n\n[click](javascript:alert(3)) \
                and [docs](https://example.com/docs) ![pic](https://evil.example/p.png)";
    let env = with(
        with(with(ask("xss"), "/body", json!(body)), "/client_ref", json!("CREF-42")),
        "/context",
        json!([
            {"kind":"text","text":"<b>bold?</b>"},
            {"kind":"data","data":{"k":[1,2]}},
            {"kind":"file","file":{"uri":"https://files.example/diff.patch","name":"diff.patch"}}
        ]),
    );
    let id = t.submit_ok(env).await;
    let page = t.page(Method::GET, &format!("/inbox/{id}"), Some(&cookie), None).await;
    let html = &page.html;
    // the only script elements are the Hub's own files; the hostile body's script is text
    let scripts = html.matches("<script").count();
    let own = [
        r#"<script src="/inbox/pwa.js" defer></script>"#,
        r#"<script src="/inbox/keys.js" defer></script>"#,
        r#"<script src="/inbox/live.js" defer></script>"#,
        r#"<script src="/inbox/passkeys.js" defer></script>"#,
    ];
    assert_eq!(scripts, own.iter().map(|s| html.matches(s).count()).sum::<usize>(), "{html}");
    assert_eq!(scripts, 4, "{html}");
    assert!(!html.contains("<img") && !html.contains("<b>"), "{html}");
    assert!(!html.contains("href=\"javascript"), "{html}");
    assert!(html.contains("↗ external: example.com") && html.contains("noopener noreferrer nofollow"), "{html}");
    assert!(html.contains("image not loaded"), "{html}");
    assert!(html.contains("&quot;k&quot;") || html.contains("\"k\""), "data part pretty-printed: {html}");
    assert!(html.contains("diff.patch"));
    assert!(!html.contains("CREF-42") && !html.contains("v1.opaque"), "no client_ref or state");
    let list = t.page(Method::GET, "/inbox", Some(&cookie), None).await;
    assert!(!list.html.contains("CREF-42") && !list.html.contains("<script>"));
}

#[tokio::test]
async fn another_accounts_message_is_not_found() {
    let t = hub().await;
    let globex_op = ma2h_core::admin::create_operator(&t.hub, "globex", "carol", None).await.unwrap().api_key;
    let cookie = t.ui_login(&globex_op).await;
    let id = t.submit_ok(ask("f1")).await;
    let r = t.page(Method::GET, &format!("/inbox/{id}"), Some(&cookie), None).await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    let csrf = t.page(Method::GET, "/inbox", Some(&cookie), None).await.csrf();
    let r = t
        .page(
            Method::POST,
            &format!("/inbox/{id}/resolve"),
            Some(&cookie),
            Some(&[("csrf", &csrf), ("act", "declined")]),
        )
        .await;
    assert_eq!(r.status, StatusCode::NOT_FOUND);
    assert_eq!(t.get(&t.agent, &id).await.body["status"], "open");
}

#[tokio::test]
async fn a_resolver_not_allowed_sees_why_instead_of_buttons() {
    let t = hub().await;
    let cookie = t.ui_login(&t.operator).await;
    let id = t.submit_ok(without(ask("na"), "/request/allowed_resolvers")).await;
    let page = t.page(Method::GET, &format!("/inbox/{id}"), Some(&cookie), None).await;
    assert!(page.html.contains("You can't resolve this message"), "{}", page.html);
    assert!(!page.html.contains(r#"name="act""#), "no answer buttons");
}

#[tokio::test]
async fn permissions_decide_the_buttons_and_tasks_show_their_checklist() {
    let t = hub().await;
    let cookie = t.ui_login(&t.operator).await;
    let env = with(ask("p1"), "/request/permissions", json!({"allow_ignore": false}));
    let id = t.submit_ok(env).await;
    let page = t.page(Method::GET, &format!("/inbox/{id}"), Some(&cookie), None).await;
    assert!(page.html.contains(r#"value="answered""#) && !page.html.contains(r#"value="declined""#));
    let tid = t.submit_ok(task("t1")).await;
    let page = t.page(Method::GET, &format!("/inbox/{tid}"), Some(&cookie), None).await;
    assert!(page.html.contains("Generate") && page.html.contains(r#"name="check.1""#), "{}", page.html);
    let r = t
        .page(
            Method::POST,
            &format!("/inbox/{tid}/resolve"),
            Some(&cookie),
            Some(&[("csrf", &page.csrf()), ("check.0", "on"), ("act", "completed")]),
        )
        .await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.html);
    let got = t.get(&t.agent, &tid).await;
    assert_eq!(got.body["status"], "completed");
    assert_eq!(got.body["response"]["response"]["checklist"][0]["done"], true);
    assert_eq!(got.body["response"]["response"]["checklist"][1]["done"], false);
}

#[tokio::test]
async fn the_inbox_lists_urgent_first_and_filters() {
    let t = hub().await;
    let cookie = t.ui_login(&t.operator).await;
    t.submit_ok(with(with(ask("l1"), "/title", json!("Normal one")), "/priority", json!("normal"))).await;
    t.submit_ok(with(with(ask("l2"), "/title", json!("Urgent one")), "/priority", json!("urgent"))).await;
    t.submit_ok(with(with(task("l3"), "/title", json!("Tagged task")), "/tags", json!(["infra"]))).await;
    let page = t.page(Method::GET, "/inbox", Some(&cookie), None).await;
    let (u, n) = (page.html.find("Urgent one").unwrap(), page.html.find("Normal one").unwrap());
    assert!(u < n, "urgent first");
    assert!(page.html.contains("3 open"), "{}", page.html);
    let page = t.page(Method::GET, "/inbox?tag=infra", Some(&cookie), None).await;
    assert!(page.html.contains("Tagged task") && !page.html.contains("Urgent one"));
    let page = t.page(Method::GET, "/inbox?priority=urgent&type=ask", Some(&cookie), None).await;
    assert!(page.html.contains("Urgent one") && !page.html.contains("Normal one"));
}

#[tokio::test]
async fn the_submit_ack_review_url_opens_the_message_page() {
    let t = hub().await;
    let ack = t.submit(&t.agent, ask("rv")).await;
    let review = ack.body["review_url"].as_str().unwrap();
    let path = review.strip_prefix("https://hub.test").unwrap();
    let cookie = t.ui_login(&t.operator).await;
    let page = t.page(Method::GET, path, Some(&cookie), None).await;
    assert_eq!(page.status, StatusCode::OK);
    assert!(page.html.contains("Ship to prod?"));
}

#[tokio::test]
async fn logout_clears_the_session_cookie() {
    let t = hub().await;
    let cookie = t.ui_login(&t.operator).await;
    let csrf = t.page(Method::GET, "/inbox", Some(&cookie), None).await.csrf();
    let r = t.page(Method::POST, "/logout", Some(&cookie), Some(&[("csrf", &csrf)])).await;
    assert_eq!((r.status, r.location()), (StatusCode::SEE_OTHER, "/login"));
    assert!(r.set_cookies().iter().any(|c| c.starts_with("ma2h_inbox=;") && c.contains("Max-Age=0")));
}

/// Issue 13 item 4 in the web inbox: past a page of open messages, another agent's ask is
/// counted, found by the agent filter, and reached by the next-page link.
#[tokio::test]
async fn the_inbox_counts_filters_and_pages_past_a_flood() {
    let t = hub_with(ma2h_core::kernel::settings::Settings {
        requests_per_minute: 100_000,
        inbox_depth: 10_000,
        ..settings()
    })
    .await;
    let cookie = t.ui_login(&t.operator).await;
    for i in 0..60 {
        t.submit_ok(with(
            with(ask(&format!("p{i}")), "/title", json!(format!("Flood {i}"))),
            "/priority",
            json!("normal"),
        ))
        .await;
    }
    t.advance(chrono::Duration::seconds(1));
    let quiet = with(with(ask("q"), "/agent/id", json!("other")), "/title", json!("Quiet question"));
    t.submit(&t.other_agent, with(quiet, "/priority", json!("normal"))).await;

    let first = t.page(Method::GET, "/inbox", Some(&cookie), None).await;
    assert!(first.html.contains("61 open") && first.html.contains("61 asks"), "{}", first.html);
    assert!(!first.html.contains("Quiet question"), "past the first page");
    assert!(!first.html.contains("First page"), "the first page does not link to itself");
    let next = |html: &str| {
        let (before, _) = html.split_once("rel=\"next\"")?;
        Some(before.rsplit_once("href=\"")?.1.split('"').next()?.replace("&amp;", "&"))
    };
    let second = t.page(Method::GET, &next(&first.html).expect("a next-page link"), Some(&cookie), None).await;
    assert_eq!(second.status, StatusCode::OK);
    assert!(second.html.contains("Quiet question") && second.html.contains("First page"), "{}", second.html);
    assert!(next(&second.html).is_none(), "the last page has no next link");
    let filtered = t.page(Method::GET, "/inbox?agent=other", Some(&cookie), None).await;
    assert!(filtered.html.contains("Quiet question") && filtered.html.contains("1 matching"), "{}", filtered.html);
    assert!(!filtered.html.contains("Flood 0"));
    let bad = t.page(Method::GET, "/inbox?cursor=nope", Some(&cookie), None).await;
    assert_eq!(bad.status, StatusCode::BAD_REQUEST);
}

/// Issue 12 item 3: every invalid answer field is marked at once, from the structured errors.
#[tokio::test]
async fn every_invalid_input_field_is_marked_at_once() {
    let t = hub().await;
    let cookie = t.ui_login(&t.operator).await;
    let env = with(
        input_ask("i2"),
        "/request/schema",
        json!({"type":"object","properties":{
            "replicas":{"type":"integer","minimum":1},
            "region":{"type":"string","maxLength":3}}}),
    );
    let id = t.submit_ok(env).await;
    let csrf = t.page(Method::GET, &format!("/inbox/{id}"), Some(&cookie), None).await.csrf();
    let form = [("csrf", csrf.as_str()), ("field.replicas", "0"), ("field.region", "eu-west"), ("act", "answered")];
    let r = t.page(Method::POST, &format!("/inbox/{id}/resolve"), Some(&cookie), Some(&form)).await;
    assert_eq!(r.status, StatusCode::UNPROCESSABLE_ENTITY);
    assert_eq!(r.html.matches(r#"aria-invalid="true""#).count(), 2, "{}", r.html);
    assert!(r.html.contains("must be at least 1") && r.html.contains("must be at most 3 characters"), "{}", r.html);
}

/// Found by a black-box pass (session 19): a right-to-left override in an agent's title made
/// `report\u{202E}fdp.exe` read as `reportexe.pdf` in the inbox.
#[tokio::test]
async fn bidi_controls_in_agent_text_are_shown_not_obeyed() {
    let t = hub().await;
    let cookie = t.ui_login(&t.operator).await;
    let mut env = common::ask("bidi");
    env["title"] = json!("Open report\u{202E}fdp.exe");
    env["agent"]["project"] = json!("\u{2066}web\u{2069}");
    let id = t.submit_ok(env).await;
    for uri in ["/inbox".to_owned(), format!("/inbox/{id}")] {
        let page = t.page(Method::GET, &uri, Some(&cookie), None).await;
        assert!(page.html.contains("Open report[U+202E]fdp.exe"), "{uri}: {}", page.html);
        assert!(!page.html.contains(['\u{202E}', '\u{2066}', '\u{2069}']), "{uri}: no live control");
    }
    let own = t.get(&t.agent, &id).await;
    assert_eq!(own.body["title"], "Open report\u{202E}fdp.exe", "the stored message is the agent's, unchanged");

    // What a form submits stays as written: an option value carrying one is still chosen.
    let mut env = common::ask("bidi-option");
    env["request"]["options"] =
        json!([{"value": "ship\u{202E}", "label": "Ship\u{202E}"}, {"value": "hold", "label": "Hold"}]);
    let id = t.submit_ok(env).await;
    let page = t.page(Method::GET, &format!("/inbox/{id}"), Some(&cookie), None).await;
    assert!(page.html.contains("Ship[U+202E]") && page.html.contains("value=\"ship\u{202E}\""), "{}", page.html);
    let csrf = page.csrf();
    let form = [("csrf", csrf.as_str()), ("value", "ship\u{202E}"), ("act", "answered")];
    let r = t.page(Method::POST, &format!("/inbox/{id}/resolve"), Some(&cookie), Some(&form)).await;
    assert_eq!(r.status, StatusCode::SEE_OTHER, "{}", r.html);
    assert_eq!(t.get(&t.agent, &id).await.body["response"]["response"]["value"], "ship\u{202E}");
}

//! Approval policies (issue 40, a Hub extension): a quorum of distinct approvers for an
//! `answered` value, separation of duties, the Response that records every approver (still
//! valid against the official v0.5 schema), and the race of approvals, cancels and expiry that
//! must leave exactly one terminal.

mod common;

use axum::http::{Method, StatusCode};
use chrono::Duration;
use common::*;
use ma2h_protocol::schema::{SchemaKind, validate};
use serde_json::{Value, json};

async fn operator(t: &TestHub, human: &str) -> String {
    ma2h_core::admin::create_operator(&t.hub, "acme", human, None).await.unwrap().api_key
}

async fn set_policy(t: &TestHub, id: &str, body: Value) {
    let r = t.call(Method::PUT, &format!("/v1/operator/approval-policies/{id}"), Some(&t.operator), Some(body)).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
}

fn prod_ask(key: &str) -> Value {
    let resolvers = json!(["human:alice", "human:bob", "human:carol"]);
    with(with(ask(key), "/tags", json!(["prod"])), "/request/allowed_resolvers", resolvers)
}

fn answer(v: &str) -> Value {
    json!({"resolution": "answered", "value": v})
}

#[tokio::test]
async fn a_quorum_answer_is_one_approval_until_the_nth_distinct_approver_gives_the_same_value() {
    let t = hub().await;
    let (bob, carol) = (operator(&t, "bob").await, operator(&t, "carol").await);
    set_policy(&t, "prod", json!({"approvals": 2, "tag": "prod"})).await;
    let id = t.submit_ok(prod_ask("q1")).await;

    let first = t.resolve(&t.operator, &id, answer("ship")).await;
    assert_eq!(first.status, StatusCode::ACCEPTED, "{}", first.body);
    assert_eq!(first.body["status"], "open");
    assert_eq!(
        (first.body["approval"]["required"].as_u64(), first.body["approval"]["policy"].as_str()),
        (Some(2), Some("prod"))
    );
    assert_eq!(first.body["approval"]["approvals"][0]["actor"], "human:alice");
    let again = t.resolve(&t.operator, &id, answer("ship")).await;
    assert_eq!(
        (again.status, again.body["approval"]["approvals"].as_array().map(Vec::len)),
        (StatusCode::ACCEPTED, Some(1)),
        "one approver counts once"
    );
    let read = t.get(&t.agent, &id).await.body;
    assert_eq!(
        (read["status"].as_str(), read.get("response")),
        (Some("open"), None),
        "an approval is no terminal: {read}"
    );

    let cookie = t.ui_login(&t.operator).await;
    let page = t.page(Method::GET, &format!("/inbox/{id}"), Some(&cookie), None).await;
    assert!(
        page.html.contains("human:alice approved “Ship”") && page.html.contains("2 different people"),
        "{}",
        page.html
    );
    let other = t.resolve(&bob, &id, answer("hold")).await;
    assert_eq!(other.status, StatusCode::ACCEPTED, "a different value is its own tally: {}", other.body);
    let done = t.resolve(&carol, &id, answer("ship")).await;
    assert_eq!(done.status, StatusCode::OK, "{}", done.body);
    let read = t.get(&t.agent, &id).await.body;
    validate(SchemaKind::GetMessage, &read).unwrap_or_else(|e| panic!("{e}: {read}"));
    let r = &read["response"]["response"];
    assert_eq!((r["value"].as_str(), r["actor"].as_str()), (Some("ship"), Some("human:carol")), "{read}");
    let who: Vec<&str> = r["approvals"].as_array().unwrap().iter().map(|a| a["actor"].as_str().unwrap()).collect();
    assert_eq!(who, ["human:alice", "human:carol"]);
    assert!(r["approvals"][0]["approved_at"].as_str().is_some());
    let page = t.page(Method::GET, &format!("/inbox/{id}"), Some(&cookie), None).await;
    assert!(page.html.contains("Approved by") && page.html.contains("human:alice, human:carol"), "{}", page.html);
    let late = t.resolve(&bob, &id, answer("ship")).await;
    assert_eq!(late.status, StatusCode::CONFLICT, "first terminal wins: {}", late.body);
}

#[tokio::test]
async fn a_decline_by_any_allowed_approver_ends_a_quorum_ask_at_once() {
    let t = hub().await;
    set_policy(&t, "prod", json!({"approvals": 3, "tag": "prod"})).await;
    let id = t.submit_ok(prod_ask("q2")).await;
    assert_eq!(t.resolve(&t.operator, &id, answer("ship")).await.status, StatusCode::ACCEPTED);
    let bob = operator(&t, "bob").await;
    let r = t.resolve(&bob, &id, json!({"resolution": "declined", "comment": "not today"})).await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    let read = t.get(&t.agent, &id).await.body;
    assert_eq!(
        (read["status"].as_str(), read["response"]["response"]["actor"].as_str()),
        (Some("declined"), Some("human:bob"))
    );
    assert!(read["response"]["response"].get("approvals").is_none(), "a decline lists no quorum: {read}");
}

#[tokio::test]
async fn the_runs_requester_and_named_humans_may_not_answer_under_a_policy() {
    let t = hub().await;
    set_policy(&t, "own", json!({"approvals": 1, "exclude_label": "requested_by", "exclude": ["mallory"]})).await;
    let mallory = operator(&t, "mallory").await;
    let bob = operator(&t, "bob").await;
    let resolvers = json!(["human:alice", "human:bob", "human:mallory"]);
    let mine = with(
        with(ask("own"), "/agent/labels", json!({"requested_by": "human:alice"})),
        "/request/allowed_resolvers",
        resolvers,
    );
    let id = t.submit_ok(mine).await;
    let r = t.resolve(&t.operator, &id, answer("ship")).await;
    assert_eq!((r.status, r.code()), (StatusCode::FORBIDDEN, "not_authorized"), "{}", r.body);
    assert!(r.message().contains("requested this run"), "{}", r.body);
    assert_eq!(t.resolve(&mallory, &id, answer("ship")).await.status, StatusCode::FORBIDDEN);
    let cookie = t.ui_login(&t.operator).await;
    let page = t.page(Method::GET, &format!("/inbox/{id}"), Some(&cookie), None).await;
    assert!(page.html.contains("requested this run") && page.html.contains("Approvals"), "{}", page.html);
    assert_eq!(
        t.resolve(&bob, &id, answer("ship")).await.status,
        StatusCode::OK,
        "anyone else answers at once (1 approval)"
    );
}

#[tokio::test]
async fn policies_are_managed_by_operators_and_checked() {
    let t = hub().await;
    let uri = "/v1/operator/approval-policies/prod";
    let r = t.call(Method::PUT, uri, Some(&t.agent), Some(json!({"approvals": 2}))).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "agents may not: {}", r.body);
    for bad in [
        json!({"approvals": 0}),
        json!({"approvals": 11}),
        json!({"approvals": 1}),
        json!({"approvals": 2, "min_priority": "soon"}),
        json!({"approvals": 2, "id": "other"}),
        json!({"approvals": 2, "surprise": true}),
        json!([1]),
    ] {
        let r = t.call(Method::PUT, uri, Some(&t.operator), Some(bad.clone())).await;
        assert!(r.status.is_client_error() && r.status != StatusCode::NOT_FOUND, "{bad}: {} {}", r.status, r.body);
    }
    set_policy(&t, "prod", json!({"approvals": 2, "tag": "prod"})).await;
    set_policy(&t, "all", json!({"approvals": 3})).await;
    set_policy(&t, "prod", json!({"approvals": 4, "tag": "prod"})).await; // replaced in place
    let list = t.call(Method::GET, "/v1/operator/approval-policies", Some(&t.operator), None).await.body;
    let ids: Vec<(&str, u64)> = list["approval_policies"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| (p["id"].as_str().unwrap(), p["approvals"].as_u64().unwrap()))
        .collect();
    assert_eq!(ids, [("prod", 4), ("all", 3)]);
    let gone = t.call(Method::DELETE, uri, Some(&t.operator), None).await;
    assert_eq!(gone.body["approval_policies"].as_array().map(Vec::len), Some(1));
    assert!(t.call(Method::DELETE, uri, Some(&t.operator), None).await.status.is_client_error());
}

#[tokio::test]
async fn approvals_cancels_and_expiry_race_to_exactly_one_terminal() {
    let t = hub().await;
    set_policy(&t, "prod", json!({"approvals": 2, "tag": "prod"})).await;
    let keys = [t.operator.clone(), operator(&t, "bob").await, operator(&t, "carol").await];
    for trial in 0..12 {
        let mut env = prod_ask(&format!("race-{trial}"));
        env["expires_at"] = json!(ts(t.clock_now() + Duration::seconds(1)));
        let id = t.submit_ok(env).await;
        let mut tasks = Vec::new();
        for i in 0..6usize {
            let (hub, id, key, agent) = (t.hub.clone(), id.clone(), keys[i % 3].clone(), t.agent.clone());
            tasks.push(tokio::spawn(async move {
                match i {
                    4 if trial % 3 == 0 => {
                        let who = ma2h_core::kernel::auth::authenticate(&hub, Some(&agent)).await.unwrap();
                        ma2h_core::messages::cancel::cancel(&hub, &who, &id).await.map(|_| ())
                    }
                    5 if trial % 3 == 1 => ma2h_core::messages::sweep::sweep_once(&hub).await.map(|_| ()),
                    _ => {
                        let who = ma2h_core::kernel::auth::authenticate(&hub, Some(&key)).await.unwrap();
                        ma2h_core::messages::resolve::resolve_outcome(
                            &hub,
                            &who,
                            None,
                            &id,
                            br#"{"resolution":"answered","value":"ship"}"#,
                        )
                        .await
                        .map(|_| ())
                    }
                }
            }));
            if i == 3 && trial % 3 == 1 {
                t.advance(Duration::seconds(2)); // the expiry joins the race
            }
        }
        for task in tasks {
            let _ = task.await.unwrap();
        }
        let read = t.get(&t.agent, &id).await.body;
        let status = read["status"].as_str().unwrap().to_owned();
        assert_ne!(status, "open", "trial {trial}: some terminal committed: {read}");
        validate(SchemaKind::GetMessage, &read).unwrap_or_else(|e| panic!("{e}: {read}"));
        if status == "answered" {
            let approvals = read["response"]["response"]["approvals"].as_array().unwrap();
            let who: std::collections::BTreeSet<&str> =
                approvals.iter().map(|a| a["actor"].as_str().unwrap()).collect();
            assert_eq!((approvals.len(), who.len()), (2, 2), "trial {trial}: two distinct approvers: {read}");
        }
    }
}

#[tokio::test]
async fn a_delegate_answers_for_an_away_operator_until_the_absence_ends() {
    let t = hub().await;
    let bob = operator(&t, "bob").await;
    let only_alice = |key: &str| with(ask(key), "/request/allowed_resolvers", json!(["human:alice"]));
    let first = t.submit_ok(only_alice("d1")).await;
    assert_eq!(
        t.resolve(&bob, &first, answer("ship")).await.status,
        StatusCode::FORBIDDEN,
        "not listed, alice is here"
    );

    let until = ts(t.clock_now() + Duration::hours(2));
    for bad in [
        json!({"delegate": "alice", "until": until}),
        json!({"delegate": "nobody", "until": until}),
        json!({"delegate": "bob", "until": ts(t.clock_now() - Duration::hours(1))}),
        json!({"delegate": "bob"}),
    ] {
        let r = t.call(Method::PUT, "/v1/operator/away", Some(&t.operator), Some(bad.clone())).await;
        assert!(r.status.is_client_error(), "{bad}: {}", r.body);
    }
    let agent = t
        .call(Method::PUT, "/v1/operator/away", Some(&t.agent), Some(json!({"delegate": "bob", "until": until})))
        .await;
    assert_eq!(agent.status, StatusCode::FORBIDDEN);
    let r = t
        .call(
            Method::PUT,
            "/v1/operator/away",
            Some(&t.operator),
            Some(json!({"delegate": "human:bob", "until": until})),
        )
        .await;
    assert_eq!(r.status, StatusCode::OK, "{}", r.body);
    assert_eq!(
        (r.body["away"][0]["human"].as_str(), r.body["away"][0]["delegate"].as_str()),
        (Some("human:alice"), Some("human:bob"))
    );

    let cookie = t.ui_login(&bob).await;
    let page = t.page(Method::GET, &format!("/inbox/{first}"), Some(&cookie), None).await;
    assert!(page.html.contains("You answer on behalf of") && page.html.contains(r#"name="act""#), "{}", page.html);
    let policies = t.page(Method::GET, "/inbox/policies", Some(&cookie), None).await;
    assert!(
        policies.html.contains("human:alice is away until") && policies.html.contains("human:bob answers for them"),
        "{}",
        policies.html
    );
    assert_eq!(t.resolve(&bob, &first, answer("ship")).await.status, StatusCode::OK);
    let read = t.get(&t.agent, &first).await.body;
    validate(SchemaKind::GetMessage, &read).unwrap_or_else(|e| panic!("{e}: {read}"));
    let r = &read["response"]["response"];
    assert_eq!((r["actor"].as_str(), r["on_behalf_of"].as_str()), (Some("human:bob"), Some("human:alice")), "{read}");

    // it ends on time…
    let second = t.submit_ok(only_alice("d2")).await;
    t.advance(Duration::hours(3));
    assert_eq!(t.resolve(&bob, &second, answer("ship")).await.status, StatusCode::FORBIDDEN, "the absence ended");
    // …or when lifted
    let until = ts(t.clock_now() + Duration::hours(2));
    t.call(Method::PUT, "/v1/operator/away", Some(&t.operator), Some(json!({"delegate": "bob", "until": until}))).await;
    let back = t.call(Method::DELETE, "/v1/operator/away", Some(&t.operator), None).await;
    assert_eq!((back.status, back.body["away"].as_array().map(Vec::len)), (StatusCode::OK, Some(0)));
    assert_eq!(t.resolve(&bob, &second, answer("ship")).await.status, StatusCode::FORBIDDEN, "lifted");
}

#[tokio::test]
async fn a_delegate_cannot_carry_a_separation_of_duties_exclusion_away() {
    let t = hub().await;
    set_policy(&t, "own", json!({"approvals": 1, "exclude_label": "requested_by"})).await;
    let bob = operator(&t, "bob").await;
    let env = with(
        with(ask("sod"), "/agent/labels", json!({"requested_by": "alice"})),
        "/request/allowed_resolvers",
        json!(["human:alice"]),
    );
    let id = t.submit_ok(env).await;
    let until = ts(t.clock_now() + Duration::hours(2));
    t.call(Method::PUT, "/v1/operator/away", Some(&t.operator), Some(json!({"delegate": "bob", "until": until}))).await;
    let r = t.resolve(&bob, &id, answer("ship")).await;
    assert_eq!(r.status, StatusCode::FORBIDDEN, "bob stands in for alice, who may not approve her own run: {}", r.body);
}

/// An ask the permission hook would file: a confirm ask with a grant key (issue 40).
fn keyed(key: &str, grant_key: &str) -> Value {
    let request = json!({"mode": "confirm", "allowed_resolvers": ["human:alice"], "grant_key": grant_key,
                         "options": [{"value": "allow", "label": "Allow"}, {"value": "deny", "label": "Deny"}]});
    with(with(ask(key), "/request", request), "/agent/project", json!("web"))
}

#[tokio::test]
async fn a_standing_grant_answers_later_keyed_asks_until_revoked_and_never_widens() {
    let t = hub().await;
    let first = t.submit_ok(keyed("g1", "Bash:git push")).await;
    let refused = t
        .call(Method::POST, "/v1/operator/grants", Some(&t.operator), Some(json!({"message": first, "scope": "60m"})))
        .await;
    assert!(refused.status.is_client_error(), "a grant stands on an answer: {}", refused.body);
    // the human answers in the inbox and makes the answer stand for an hour
    let cookie = t.ui_login(&t.operator).await;
    let page = t.page(Method::GET, &format!("/inbox/{first}"), Some(&cookie), None).await;
    assert!(page.html.contains("Remember this answer") && page.html.contains("for this project"), "{}", page.html);
    let form = [("csrf", page.csrf()), ("act", "answer:allow".into()), ("grant", "60m".into())];
    let form: Vec<(&str, &str)> = form.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let r = t.page(Method::POST, &format!("/inbox/{first}/resolve"), Some(&cookie), Some(&form)).await;
    assert!(r.location().contains("granted=grt_"), "{} {}", r.status, r.location());
    let grant_id = r.location().split("granted=").nth(1).unwrap().to_owned();

    // the same agent, the same key: answered at once, attested to alice, with the grant's id
    let second = t.submit_ok(keyed("g2", "Bash:git push")).await;
    let read = t.get(&t.agent, &second).await.body;
    validate(SchemaKind::GetMessage, &read).unwrap_or_else(|e| panic!("{e}: {read}"));
    let resp = &read["response"]["response"];
    assert_eq!(
        (read["status"].as_str(), resp["value"].as_str(), resp["actor"].as_str(), resp["grant_id"].as_str()),
        (Some("answered"), Some("allow"), Some("human:alice"), Some(grant_id.as_str())),
        "{read}"
    );
    // another key, a sensitive ask, another agent: a human decides
    assert_eq!(t.get(&t.agent, &t.submit_ok(keyed("g3", "Bash:rm")).await).await.body["status"], "open");
    let sensitive = with(keyed("g4", "Bash:git push"), "/sensitive", json!(true));
    assert_eq!(t.get(&t.agent, &t.submit_ok(sensitive).await).await.body["status"], "open", "never a sensitive ask");
    let mut other = keyed("g5", "Bash:git push");
    other["agent"]["id"] = json!("other");
    let r = t.submit(&t.other_agent, other).await;
    assert_eq!(
        t.get(&t.other_agent, r.body["id"].as_str().unwrap()).await.body["status"],
        "open",
        "only the granted agent"
    );
    // an approval policy over it: never auto-answered
    set_policy(&t, "web", json!({"approvals": 2, "project": "web"})).await;
    assert_eq!(
        t.get(&t.agent, &t.submit_ok(keyed("g6", "Bash:git push")).await).await.body["status"],
        "open",
        "under a quorum"
    );
    t.call(Method::DELETE, "/v1/operator/approval-policies/web", Some(&t.operator), None).await;

    let list = t.call(Method::GET, "/v1/operator/grants", Some(&t.operator), None).await.body;
    assert_eq!(
        (list["grants"][0]["id"].as_str(), list["grants"][0]["uses"].as_u64(), list["grants"][0]["active"].as_bool()),
        (Some(grant_id.as_str()), Some(1), Some(true)),
        "{list}"
    );
    let revoked = t.call(Method::DELETE, &format!("/v1/operator/grants/{grant_id}"), Some(&t.operator), None).await;
    assert_eq!((revoked.status, revoked.body["active"].as_bool()), (StatusCode::OK, Some(false)), "{}", revoked.body);
    assert_eq!(
        t.get(&t.agent, &t.submit_ok(keyed("g7", "Bash:git push")).await).await.body["status"],
        "open",
        "revoked at once"
    );
    assert_eq!(
        t.call(Method::DELETE, "/v1/operator/grants/grt_nope", Some(&t.operator), None).await.status,
        StatusCode::NOT_FOUND
    );
}

#[tokio::test]
async fn a_timed_grant_ends_on_time_and_a_project_grant_stays_in_its_project() {
    let t = hub().await;
    let first = t.submit_ok(keyed("t1", "Edit:*.rs")).await;
    t.resolve(&t.operator, &first, answer("allow")).await;
    let r = t
        .call(Method::POST, "/v1/operator/grants", Some(&t.operator), Some(json!({"message": first, "scope": "15m"})))
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    t.advance(Duration::minutes(16));
    assert_eq!(t.get(&t.agent, &t.submit_ok(keyed("t2", "Edit:*.rs")).await).await.body["status"], "open", "expired");

    let third = t.submit_ok(keyed("t3", "Edit:*.rs")).await;
    t.resolve(&t.operator, &third, answer("deny")).await;
    let r = t
        .call(
            Method::POST,
            "/v1/operator/grants",
            Some(&t.operator),
            Some(json!({"message": third, "scope": "project"})),
        )
        .await;
    assert_eq!(r.status, StatusCode::CREATED, "{}", r.body);
    let same = t.get(&t.agent, &t.submit_ok(keyed("t4", "Edit:*.rs")).await).await.body;
    assert_eq!(same["response"]["response"]["value"], "deny", "a standing deny answers too: {same}");
    let elsewhere = with(keyed("t5", "Edit:*.rs"), "/agent/project", json!("api"));
    assert_eq!(t.get(&t.agent, &t.submit_ok(elsewhere).await).await.body["status"], "open", "another project");
    let bob = operator(&t, "bob").await;
    let theirs = t
        .call(Method::POST, "/v1/operator/grants", Some(&bob), Some(json!({"message": third, "scope": "agent"})))
        .await;
    assert!(theirs.status.is_client_error(), "only on one's own answer: {}", theirs.body);
}

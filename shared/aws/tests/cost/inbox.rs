//! The live inbox and triage on DynamoDB (issue 39, docs/COST.md "The live inbox and triage"):
//! what one pulse reads (the first open page with its counts, the newest resolutions, the rows'
//! triage items, a lookup per alert candidate) — on AWS an open tab reads one per
//! `MA2H_LIVE_POLL_SECONDS` — and what a claim, a snooze and a first view cost (one lookup, one
//! `BatchGetItem`, one conditional `PutItem`; a repeat view writes nothing).

use axum::http::StatusCode;
use ma2h_core::kernel::auth::Principal;
use ma2h_core::kernel::credentials::PrincipalId;
use ma2h_protocol::ids::{AccountId, HumanId};

use crate::env::*;
use crate::metering::Tally;
use crate::support::event;

fn alice() -> Principal {
    Principal {
        account: AccountId::parse("acme").unwrap(),
        id: PrincipalId::Operator(HumanId::parse("alice").unwrap()),
        credential_id: "cost".into(),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_of_a_live_inbox_pulse_and_of_triage() {
    with_env("inbox", false, |e| async move {
        let hub = &e.dep.hub;
        let mut urgent = ask("live-1", None, None);
        urgent["priority"] = serde_json::json!("urgent");
        let (status, ack) = call(&e, event("POST", "/v1/messages", &e.agent, Some(&urgent))).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{ack}");
        let id = ack["id"].as_str().unwrap().to_owned();
        e.phase().await;
        let mut rows: Vec<(String, Tally)> = Vec::new();
        let mut phase = |name: &str, t: Tally, expected: &[(&str, u64)]| {
            crate::cost_eq!(t.requests, expect(expected), "{name}");
            rows.push((name.to_owned(), t));
        };
        let shards = u64::from(ma2h_store_dynamodb::shards::DEFAULT_LIST_SHARDS);

        let p = ma2h_core::messages::pulse::pulse(hub, &alice()).await.unwrap();
        assert_eq!((p.counts.total, p.alerts.len()), (1, 1));
        // the open page and the resolved page (one Query per listing shard and the unsharded
        // partition each), the counts (one BatchGetItem per 100 counter shards), the rows'
        // triage items (one BatchGetItem), the alert's lookup (one Query)
        phase(
            "one pulse (1 open urgent ask)",
            e.phase().await,
            &[("dynamodb:Query", 2 * (1 + shards) + 1), ("dynamodb:BatchGetItem", shards.div_ceil(100) + 1)],
        );

        ma2h_core::messages::triage::viewed(hub, &alice(), &id).await.unwrap();
        phase(
            "first view (a timeline event)",
            e.phase().await,
            &[("dynamodb:Query", 1), ("dynamodb:BatchGetItem", 1), ("dynamodb:PutItem", 1)],
        );
        ma2h_core::messages::triage::viewed(hub, &alice(), &id).await.unwrap();
        phase("a later view (writes nothing)", e.phase().await, &[("dynamodb:Query", 1), ("dynamodb:BatchGetItem", 1)]);
        ma2h_core::messages::triage::claim(hub, &alice(), &id, false).await.unwrap();
        phase(
            "claim (\"I'm on it\")",
            e.phase().await,
            &[("dynamodb:Query", 1), ("dynamodb:BatchGetItem", 1), ("dynamodb:PutItem", 1)],
        );
        let until = hub.clock.now() + chrono::Duration::hours(1);
        ma2h_core::messages::triage::snooze(hub, &alice(), &id, Some(until)).await.unwrap();
        phase(
            "snooze",
            e.phase().await,
            &[("dynamodb:Query", 1), ("dynamodb:BatchGetItem", 1), ("dynamodb:PutItem", 1)],
        );
        print_table("The live inbox and triage (counted on the wire, asserted)", &rows);
    })
    .await;
}

/// Issue 40 on DynamoDB: what a keyed submit adds (its agent's grant partition, one `Query`),
/// what a submit answered by a standing grant costs (the granting human's credentials and the
/// terminal), an approval short of its quorum (the triage item, no terminal), and making an
/// answer stand.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_of_team_decisions() {
    with_env("decisions", false, |e| async move {
        let hub = &e.dep.hub;
        let mut rows: Vec<(String, Tally)> = Vec::new();
        let mut phase = |name: &str, t: Tally, expected: &[(&str, u64)]| {
            crate::cost_eq!(t.requests, expect(expected), "{name}");
            rows.push((name.to_owned(), t));
        };
        let keyed = |k: &str| {
            let mut a = ask(k, None, None);
            a["request"] = serde_json::json!({"mode": "confirm", "allowed_resolvers": ["human:alice"], "grant_key": "Bash:git push"});
            a
        };
        let (status, first) = call(&e, event("POST", "/v1/messages", &e.agent, Some(&keyed("k1")))).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{first}");
        let first = first["id"].as_str().unwrap().to_owned();
        // as a pull-mode ask, plus its agent's grant partition (no grant: nothing else)
        phase(
            "submit a keyed ask (no grant)",
            e.phase().await,
            &[("dynamodb:GetItem", 1), ("dynamodb:UpdateItem", 3), ("dynamodb:PutItem", 2), ("dynamodb:Query", 1)],
        );
        let answer = serde_json::json!({"resolution": "answered", "value": "approve"});
        let (status, _) = call(&e, event("POST", &format!("/v1/messages/{first}/resolve"), &e.operator, Some(&answer))).await;
        assert_eq!(status, StatusCode::OK);
        e.phase().await;
        ma2h_core::decisions::grants::grant(hub, &alice(), &first, ma2h_core::decisions::grants::Choice::Minutes(60)).await.unwrap();
        phase("make an answer stand (a grant)", e.phase().await, &[("dynamodb:Query", 1), ("dynamodb:PutItem", 1)]);
        let (status, second) = call(&e, event("POST", "/v1/messages", &e.agent, Some(&keyed("k2")))).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{second}");
        phase(
            "submit answered by a standing grant",
            e.phase().await,
            &[("dynamodb:GetItem", 2), ("dynamodb:UpdateItem", 4), ("dynamodb:PutItem", 4), ("dynamodb:Query", 2)],
        );
        let (_, read) = call(&e, event("GET", &format!("/v1/messages/{}", second["id"].as_str().unwrap()), &e.agent, None)).await;
        assert_eq!(read["status"], "answered", "answered at once: {read}");
        e.phase().await;

        ma2h_core::decisions::manage::put(hub, "admin",
            "acme",
            ma2h_core::decisions::manage::PolicySpec { id: "two".into(), approvals: 2, ..Default::default() },
        )
        .await
        .unwrap();
        let (_, third) = call(&e, event("POST", "/v1/messages", &e.agent, Some(&ask("q1", None, None)))).await;
        let third = third["id"].as_str().unwrap().to_owned();
        e.phase().await;
        let ship = serde_json::json!({"resolution": "answered", "value": "ship"});
        let (status, _) = call(&e, event("POST", &format!("/v1/messages/{third}/resolve"), &e.operator, Some(&ship))).await;
        assert_eq!(status, StatusCode::ACCEPTED, "one approval of two");
        phase(
            "an approval short of its quorum",
            e.phase().await,
            &[("dynamodb:GetItem", 1), ("dynamodb:Query", 1), ("dynamodb:BatchGetItem", 1), ("dynamodb:PutItem", 1)],
        );
        print_table("Team decisions (counted on the wire, asserted)", &rows);
    })
    .await;
}

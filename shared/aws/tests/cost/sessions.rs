//! Requests per phase of a session's lifecycle on DynamoDB (docs/COST.md, "Sessions"):
//! register, a renewing drain, a session-bound ask answered into a `response` entry, its drain
//! and ack, the close (with its bounce pass) and the purge after retention.

use axum::http::StatusCode;
use chrono::Duration;
use ma2h_aws::handlers;
use serde_json::json;

use crate::env::*;
use crate::metering::Tally;
use crate::support::event;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_per_phase_of_a_session() {
    with_env("session", false, |e| async move {
        let mut rows: Vec<(String, Tally)> = Vec::new();
        let phase = |name: &str, expected: &[(&str, u64)], rows: &mut Vec<(String, Tally)>| {
            let t = e.meter.take();
            crate::cost_eq!(t.requests, expect(expected), "{name}");
            rows.push((name.to_owned(), t));
        };

        let (status, reg) = call(&e, event("POST", "/v1/sessions", &e.agent, Some(&json!({"ttl_seconds": 900})))).await;
        assert_eq!(status, StatusCode::CREATED, "{reg}");
        let sess = reg["session"]["id"].as_str().unwrap().to_owned();
        // auth; live sessions (Query mailbox, COUNT); the stop check + the put (one transaction)
        phase(
            "register",
            &[("dynamodb:GetItem", 1), ("dynamodb:Query", 1), ("dynamodb:TransactWriteItems", 1)],
            &mut rows,
        );

        let (status, _) = call(&e, event("GET", &format!("/v1/inbox?session={sess}"), &e.agent, None)).await;
        assert_eq!(status, StatusCode::OK);
        // auth; the renewal (one conditional write; it stamps the session's `last_seen`, which
        // presence reads — no presence write of its own, issue 38); one Query per audience (the
        // principal's, principal-addressed inter-agent mail, the session's own)
        phase(
            "drain presenting the session, empty (renews it)",
            &[("dynamodb:GetItem", 1), ("dynamodb:UpdateItem", 1), ("dynamodb:Query", 3)],
            &mut rows,
        );

        let mut envelope = ask("s1", None, None);
        envelope["agent"]["session"] = json!(sess);
        let (status, ack) = call(&e, event("POST", "/v1/messages", &e.agent, Some(&envelope))).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{ack}");
        let id = ack["id"].as_str().unwrap().to_owned();
        e.meter.take();

        let answer = json!({"resolution": "answered", "value": "ship"});
        let (status, r) =
            call(&e, event("POST", &format!("/v1/messages/{id}/resolve"), &e.operator, Some(&answer))).await;
        assert_eq!(status, StatusCode::OK, "{r}");
        let resolution_id = r["resolution_id"].as_str().unwrap().to_owned();
        // auth, the session (is it live?); the message (Query MSG); was it counted (a
        // transaction returns no old item); the terminal CAS carrying the entry; the open counter
        phase(
            "answer a session-bound ask (the response entry rides the terminal write)",
            &[
                ("dynamodb:GetItem", 3),
                ("dynamodb:Query", 1),
                ("dynamodb:TransactWriteItems", 1),
                ("dynamodb:UpdateItem", 1),
            ],
            &mut rows,
        );

        let (_, drained) = call(&e, event("GET", &format!("/v1/inbox?session={sess}"), &e.agent, None)).await;
        assert_eq!(drained["messages"].as_array().map(Vec::len), Some(1), "{drained}");
        phase(
            "drain the response entry",
            &[("dynamodb:GetItem", 3), ("dynamodb:UpdateItem", 3), ("dynamodb:Query", 3)],
            &mut rows,
        );

        let body = json!({"ids": [resolution_id]});
        let (_, acked) = call(&e, event("POST", &format!("/v1/inbox/ack?session={sess}"), &e.agent, Some(&body))).await;
        assert_eq!(acked, json!({"acked": 1}));
        // auth; renewal, the entry's close, the Response's ack
        phase("ack it (acknowledges the Response)", &[("dynamodb:GetItem", 1), ("dynamodb:UpdateItem", 3)], &mut rows);

        let (status, closed) = call(&e, event("DELETE", &format!("/v1/sessions/{sess}"), &e.agent, None)).await;
        assert_eq!((status, closed["session"]["state"].as_str()), (StatusCode::OK, Some("closed")));
        // auth, the session; the terminal CAS (returning the record); the bounce pass (Query
        // mailbox) and clearing the outbox flag
        phase(
            "close (with its bounce pass)",
            &[("dynamodb:GetItem", 2), ("dynamodb:UpdateItem", 2), ("dynamodb:Query", 1)],
            &mut rows,
        );

        e.clock.advance(Duration::days(2));
        let outcome = handlers::sweep(&e.dep).await.unwrap();
        assert_eq!(outcome.sessions_purged, 0, "{outcome:?}");
        // the sweep's Queries (`SWEEP_QUERIES`) only: the ended session is the TTL's (free)
        phase(
            "sweep after retention (the TTL deletes the session, free)",
            &[("dynamodb:Query", SWEEP_QUERIES)],
            &mut rows,
        );
        print_table("Requests per phase of a session (counted on the wire, asserted)", &rows);
    })
    .await;
}

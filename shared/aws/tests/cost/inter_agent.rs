//! Requests per phase of an addressed ask's lifecycle on DynamoDB (docs/COST.md, "Inter-agent"):
//! the addressed submit (its entry rides the insert transaction), the addressee's drain, its
//! resolve (the asker's `response` entry rides the terminal write), the asker's drain, and both
//! acks — then the undeliverable path: the addressee's session closes with an ask queued.

use axum::http::StatusCode;
use ma2h_core::admin;
use serde_json::{Value, json};

use crate::env::*;
use crate::metering::Tally;
use crate::support::event;

pub(crate) fn addressed(key: &str, to: &str, session: &str) -> Value {
    json!({"ma2h_version": "0.5", "type": "ask", "created_at": "2026-06-04T12:00:00Z",
           "agent": {"id": "bot", "run_id": "r", "runtime": "cloud", "session": session}, "to": to,
           "title": "Restart the consumer?", "idempotency_key": key, "request": {"mode": "confirm"}})
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_per_phase_of_an_addressed_ask() {
    with_env("a2a", false, |e| async move {
        let worker = admin::create_agent(&e.dep.hub, "acme", "worker", None).await.unwrap().api_key;
        let patch = json!({"enabled": true});
        let (status, _) = call(&e, event("PATCH", "/v1/operator/inter-agent", &e.operator, Some(&patch))).await;
        assert_eq!(status, StatusCode::OK);
        let (_, a) = call(&e, event("POST", "/v1/sessions", &e.agent, Some(&json!({"ttl_seconds": 900})))).await;
        let asker = a["session"]["id"].as_str().unwrap().to_owned();
        let (_, w) = call(&e, event("POST", "/v1/sessions", &worker, Some(&json!({"ttl_seconds": 900})))).await;
        let sess = w["session"]["id"].as_str().unwrap().to_owned();
        e.meter.take();

        let mut rows: Vec<(String, Tally)> = Vec::new();
        let phase = |name: &str, expected: &[(&str, u64)], rows: &mut Vec<(String, Tally)>| {
            let t = e.meter.take();
            crate::cost_eq!(t.requests, expect(expected), "{name}");
            rows.push((name.to_owned(), t));
        };

        let to = format!("agent:worker#{sess}");
        let (status, ack) =
            call(&e, event("POST", "/v1/messages", &e.agent, Some(&addressed("c1", &to, &asker)))).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{ack}");
        let id = ack["id"].as_str().unwrap().to_owned();
        // auth, the policy, the addressee's signing secret and session (GetItem ×4); the
        // sender's session renewal, the agent's counter (this minute's first request: an ADD
        // refused, then the new window — it carries the open count too) and the inter-agent
        // window (an ADD refused, then a put) (UpdateItem ×4, PutItem ×1); the destination
        // partition's depth (Query COUNT); one transaction: message + idempotency claim + mailbox
        // entry; the account's open counter (UpdateItem, issue 38)
        phase(
            "addressed submit (the entry rides the insert)",
            &[
                ("dynamodb:GetItem", 4),
                ("dynamodb:PutItem", 1),
                ("dynamodb:UpdateItem", 5),
                ("dynamodb:Query", 1),
                ("dynamodb:TransactWriteItems", 1),
            ],
            &mut rows,
        );

        let (_, drained) = call(&e, event("GET", &format!("/v1/inbox?session={sess}"), &worker, None)).await;
        assert_eq!(drained["messages"][0]["message"]["id"], id.as_str());
        // auth, the session, the signing key; the renewal (it stamps the session's `last_seen`,
        // which presence reads: no presence write, issue 38) + the claim; one Query per audience
        // (principal, principal-addressed, session)
        phase(
            "addressee drains the message entry",
            &[("dynamodb:GetItem", 3), ("dynamodb:UpdateItem", 2), ("dynamodb:Query", 3)],
            &mut rows,
        );

        let answer = json!({"resolution": "answered", "value": "approve"});
        let uri = format!("/v1/messages/{id}/resolve?session={sess}");
        let (status, r) = call(&e, event("POST", &uri, &worker, Some(&answer))).await;
        assert_eq!(status, StatusCode::OK, "{r}");
        let resolution_id = r["resolution_id"].as_str().unwrap().to_owned();
        // auth; renewal; the message (Query), its entry (is it undeliverable?) and the entry's
        // session (ended, with a bounce to repair?); the asker's session (is it live?); was the
        // message counted (a transaction returns no old item); the terminal CAS carrying the
        // response entry; the open counter
        phase(
            "addressee resolves (the response entry rides the terminal write)",
            &[
                ("dynamodb:GetItem", 5),
                ("dynamodb:UpdateItem", 2),
                ("dynamodb:Query", 1),
                ("dynamodb:TransactWriteItems", 1),
            ],
            &mut rows,
        );

        let body = json!({"ids": [id]});
        let (_, acked) = call(&e, event("POST", &format!("/v1/inbox/ack?session={sess}"), &worker, Some(&body))).await;
        assert_eq!(acked, json!({"acked": 1}));
        phase("addressee acks the message entry", &[("dynamodb:GetItem", 1), ("dynamodb:UpdateItem", 2)], &mut rows);

        let (_, back) = call(&e, event("GET", &format!("/v1/inbox?session={asker}"), &e.agent, None)).await;
        assert_eq!(back["messages"][0]["response"]["resolution_id"], resolution_id.as_str());
        // as the addressee's drain, plus the Response's delivered-to-agent stamp
        phase(
            "asker drains the response entry",
            &[("dynamodb:GetItem", 3), ("dynamodb:UpdateItem", 3), ("dynamodb:Query", 3)],
            &mut rows,
        );
        let body = json!({"ids": [resolution_id]});
        let (_, acked) =
            call(&e, event("POST", &format!("/v1/inbox/ack?session={asker}"), &e.agent, Some(&body))).await;
        assert_eq!(acked, json!({"acked": 1}));
        phase(
            "asker acks it (acknowledges the Response)",
            &[("dynamodb:GetItem", 1), ("dynamodb:UpdateItem", 3)],
            &mut rows,
        );

        // The undeliverable path: a queued ask, then the addressee's session closes.
        let (status, _) = call(&e, event("POST", "/v1/messages", &e.agent, Some(&addressed("c2", &to, &asker)))).await;
        assert_eq!(status, StatusCode::ACCEPTED);
        e.meter.take();
        let (status, _) = call(&e, event("DELETE", &format!("/v1/sessions/{sess}"), &worker, None)).await;
        assert_eq!(status, StatusCode::OK);
        // auth and the session; the end CAS, the entry's bounce and the cleared outbox flag
        // (UpdateItem ×3); the bounce pass (two Queries: one page, then empty). Per bounced ask:
        // the message (Query) and its entry, the asker's session twice (for the response entry,
        // then the receipt), the auto-cancellation with its response entry (one transaction, after
        // reading whether the message was counted; then the counter) and the receipt (a
        // live-count Query + PutItem)
        phase(
            "addressee's session closes with one ask queued (bounce, auto-cancel, receipt)",
            &[
                ("dynamodb:GetItem", 6),
                ("dynamodb:UpdateItem", 4),
                ("dynamodb:Query", 4),
                ("dynamodb:TransactWriteItems", 1),
                ("dynamodb:PutItem", 1),
            ],
            &mut rows,
        );
        print_table("Requests per phase of an addressed ask (counted on the wire, asserted)", &rows);
    })
    .await;
}

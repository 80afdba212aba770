//! Requests per phase of a directive's lifecycle on DynamoDB (docs/COST.md, "Directives"):
//! send, drain, ack, the operator's track read, an empty drain, and the purge after retention.

use axum::http::StatusCode;
use chrono::Duration;
use ma2h_aws::handlers;
use serde_json::json;

use crate::env::*;
use crate::metering::Tally;
use crate::support::event;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_per_phase_of_a_directive() {
    with_env("directive", false, |e| async move {
        let mut rows: Vec<(String, Tally)> = Vec::new();
        let body = json!({"to": "agent:bot", "title": "Freeze deploys", "body": "Until the incident closes."});
        let (status, sent) = call(&e, event("POST", "/v1/operator/directives", &e.operator, Some(&body))).await;
        assert_eq!(status, StatusCode::CREATED, "{sent}");
        let id = sent["id"].as_str().unwrap().to_owned();
        let send = e.meter.take();
        assert_eq!(
            send.requests,
            // auth (KEY#), the destination's signing secret; live entries (Query mailbox, COUNT); the entry
            expect(&[("dynamodb:GetItem", 2), ("dynamodb:Query", 1), ("dynamodb:PutItem", 1)]),
            "send"
        );
        rows.push(("send a directive (operator)".into(), send));

        let (status, drained) = call(&e, event("GET", "/v1/inbox", &e.agent, None)).await;
        assert_eq!((status, drained["messages"].as_array().map(Vec::len)), (StatusCode::OK, Some(1)));
        let drain = e.meter.take();
        assert_eq!(
            drain.requests,
            // auth, signing alg + signing secret; claimable entries (Query mailbox); presence + the claim
            expect(&[("dynamodb:GetItem", 3), ("dynamodb:Query", 1), ("dynamodb:UpdateItem", 2)]),
            "drain one entry"
        );
        rows.push(("drain, one entry (first drain of a presence window)".into(), drain));

        let (_, acked) = call(&e, event("POST", "/v1/inbox/ack", &e.agent, Some(&json!({"ids": [id]})))).await;
        assert_eq!(acked, json!({"acked": 1}));
        let ack = e.meter.take();
        assert_eq!(ack.requests, expect(&[("dynamodb:GetItem", 1), ("dynamodb:UpdateItem", 1)]), "ack");
        rows.push(("ack".into(), ack));

        let (_, track) = call(&e, event("GET", &format!("/v1/operator/directives/{id}"), &e.operator, None)).await;
        assert_eq!(track["delivery"]["state"], "acknowledged");
        let read = e.meter.take();
        assert_eq!(read.requests, expect(&[("dynamodb:GetItem", 2)]), "track read");
        rows.push(("track read (operator, not in the total)".into(), read));

        let (_, empty) = call(&e, event("GET", "/v1/inbox", &e.agent, None)).await;
        assert_eq!(empty["messages"], json!([]));
        let idle = e.meter.take();
        assert_eq!(idle.requests, expect(&[("dynamodb:GetItem", 1), ("dynamodb:Query", 1)]), "empty drain");
        rows.push(("empty drain (presence cached; not in the total)".into(), idle));

        e.clock.advance(Duration::days(61));
        let outcome = handlers::sweep(&e.dep).await.unwrap();
        assert_eq!((outcome.entries_closed, outcome.entries_purged), (0, 0), "{outcome:?}");
        let purge = e.meter.take();
        // the sweep's Queries (`SWEEP_QUERIES`) only: the closed entry is the TTL's (free)
        assert_eq!(purge.requests, expect(&[("dynamodb:Query", SWEEP_QUERIES)]), "purge");
        rows.push(("sweep after retention (the TTL deletes the entry, free)".into(), purge));
        print_table("Requests per phase of a directive (counted on the wire, asserted)", &rows);
    })
    .await;
}

/// §14.2/§14.1 on the response leg: only the submitter's first read of a terminal pull-mode ask
/// writes (the delivered-to-agent stamp); the ack is one conditional write.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_first_read_after_terminal_stamps_delivery_once_and_an_ack_is_one_write() {
    with_env("receipt", false, |e| async move {
        let (status, ack) = call(&e, event("POST", "/v1/messages", &e.agent, Some(&ask("r1", None, None)))).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{ack}");
        let id = ack["id"].as_str().unwrap().to_owned();
        let answer = json!({"resolution": "answered", "value": "ship"});
        let (status, _) =
            call(&e, event("POST", &format!("/v1/messages/{id}/resolve"), &e.operator, Some(&answer))).await;
        assert_eq!(status, StatusCode::OK);
        e.meter.take();
        let (_, first) = call(&e, event("GET", &format!("/v1/messages/{id}"), &e.agent, None)).await;
        assert_eq!(first["delivery"]["state"], "delivered-to-agent");
        let stamp = e.meter.take();
        assert_eq!(
            stamp.requests,
            expect(&[("dynamodb:GetItem", 1), ("dynamodb:Query", 1), ("dynamodb:UpdateItem", 1)]),
            "first read: + the stamp"
        );
        let (_, second) = call(&e, event("GET", &format!("/v1/messages/{id}"), &e.agent, None)).await;
        assert_eq!(second["delivery"], first["delivery"]);
        let reread = e.meter.take();
        assert_eq!(reread.requests, expect(&[("dynamodb:GetItem", 1), ("dynamodb:Query", 1)]), "later reads: none");
        let (status, _) = call(&e, event("POST", &format!("/v1/messages/{id}/ack"), &e.agent, Some(&json!({})))).await;
        assert_eq!(status, StatusCode::OK);
        let acked = e.meter.take();
        assert_eq!(
            acked.requests,
            expect(&[("dynamodb:GetItem", 1), ("dynamodb:Query", 1), ("dynamodb:UpdateItem", 1)]),
            "ack: auth, the read, one conditional write"
        );
        print_table(
            "Response receipt (counted on the wire, asserted)",
            &[
                ("first read after terminal (stamps delivered-to-agent)".into(), stamp),
                ("a later read".into(), reread),
                ("POST /v1/messages/{id}/ack".into(), acked),
            ],
        );
    })
    .await;
}

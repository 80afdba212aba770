//! Standard Webhooks on pushes (issue 43, docs/COST.md): the headers cost no request — the
//! agent's `whsec_` secret is one more sealed item in the same partition the deliver function
//! already reads for the callback bindings and the HMAC secret.

use std::sync::atomic::Ordering;

use axum::http::StatusCode;
use serde_json::json;

use crate::env::*;
use crate::metering::Tally;
use crate::support::event;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_push_with_standard_webhooks_headers_costs_what_a_plain_push_costs() {
    with_env("stdwebhooks", false, |e| async move {
        let (url, hits) = receiver().await;
        let secret = ma2h_core::admin::set_standard_webhooks(&e.dep.hub, "acme", "bot", true).await.unwrap();
        assert!(secret.is_some_and(|s| s.starts_with("whsec_")));
        let (status, _) = call(&e, event("POST", "/v1/messages", &e.agent, Some(&notify("warm")))).await;
        assert_eq!(status, StatusCode::ACCEPTED);
        e.phase().await;

        let cb = json!({"mode": "push", "url": url, "auth": {"scheme": "hmac", "secret_ref": "cb"}});
        let (status, ack) = call(&e, event("POST", "/v1/messages", &e.agent, Some(&ask("sw1", Some(cb), None)))).await;
        assert_eq!(status, StatusCode::ACCEPTED, "{ack}");
        let id = ack["id"].as_str().unwrap().to_owned();
        let answer = json!({"resolution": "answered", "value": "ship"});
        let (status, res) =
            call(&e, event("POST", &format!("/v1/messages/{id}/resolve"), &e.operator, Some(&answer))).await;
        assert_eq!(status, StatusCode::OK, "{res}");
        e.phase().await;

        assert_eq!(deliver_via_esm(&e).await, (1, 0));
        assert_eq!(hits.load(Ordering::SeqCst), 1, "pushed once");
        let push = e.phase().await;
        // as the lifecycle's plain push: the message, the agent's partition (bindings and
        // secrets, the Standard Webhooks one among them), the push track
        crate::cost_eq!(push.requests, expect(&[("dynamodb:Query", 2), ("dynamodb:UpdateItem", 1)]), "deliver");
        let rows: Vec<(String, Tally)> = vec![("push with Standard Webhooks headers".into(), push)];
        print_table("A push with Standard Webhooks headers (counted on the wire, asserted)", &rows);
    })
    .await;
}

//! §8.1 submit: the 202 ack, and idempotency on `(agent.id, idempotency_key)` — identical replay
//! returns the original ack with the current status, a differing payload is 409.

use ma2h_protocol::schema::{self, SchemaKind};
use serde_json::json;

use super::Ctx;
use crate::report::{Report, ensure};

pub async fn run(cx: &Ctx, r: &mut Report) {
    // a notify is acked `delivered` (§5.1, §8.1)
    let resp = cx.hub.submit(&cx.cfg.agent_key, &cx.notify()).await;
    let res = (|| {
        resp.expect(202, None)?;
        schema::validate(SchemaKind::SubmitAck, &resp.body).map_err(|e| format!("submit-ack schema: {e}"))?;
        ensure(resp.body["status"] == "delivered", || {
            format!("status is {}, expected delivered", resp.body["status"])
        })?;
        ensure(resp.body["poll_url"].is_string(), || "no poll_url".into())
    })();
    r.result("8.1", "a notify is acked 202 `delivered` with a schema-valid ack", res);

    // an ask is acked `open`
    let ask = cx.ask("idem");
    let resp = cx.hub.submit(&cx.cfg.agent_key, &ask).await;
    let first = (|| {
        resp.expect(202, None)?;
        schema::validate(SchemaKind::SubmitAck, &resp.body).map_err(|e| format!("submit-ack schema: {e}"))?;
        ensure(resp.body["status"] == "open", || format!("status is {}, expected open", resp.body["status"]))?;
        resp.body["id"].as_str().map(str::to_owned).ok_or_else(|| "no id".to_owned())
    })();
    r.result(
        "8.1",
        "an ask is acked 202 `open` with a Hub-assigned id",
        first.as_ref().map(drop).map_err(Clone::clone),
    );
    let Ok(id) = first else {
        r.skip("8.1", "idempotency", "the ask was not accepted");
        return;
    };

    // identical replay from a new run → the original ack (run_id is excluded from the comparison)
    let mut replay = ask.clone();
    replay["agent"]["run_id"] = json!(format!("conformance-retry-{}", cx.nonce));
    let again = cx.hub.submit(&cx.cfg.agent_key, &replay).await;
    let res = (|| {
        again.expect(202, None)?;
        ensure(again.body["id"] == json!(id), || format!("replay got id {}, original {id}", again.body["id"]))?;
        ensure(again.body["status"] == "open", || format!("replay status {}", again.body["status"]))
    })();
    r.result("8.1", "an identical replay (new run_id) returns the original id and status", res);

    // after resolution, the replay carries the current status
    let ans = cx.answer(&id, "ship").await;
    let again = cx.hub.submit(&cx.cfg.agent_key, &replay).await;
    let res = (|| {
        ans.expect(200, None).map_err(|e| format!("resolve: {e}"))?;
        again.expect(202, None)?;
        ensure(again.body["id"] == json!(id), || format!("replay got id {}", again.body["id"]))?;
        ensure(again.body["status"] == "answered", || {
            format!("replay status {}, expected answered", again.body["status"])
        })
    })();
    r.result("8.1", "a replay after resolution returns the original id with the current status", res);

    // same key, different payload → 409 idempotency_conflict
    let mut differing = ask.clone();
    differing["title"] = json!("conformance: a different question");
    let resp = cx.hub.submit(&cx.cfg.agent_key, &differing).await;
    r.result(
        "8.1",
        "a replay with a differing payload is 409 idempotency_conflict",
        resp.expect(409, Some("idempotency_conflict")),
    );

    // the key is scoped to agent.id: the other agent may use the same key
    let mut other = ask.clone();
    other["agent"]["id"] = json!(cx.cfg.other_agent_id);
    other["request"]["allowed_resolvers"] = json!([cx.cfg.operator_actor]);
    let resp = cx.hub.submit(&cx.cfg.other_agent_key, &other).await;
    let res = (|| {
        resp.expect(202, None)?;
        ensure(resp.body["id"] != json!(id), || "the other agent got the first agent's message id".into())
    })();
    if let Some(oid) = resp.body["id"].as_str() {
        cx.hub.cancel(&cx.cfg.other_agent_key, oid).await;
    }
    r.result("8.1", "idempotency keys are scoped per agent.id", res);
}

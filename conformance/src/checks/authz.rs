//! §9.1 authentication and authorization: 401s, submitter-bound read and cancel (another
//! principal gets exactly the unknown-id 404 — dp-002), the fail-closed resolver default,
//! `allowed_resolvers`, Hub-attested actors, and `client_ref` kept from resolvers.

use serde_json::json;

use super::Ctx;
use crate::report::{Report, ensure};

pub async fn run(cx: &Ctx, r: &mut Report) {
    let (key, other, op) = (&cx.cfg.agent_key, &cx.cfg.other_agent_key, &cx.cfg.operator_key);

    // 401 unauthenticated
    let none = cx.hub.call("POST", "/v1/messages", None, Some(&cx.notify())).await;
    r.result("9.1", "a submit without a credential is 401 unauthenticated", none.expect(401, Some("unauthenticated")));
    let bad = cx.hub.submit(&format!("ma2h_conformance_not_a_key_{}", cx.nonce), &cx.notify()).await;
    r.result(
        "9.1",
        "a submit with an unknown credential is 401 unauthenticated",
        bad.expect(401, Some("unauthenticated")),
    );
    let as_op = cx.hub.submit(op, &cx.notify()).await;
    r.result(
        "9.1",
        "an operator credential cannot submit as an agent (401/403)",
        ensure(as_op.status == 401 || as_op.status == 403, || format!("answered {}", as_op.show())),
    );

    // cross-principal read and cancel look exactly like an unknown id
    let unknown = cx.hub.read(key, &format!("msg_conformance_unknown_{}", cx.nonce)).await;
    let id = cx.submit_ok(&cx.ask("cross")).await;
    let res = async {
        let id = id.clone()?;
        let resp = cx.hub.read(other, &id).await;
        resp.expect(404, Some("not_found"))?;
        ensure(resp.code() == unknown.code(), || format!("differs from an unknown id's {}", unknown.show()))
    }
    .await;
    r.result("9.1", "another agent's read is the unknown-id 404 (dp-002)", res);
    let res = async {
        let id = id.clone()?;
        cx.hub.cancel(other, &id).await.expect(404, Some("not_found"))?;
        let read = cx.hub.read(key, &id).await;
        ensure(read.body["status"] == "open", || format!("the ask is now {}", read.body["status"]))
    }
    .await;
    r.result("9.1", "another agent's cancel is the unknown-id 404 and is not applied (dp-002)", res);
    let res = async {
        let id = id.clone()?;
        let resp = cx.hub.resolve(other, &id, &json!({"resolution": "declined"})).await;
        ensure(resp.status == 404 || resp.status == 403, || format!("answered {}", resp.show()))?;
        let read = cx.hub.read(key, &id).await;
        ensure(read.body["status"] == "open", || format!("the ask is now {}", read.body["status"]))
    }
    .await;
    r.result("9.1", "an unlisted agent cannot resolve another agent's ask (404/403, not applied)", res);
    if let Ok(id) = &id {
        cx.close(id).await;
    }

    // fail-closed default: without allowed_resolvers only the submitting agent resolves
    let res = async {
        let mut ask = cx.ask("fail-closed");
        ask["request"].as_object_mut().map(|o| o.remove("allowed_resolvers"));
        let id = cx.submit_ok(&ask).await?;
        let by_op = cx.hub.resolve(op, &id, &json!({"resolution": "declined"})).await;
        ensure(by_op.status == 403 || by_op.status == 404, || format!("the operator got {}", by_op.show()))?;
        ensure(cx.hub.read(key, &id).await.body["status"] == "open", || "the operator's resolve applied".into())?;
        let own = cx.hub.resolve(key, &id, &json!({"resolution": "answered", "value": "hold"})).await;
        own.expect(200, None).map_err(|e| format!("the submitter: {e}"))?;
        let actor = cx.hub.read(key, &id).await.body["response"]["response"]["actor"].clone();
        let want = format!("agent:{}", cx.cfg.agent_id);
        ensure(actor == json!(want), || format!("actor {actor}, expected {want}"))
    }
    .await;
    r.result("9.1", "without allowed_resolvers only the submitting agent may resolve (fail-closed)", res);

    // a resolver outside the list is refused, including the submitter
    let res = async {
        let mut ask = cx.ask("unlisted");
        ask["request"]["allowed_resolvers"] = json!([format!("human:nobody-{}", cx.nonce)]);
        let id = cx.submit_ok(&ask).await?;
        let by_op = cx.hub.resolve(op, &id, &json!({"resolution": "declined"})).await;
        let by_self = cx.hub.resolve(key, &id, &json!({"resolution": "declined"})).await;
        let still = cx.hub.read(key, &id).await.body["status"].clone();
        cx.close(&id).await;
        by_op.expect(403, Some("not_authorized")).map_err(|e| format!("operator: {e}"))?;
        ensure(by_self.status == 403 || by_self.status == 404, || format!("the submitter got {}", by_self.show()))?;
        ensure(still == "open", || format!("the ask became {still}"))
    }
    .await;
    r.result("9.1", "a resolver not in allowed_resolvers is refused (403 not_authorized)", res);

    // a listed agent may resolve; the actor is attested from its credential
    let res = async {
        let mut ask = cx.ask("listed-agent");
        ask["request"]["allowed_resolvers"] = json!([format!("agent:{}", cx.cfg.other_agent_id)]);
        let id = cx.submit_ok(&ask).await?;
        cx.hub.resolve(other, &id, &json!({"resolution": "declined"})).await.expect(200, None)?;
        let actor = cx.hub.read(key, &id).await.body["response"]["response"]["actor"].clone();
        let want = format!("agent:{}", cx.cfg.other_agent_id);
        ensure(actor == json!(want), || format!("actor {actor}, expected {want}"))
    }
    .await;
    r.result("9.1", "an agent listed in allowed_resolvers may resolve (actor agent:<id>)", res);

    // actor is Hub-attested, never taken from the request body
    let res = async {
        let id = cx.submit_ok(&cx.ask("attested")).await?;
        let body = json!({"resolution": "answered", "value": "ship", "actor": "human:mallory"});
        let resp = cx.hub.resolve(op, &id, &body).await;
        ensure(resp.status == 200 || resp.status == 400, || format!("answered {}", resp.show()))?;
        if resp.status == 200 {
            let actor = cx.hub.read(key, &id).await.body["response"]["response"]["actor"].clone();
            ensure(actor == json!(cx.cfg.operator_actor), || format!("actor {actor}, expected the operator"))?;
        } else {
            cx.close(&id).await;
        }
        Ok::<(), String>(())
    }
    .await;
    r.result("9.1", "the resolving actor is Hub-attested, not taken from the body", res);

    client_ref(cx, r).await;
}

/// §9.1: `client_ref` MUST NOT be exposed to resolvers — checked on the operator listing when the
/// Hub offers one at `GET /v1/operator/messages` (a product surface, not a spec binding).
async fn client_ref(cx: &Ctx, r: &mut Report) {
    const NAME: &str = "client_ref is not exposed to resolvers (operator listing)";
    let marker = format!("conformance-client-ref-{}", cx.nonce);
    let mut ask = cx.ask("client-ref");
    ask["client_ref"] = json!(marker);
    let id = match cx.submit_ok(&ask).await {
        Ok(id) => id,
        Err(e) => return r.result("9.1", NAME, Err(e)),
    };
    let list = cx.hub.get("/v1/operator/messages?status=open&limit=500", &cx.cfg.operator_key).await;
    cx.close(&id).await;
    if list.status != 200 {
        return r.skip("9.1", NAME, &format!("no operator listing at /v1/operator/messages ({})", list.status));
    }
    let text = list.body.to_string();
    if !text.contains(&id) {
        return r.skip("9.1", NAME, "the listing did not include the probe message");
    }
    r.result("9.1", NAME, ensure(!text.contains(&marker), || "the listing carries the client_ref".into()));
}

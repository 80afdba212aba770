//! §8.8 resolve: the success body, validation of `resolution`/`value` against the request (422 /
//! 400), `cancelled` is not a resolve verb, task completion with a checklist.

use serde_json::json;

use super::Ctx;
use crate::report::{Report, ensure};

pub async fn run(cx: &Ctx, r: &mut Report) {
    let (op, key) = (&cx.cfg.operator_key, &cx.cfg.agent_key);

    let res = async {
        let id = cx.submit_ok(&cx.ask("resolve")).await?;
        let resp = cx.answer(&id, "ship").await;
        resp.expect(200, None)?;
        let rid = resp.body["resolution_id"].as_str().unwrap_or_default();
        ensure(resp.body["id"] == json!(id) && resp.body["status"] == "answered" && rid.starts_with("res_"), || {
            format!("expected {{id, status: answered, resolution_id: res_…}}, got {}", resp.body)
        })?;
        let read = cx.hub.read(key, &id).await;
        ensure(read.body["response"]["resolution_id"] == json!(rid), || "GET carries another resolution_id".into())?;
        ensure(read.body["response"]["response"]["value"] == "ship", || "GET lacks the answered value".into())
    }
    .await;
    r.result("8.8", "an allowed resolver answers: 200 {id, status, resolution_id} and the GET agrees", res);

    // validation against the request block
    let id = cx.submit_ok(&cx.ask("resolve-bad")).await;
    let cases: [(&str, serde_json::Value, u16, Option<&str>); 3] = [
        (
            "a value outside options[].value is 422 invalid_field",
            json!({"resolution": "answered", "value": "nope"}),
            422,
            Some("invalid_field"),
        ),
        (
            "`answered` without a value is 400 validation_error",
            json!({"resolution": "answered"}),
            400,
            Some("validation_error"),
        ),
        (
            "a value on `declined` is 400 validation_error",
            json!({"resolution": "declined", "value": "ship"}),
            400,
            Some("validation_error"),
        ),
    ];
    for (name, body, status, code) in cases {
        let res = match &id {
            Ok(id) => cx.hub.resolve(op, id, &body).await.expect(status, code),
            Err(e) => Err(e.clone()),
        };
        r.result("8.8", name, res);
    }
    let res = async {
        let id = id.clone()?;
        let c = cx.hub.resolve(op, &id, &json!({"resolution": "cancelled"})).await;
        ensure((400..500).contains(&c.status), || format!("answered {}", c.show()))?;
        let read = cx.hub.read(key, &id).await;
        ensure(read.body["status"] == "open", || format!("status is now {}", read.body["status"]))
    }
    .await;
    r.result("8.8", "`cancelled` is not a resolve resolution (4xx, nothing applied)", res);
    if let Ok(id) = &id {
        cx.close(id).await;
    }

    // a task completes with its final checklist; no `value`
    let res = async {
        let id = cx.submit_ok(&cx.task("complete")).await?;
        let checklist = json!([{ "text": "Look", "done": true }]);
        let body = json!({"resolution": "completed", "checklist": checklist, "comment": "done"});
        let resp = cx.hub.resolve(op, &id, &body).await;
        resp.expect(200, None)?;
        let read = cx.hub.read(key, &id).await;
        let inner = &read.body["response"]["response"];
        ensure(read.body["status"] == "completed", || format!("status {}", read.body["status"]))?;
        ensure(inner["checklist"] == checklist, || format!("checklist not carried: {inner}"))?;
        ensure(inner.get("value").is_none(), || "a task Response carries a value".into())
    }
    .await;
    r.result("8.8", "a task completes with its checklist carried into the Response (no value)", res);

    // answering a task is refused
    let res = async {
        let id = cx.submit_ok(&cx.task("task-answer")).await?;
        let resp = cx.hub.resolve(op, &id, &json!({"resolution": "answered", "value": "x"})).await;
        cx.close(&id).await;
        resp.expect(422, Some("invalid_field"))
    }
    .await;
    r.result("8.8", "an ask resolution on a task is 422 invalid_field", res);
}

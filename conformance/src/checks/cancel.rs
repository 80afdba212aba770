//! §8.4 cancel: the submitter withdraws an open ask; idempotent re-cancel; 409 with the existing
//! outcome after another terminal; tasks are not cancellable. (Cross-principal cancel is §9.1,
//! in [`super::authz`]; cancel vs expiry is §7, in [`super::lifecycle`].)

use ma2h_protocol::schema::{self, SchemaKind};
use serde_json::json;

use super::Ctx;
use crate::report::{Report, ensure};

pub async fn run(cx: &Ctx, r: &mut Report) {
    let key = &cx.cfg.agent_key;

    let id = cx.submit_ok(&cx.ask("cancel")).await;
    let first = match &id {
        Ok(id) => Some(cx.hub.cancel(key, id).await),
        Err(_) => None,
    };
    let res = (|| {
        let id = id.clone()?;
        let c = first.clone().ok_or("no cancel")?;
        c.expect(200, None)?;
        ensure(c.body["id"] == json!(id) && c.body["status"] == "cancelled", || {
            format!("expected {{id, status: cancelled}}, got {}", c.body)
        })
    })();
    r.result("8.4", "the submitter cancels an open ask: 200 {id, status: cancelled}", res);

    if let (Ok(id), Some(first)) = (&id, &first) {
        let read = cx.hub.read(key, id).await;
        let res = (|| {
            read.expect(200, None)?;
            ensure(read.body["status"] == "cancelled", || format!("status {}", read.body["status"]))?;
            let resp = &read.body["response"];
            schema::validate(SchemaKind::Response, resp).map_err(|e| format!("response schema: {e}"))?;
            ensure(resp["resolution"] == "cancelled", || format!("resolution {}", resp["resolution"]))
        })();
        r.result("8.4", "a cancel emits a pullable `cancelled` Response", res);

        let again = cx.hub.cancel(key, id).await;
        let res = again.expect(200, None).and_then(|()| {
            ensure(again.body["status"] == first.body["status"] && again.body["id"] == first.body["id"], || {
                format!("re-cancel answered {}", again.body)
            })
        });
        r.result("8.4", "re-cancelling a cancelled ask returns the same 200", res);
    }

    // after a different terminal: 409 with the existing {id, status, resolution}
    let res = async {
        let id = cx.submit_ok(&cx.ask("cancel-late")).await?;
        cx.answer(&id, "ship").await.expect(200, None).map_err(|e| format!("resolve: {e}"))?;
        let c = cx.hub.cancel(key, &id).await;
        c.expect(409, Some("already_terminal"))?;
        ensure(
            c.body["id"] == json!(id) && c.body["status"] == "answered" && c.body["resolution"] == "answered",
            || format!("409 body lacks the existing {{id, status, resolution}}: {}", c.body),
        )
    }
    .await;
    r.result("8.4", "a cancel after another terminal is 409 already_terminal with the existing outcome", res);

    // tasks are not cancellable (ask-only, §7)
    let res = async {
        let id = cx.submit_ok(&cx.task("cancel-task")).await?;
        let c = cx.hub.cancel(key, &id).await;
        let read = cx.hub.read(key, &id).await;
        cx.close(&id).await;
        ensure((400..500).contains(&c.status), || format!("cancel of a task answered {}", c.show()))?;
        ensure(read.body["status"] == "open", || format!("the task is now {}", read.body["status"]))
    }
    .await;
    r.result("8.4", "a task is not cancellable (4xx, stays open)", res);
}

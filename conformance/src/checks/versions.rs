//! §8.0 discovery and §10 versioning: the capability document, accepted minors, unknown fields,
//! and push version parity for pull (the push side is in [`super::push`] and the vectors).

use ma2h_protocol::schema::{self, SchemaKind};
use serde_json::json;

use super::{Ctx, ack_id};
use crate::client::Resp;
use crate::report::{Report, ensure};

pub async fn run(cx: &Ctx, r: &mut Report, probe: &Resp) {
    // §8.0: the capability document is public, valid, and names the version.
    let doc = (|| {
        probe.expect(200, None)?;
        schema::validate(SchemaKind::Capability, &probe.body).map_err(|e| format!("capability schema: {e}"))?;
        let v = probe.body["ma2h_version"].as_str().unwrap_or_default();
        ensure(v == "0.5", || format!("ma2h_version is {v:?}, expected \"0.5\""))
    })();
    r.result("8.0", "GET /.well-known/ma2h is a schema-valid capability document for 0.5", doc);

    // §10: within the recognized major, earlier minors (0.3, 0.4) are accepted…
    for v in ["0.3", "0.4"] {
        let mut e = cx.notify();
        e["ma2h_version"] = json!(v);
        let res = ack_id(&cx.hub.submit(&cx.cfg.agent_key, &e).await).map(drop);
        r.result("10", &format!("a {v} envelope is accepted within major 0"), res);
    }
    // …and a later minor SHOULD be (robustness).
    let mut e = cx.notify();
    e["ma2h_version"] = json!("0.9");
    let resp = cx.hub.submit(&cx.cfg.agent_key, &e).await;
    if resp.status == 202 {
        r.result("10", "an unknown minor (0.9) is accepted (SHOULD)", Ok(()));
    } else {
        r.skip("10", "an unknown minor (0.9) is accepted (SHOULD)", &format!("refused with {}", resp.show()));
    }

    // §10: unknown fields are ignored, not rejected.
    let mut e = cx.notify();
    e["x_conformance_future_field"] = json!({ "nested": [1, 2, 3] });
    e["agent"]["x_future"] = json!("yes");
    let res = ack_id(&cx.hub.submit(&cx.cfg.agent_key, &e).await).map(drop);
    r.result("10", "unknown fields are ignored (robustness principle)", res);

    // §10 push parity applies to push only: a pre-0.3 *pull* ask stays compatible.
    let mut e = cx.ask("pre03-pull");
    e["ma2h_version"] = json!("0.2");
    e["request"]["callback"] = json!({ "mode": "pull" });
    let res = ack_id(&cx.hub.submit(&cx.cfg.agent_key, &e).await);
    if let Ok(id) = &res {
        cx.close(id).await;
    }
    r.result("10", "a pre-0.3 ask with a pull callback is accepted (parity gates push only)", res.map(drop));
}

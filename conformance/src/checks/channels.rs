//! The Hub's channel extension (issue 20; docs/channels.md), black-box: answers that arrive from
//! outside the API — a Slack button press, an email's answer link — carry no Hub credential, so
//! what authenticates them must hold. §9.1: the actor is attested by the Hub, never taken from a
//! request. Skipped on a Hub without the extension (the routes answer 404).

use serde_json::Value;

use super::Ctx;
use crate::report::{Report, ensure};

const SLACK: &str = "/v1/integrations/slack/interactions";

pub async fn run(cx: &Ctx, r: &mut Report) {
    let name = "a Slack interaction without Slack's signature is refused (401 unauthenticated)";
    let unsigned = cx.hub.call("POST", SLACK, None, Some(&Value::String("payload={}".into()))).await;
    if unsigned.status == 404 {
        r.skip("9.1", name, "this Hub has no Slack integration (404)");
        return;
    }
    r.result("9.1", name, unsigned.expect(401, Some("unauthenticated")));

    // A well-formed but forged signature over a fresh timestamp: still refused, and the same
    // refusal as an unsigned one (nothing tells a forger how close they came).
    let forged = cx.hub.slack_interaction(SLACK, "payload=%7B%7D", "v0=00ff").await;
    r.result(
        "9.1",
        "a Slack interaction with a forged signature is refused (401)",
        forged.expect(401, Some("unauthenticated")),
    );

    // An email answer link the Hub did not seal: not found, and a GET never changes anything.
    let (status, ct, _) = cx.hub.get_text("/a/bm90LWEtdG9rZW4", "").await;
    let res = ensure(status == 404 && ct.starts_with("text/html"), || format!("GET /a/<forged>: {status} {ct}"));
    r.result("9.1", "an email answer link the Hub did not seal is refused (404 page)", res);
}

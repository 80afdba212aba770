//! Push obligations with the runner's own receiver: §8.3 delivery on resolution and cancel,
//! retry on 5xx with the same `resolution_id`, no retry on 4xx, pull stays authoritative; §9.2
//! signatures verified against the context rebuilt from OUR callback URL and the received body;
//! §9.4 unbound hosts; §10 push parity (a 0.3 push is accepted). The bearer/apikey schemes are
//! in [`push_tokens`].
//!
//! Needs `--callback-host` (bound to the first agent with `admin bind-callback`) and
//! `--callback-secret` (registered under `--callback-secret-ref` with `admin put-secret`).

use std::collections::HashSet;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use ma2h_protocol::schema::{self, SchemaKind};
use ma2h_protocol::signature::{self, SignedContext, VerifyingKey};
use serde_json::{Value, json};

use super::{Ctx, ack_id, push_tokens};
use crate::receiver::{Hit, Receiver};
use crate::report::{Report, ensure};

const NEEDS: &str = "needs --callback-host and --callback-secret (a receiver the Hub can reach)";

/// The checks this module performs, for SKIP lines when it cannot run.
const CHECKS: [(&str, &str); 9] = [
    ("8.3", "the Response is pushed to the callback on resolution"),
    ("9.2", "the push carries a valid MA2H-Signature over the rebuilt signed_context"),
    ("9.2", "the signature binds the payload (a tampered value fails to verify)"),
    ("8.3", "the pushed Response is schema-valid and matches the GET (same resolution_id)"),
    ("8.3", "a 5xx is retried with the same resolution_id and a fresh jti"),
    ("8.3", "a 4xx is not retried, and the Response stays pullable"),
    ("8.4", "a cancel emits a pushed `cancelled` Response"),
    ("10", "a 0.3 push callback is accepted and its Response verifies"),
    ("9.4", "a push callback whose secret_ref is not registered for the agent is refused"),
];

/// Every push check; the token-scheme checks ([`push_tokens`]) share the receiver.
pub async fn run(cx: &Ctx, r: &mut Report, capability: &Value) {
    unbound_host(cx, r).await;
    let (Some(host), Some(secret)) = (&cx.cfg.callback_host, &cx.cfg.callback_secret) else {
        for (section, name) in CHECKS.into_iter().chain(push_tokens::CHECKS) {
            r.skip(section, name, NEEDS);
        }
        return;
    };
    let rx = match Receiver::start(host, &cx.cfg.callback_listen, cx.cfg.callback_public_url.as_deref()).await {
        Ok(rx) => rx,
        Err(e) => {
            for (section, name) in CHECKS.into_iter().chain(push_tokens::CHECKS) {
                r.skip(section, name, &format!("cannot start the receiver on {}: {e}", cx.cfg.callback_listen));
            }
            return;
        }
    };
    let keys = vec![VerifyingKey::Hmac(secret.as_bytes().to_vec())];
    let wait = Duration::from_secs(cx.cfg.push_wait_seconds);
    let n = &cx.nonce;

    // submit everything first so deliveries overlap
    let (p_ok, p_retry, p_4xx, p_cancel, p_03) =
        (format!("ok-{n}"), format!("retry-{n}"), format!("client-{n}"), format!("cancel-{n}"), format!("v03-{n}"));
    rx.script(&p_retry, &[503]);
    rx.script(&p_4xx, &[400]);
    let hmac = json!({ "scheme": "hmac", "secret_ref": cx.cfg.callback_secret_ref });
    let ok = submit_answer(cx, &rx, &p_ok, "0.5", hmac.clone(), true).await;
    let retry = submit_answer(cx, &rx, &p_retry, "0.5", hmac.clone(), true).await;
    let client = submit_answer(cx, &rx, &p_4xx, "0.5", hmac.clone(), true).await;
    let cancel = submit_answer(cx, &rx, &p_cancel, "0.5", hmac.clone(), false).await;
    let v03 = submit_answer(cx, &rx, &p_03, "0.3", hmac, true).await;

    // delivery, signature, payload binding, GET parity
    let hits = rx.wait_for(&p_ok, 1, wait).await;
    let url = rx.url(&p_ok);
    let first = ok.clone().and_then(|_| hits.first().cloned().ok_or(format!("no push within {wait:?}")));
    r.result("8.3", CHECKS[0].1, first.clone().map(drop));
    r.result("9.2", CHECKS[1].1, first.clone().and_then(|h| verify(&h, &url, &keys)));
    let tampered = first.clone().and_then(|mut h| {
        h.body["response"]["value"] = json!("hold");
        ensure(verify(&h, &url, &keys).is_err(), || "a tampered value still verifies".into())?;
        h.body["response"]["value"] = json!("ship");
        ensure(verify(&h, "https://elsewhere.invalid/cb", &keys).is_err(), || "verifies for another URL".into())
    });
    r.result("9.2", CHECKS[2].1, tampered);
    let parity = async {
        let (id, h) = (ok.clone()?, first.clone()?);
        schema::validate(SchemaKind::Response, &h.body).map_err(|e| format!("response schema: {e}"))?;
        let read = cx.hub.read(&cx.cfg.agent_key, &id).await;
        ensure(read.body["response"]["resolution_id"] == h.body["resolution_id"], || "resolution_id differs".into())?;
        ensure(read.body["response"]["response"] == h.body["response"], || "response differs from the GET".into())?;
        ensure(h.body["state"] == json!({ "conformance": cx.nonce, "n": 0.1 }), || "state not verbatim".into())
    }
    .await;
    r.result("8.3", CHECKS[3].1, parity);

    // 5xx → retried, same resolution_id, fresh jti, every attempt signed
    let hits = rx.wait_for(&p_retry, 2, wait).await;
    let url = rx.url(&p_retry);
    let res = retry.clone().and_then(|_| {
        ensure(hits.len() >= 2, || format!("{} attempt(s) after a 503 within {wait:?}", hits.len()))?;
        hits.iter().try_for_each(|h| verify(h, &url, &keys))?;
        let rids: HashSet<_> = hits.iter().map(|h| h.body["resolution_id"].to_string()).collect();
        let jtis: HashSet<_> = hits.iter().map(|h| jti(h).unwrap_or_default()).collect();
        ensure(rids.len() == 1, || "resolution_id changed between attempts".into())?;
        ensure(jtis.len() == hits.len(), || "a jti was reused across attempts".into())
    });
    r.result("8.3", CHECKS[4].1, res);

    // 4xx → not retried; the Response stays pullable
    let hits = rx.wait_for(&p_4xx, 1, wait).await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = rx.hits(&p_4xx);
    let res = async {
        let id = client.clone()?;
        ensure(!hits.is_empty(), || format!("no push within {wait:?}"))?;
        ensure(after.len() == 1, || format!("{} attempts after a 400", after.len()))?;
        let read = cx.hub.read(&cx.cfg.agent_key, &id).await;
        ensure(read.body["status"] == "answered" && read.body["response"].is_object(), || {
            format!("GET after the failed push: {}", read.show())
        })
    }
    .await;
    r.result("8.3", CHECKS[5].1, res);

    // a cancel is pushed like a resolve
    let hits = rx.wait_for(&p_cancel, 1, wait).await;
    let url = rx.url(&p_cancel);
    let res = cancel.and_then(|_| {
        let h = hits.first().ok_or(format!("no push within {wait:?}"))?;
        verify(h, &url, &keys)?;
        ensure(h.body["resolution"] == "cancelled", || format!("pushed resolution {}", h.body["resolution"]))
    });
    r.result("8.4", CHECKS[6].1, res);

    // §10: 0.3 shares the payload-bound signature → accepted and verifiable
    let hits = rx.wait_for(&p_03, 1, wait).await;
    let url = rx.url(&p_03);
    let res = v03.and_then(|_| {
        let h = hits.first().ok_or(format!("no push within {wait:?}"))?;
        verify(h, &url, &keys)
    });
    r.result("10", CHECKS[7].1, res);

    // §9.4: a credential is attached only via the agent's registered secrets
    let mut e = cx.ask("unregistered-secret");
    e["request"]["callback"] = json!({ "mode": "push", "url": rx.url("never"),
        "auth": { "scheme": "hmac", "secret_ref": format!("conformance-missing-{n}") } });
    let resp = cx.hub.submit(&cx.cfg.agent_key, &e).await;
    if let Some(id) = resp.body["id"].as_str() {
        cx.close(id).await;
    }
    r.result("9.4", CHECKS[8].1, ensure((400..500).contains(&resp.status), || format!("answered {}", resp.show())));

    push_tokens::run(cx, r, &rx, capability).await;
}

/// §9.4: a push to a host nobody bound must not be accepted for delivery with a credential.
async fn unbound_host(cx: &Ctx, r: &mut Report) {
    const NAME: &str = "a push callback to a host not bound to the agent is refused";
    let mut e = cx.ask("unbound-host");
    e["request"]["callback"] = json!({ "mode": "push", "url": format!("https://unbound-{}.invalid/ma2h", cx.nonce),
        "auth": { "scheme": "hmac", "secret_ref": cx.cfg.callback_secret_ref } });
    let resp = cx.hub.submit(&cx.cfg.agent_key, &e).await;
    match ack_id(&resp) {
        Ok(id) => {
            cx.close(&id).await;
            r.skip("9.4", NAME, "accepted at submit; a delivery-time refusal is not observable black-box");
        }
        Err(_) => r.result("9.4", NAME, ensure((400..500).contains(&resp.status), || resp.show())),
    }
}

/// Submit an ask declaring `version` with a push callback to `path` and `auth`; answer it (or
/// cancel when `!answer`).
pub(super) async fn submit_answer(
    cx: &Ctx,
    rx: &Receiver,
    path: &str,
    version: &str,
    auth: Value,
    answer: bool,
) -> Result<String, String> {
    let mut e = cx.ask(&format!("push-{path}"));
    e["ma2h_version"] = json!(version);
    e["request"]["callback"] = json!({ "mode": "push", "url": rx.url(path), "auth": auth });
    let id = cx.submit_ok(&e).await?;
    let resp = if answer { cx.answer(&id, "ship").await } else { cx.hub.cancel(&cx.cfg.agent_key, &id).await };
    resp.expect(200, None).map_err(|e| format!("terminal: {e}"))?;
    Ok(id)
}

fn jti(hit: &Hit) -> Option<String> {
    signature::parse_header(hit.signature.as_deref()?).ok().map(|p| p.jti)
}

/// The agent-side §9.2 check: rebuild the context from OUR callback URL and the received body,
/// recompute `payload_sha256`, check the ±120 s window, verify.
pub(super) fn verify(hit: &Hit, callback_url: &str, keys: &[VerifyingKey]) -> Result<(), String> {
    let header = hit.signature.as_deref().ok_or("no MA2H-Signature header")?;
    let parsed = signature::parse_header(header).map_err(|e| format!("header: {e}"))?;
    let ctx = SignedContext::for_response(&hit.body, callback_url, &parsed.jti, &parsed.t)?;
    let now = SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs() as i64;
    signature::check_window(parsed.t_unix, now, 120).map_err(|e| e.to_string())?;
    signature::verify(&ctx, &parsed.v1, keys).map_err(|e| e.to_string())
}

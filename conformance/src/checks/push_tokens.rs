//! §9.2 "the Hub MUST sign every pushed Response, for every `callback.auth.scheme`" with the
//! token schemes: a `bearer` / `apikey` push carries the token registered under `token_ref`
//! (§9.4: by reference, never inline) and an `MA2H-Signature` that verifies with the agent's keys
//! — the Hub's Ed25519 keys published in the capability document (§8.0), plus the agent's
//! Hub-issued signing secret when `--signing-secret` is given.
//!
//! Needs `--token` (registered under `--token-ref` for the first agent with `admin put-secret`)
//! and the receiver of the push checks.

use std::time::Duration;

use ma2h_protocol::signature::VerifyingKey;
use serde_json::{Value, json};

use super::Ctx;
use super::push::{submit_answer, verify};
use crate::receiver::{Hit, Receiver};
use crate::report::{Report, ensure};

pub const CHECKS: [(&str, &str); 4] = [
    ("9.2", "a bearer push carries `Authorization: Bearer <token>` and a signature verifying with the agent's keys"),
    ("9.2", "an apikey push carries the token in the API-key header and a signature verifying with the agent's keys"),
    ("9.2", "a bearer push's signature binds the payload (a tampered value fails to verify)"),
    ("9.4", "a bearer callback whose token_ref is not registered for the agent is refused"),
];

/// Run the token-scheme checks against the push checks' receiver.
pub async fn run(cx: &Ctx, r: &mut Report, rx: &Receiver, capability: &Value) {
    let Some(token) = &cx.cfg.token else {
        for (section, name) in CHECKS {
            r.skip(section, name, "needs --token (registered for the first agent under --token-ref)");
        }
        return;
    };
    let mut keys = VerifyingKey::published(capability);
    let published = keys.len();
    if let Some(secret) = &cx.cfg.signing_secret {
        keys.push(VerifyingKey::Hmac(secret.as_bytes().to_vec()));
    }
    let explain = |e: String| {
        let hmac = if cx.cfg.signing_secret.is_some() { " and the signing secret" } else { " (no --signing-secret)" };
        format!("{e} — tried {published} published Ed25519 key(s){hmac}")
    };
    // §8.0 hub extension naming the API-key header; X-API-Key is this Hub's default.
    let api_header = capability["api_key_header"].as_str().unwrap_or("X-API-Key").to_owned();
    let wait = Duration::from_secs(cx.cfg.push_wait_seconds);
    let auth = |scheme: &str| json!({ "scheme": scheme, "token_ref": cx.cfg.token_ref });
    let (p_bearer, p_apikey) = (format!("bearer-{}", cx.nonce), format!("apikey-{}", cx.nonce));
    let bearer = submit_answer(cx, rx, &p_bearer, "0.5", auth("bearer"), true).await;
    let apikey = submit_answer(cx, rx, &p_apikey, "0.5", auth("apikey"), true).await;

    let url = rx.url(&p_bearer);
    let first = first_hit(bearer, rx.wait_for(&p_bearer, 1, wait).await, wait);
    let res = first.clone().and_then(|h| {
        token_header(&h, "Authorization", &format!("Bearer {token}"))?;
        verify(&h, &url, &keys).map_err(explain)
    });
    r.result("9.2", CHECKS[0].1, res);

    let url_k = rx.url(&p_apikey);
    let res = first_hit(apikey, rx.wait_for(&p_apikey, 1, wait).await, wait).and_then(|h| {
        token_header(&h, &api_header, token)?;
        ensure(h.header("authorization").is_none(), || "an apikey push also sent an Authorization header".into())?;
        verify(&h, &url_k, &keys).map_err(explain)
    });
    r.result("9.2", CHECKS[1].1, res);

    let res = first.and_then(|mut h| {
        verify(&h, &url, &keys).map_err(explain)?;
        h.body["response"]["value"] = json!("hold");
        ensure(verify(&h, &url, &keys).is_err(), || "a tampered value still verifies".into())
    });
    r.result("9.2", CHECKS[2].1, res);

    let mut e = cx.ask("unregistered-token");
    e["request"]["callback"] = json!({ "mode": "push", "url": rx.url("never"),
        "auth": { "scheme": "bearer", "token_ref": format!("conformance-missing-{}", cx.nonce) } });
    let resp = cx.hub.submit(&cx.cfg.agent_key, &e).await;
    if let Some(id) = resp.body["id"].as_str() {
        cx.close(id).await;
    }
    r.result("9.4", CHECKS[3].1, ensure((400..500).contains(&resp.status), || format!("answered {}", resp.show())));
}

fn first_hit(submitted: Result<String, String>, hits: Vec<Hit>, wait: Duration) -> Result<Hit, String> {
    submitted.and_then(|_| hits.into_iter().next().ok_or(format!("no push within {wait:?}")))
}

/// `name` must carry exactly `want`; the failure message never shows the token.
fn token_header(hit: &Hit, name: &str, want: &str) -> Result<(), String> {
    match hit.header(name) {
        None => Err(format!("no {name} header")),
        Some(got) if got == want => Ok(()),
        Some(_) => Err(format!("the {name} header does not carry the registered token")),
    }
}

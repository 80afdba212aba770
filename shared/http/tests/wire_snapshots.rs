//! Wire snapshots: the exact bytes of a representative body of every kind the Hub sends —
//! capability, acks, message reads with each track, terminals, errors, listings, sessions,
//! directives, drains of every entry kind, presence, stops and the inter-agent policy — taken
//! from one scripted run and compared with `tests/snapshots/wire.txt`. Minted ids and signatures
//! differ per run, so each is replaced by a numbered placeholder (the same id keeps its number);
//! everything else — key order, `null` against absent, number text — must match byte for byte.
//!
//! A deliberate wire change is re-recorded with `MA2H_BLESS=1 cargo test -p ma2h-http --test
//! wire_snapshots` and reviewed in the diff.

mod common;

use std::collections::HashMap;

use axum::body::Body;
use axum::http::{Method, Request};
use chrono::Duration;
use common::{TestHub, ask, hub, notify, task};
use http_body_util::BodyExt;
use serde_json::{Value, json};
use tower::ServiceExt;

/// The recorded bodies, in order, with placeholders for what each run mints.
#[derive(Default)]
struct Record {
    text: String,
    names: HashMap<String, String>,
}

impl Record {
    /// Call the Router and record `name`, the status and the raw body; the parsed body is returned.
    async fn call(
        &mut self,
        h: &TestHub,
        name: &str,
        method: Method,
        uri: &str,
        key: &str,
        body: Option<Value>,
    ) -> Value {
        let req = Request::builder()
            .method(method)
            .uri(uri)
            .header("authorization", format!("Bearer {key}"))
            .header("content-type", "application/json")
            .body(body.map(|b| Body::from(serde_json::to_vec(&b).unwrap())).unwrap_or_else(Body::empty))
            .unwrap();
        let resp = h.app.clone().oneshot(req).await.unwrap();
        let status = resp.status().as_u16();
        let bytes = resp.into_body().collect().await.unwrap().to_bytes();
        let mut text = String::from_utf8(bytes.to_vec()).unwrap();
        let parsed: Value = serde_json::from_str(&text).unwrap_or(Value::Null);
        if let Some(cursor) = parsed["next_cursor"].as_str() {
            // It encodes a minted id.
            text = text.replace(cursor, "<cursor>");
        }
        let masked = self.mask(&text);
        self.text.push_str(&format!("=== {name} {status}\n{masked}\n"));
        parsed
    }

    /// Replace minted ids (`msg_…`, `res_…`, `sess_…`, `dir_…`, `rcpt_…`) and signature values
    /// by placeholders numbered in order of first appearance.
    fn mask(&mut self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut rest = text;
        'scan: while !rest.is_empty() {
            for prefix in ["msg_", "res_", "sess_", "dir_", "rcpt_", "t=", "jti=", "v1="] {
                let boundary = out.chars().last().is_none_or(|c| !c.is_ascii_alphanumeric());
                if boundary && rest.starts_with(prefix) {
                    let len = rest[prefix.len()..]
                        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '-' || c == '_'))
                        .unwrap_or(rest.len() - prefix.len());
                    if len > 0 {
                        let token = &rest[..prefix.len() + len];
                        let n = self.names.len() + 1;
                        let kind = prefix.trim_end_matches(['_', '=']);
                        let name = self.names.entry(token.to_owned()).or_insert_with(|| format!("<{kind}{n}>"));
                        out.push_str(&match prefix.ends_with('=') {
                            true => format!("{prefix}{name}"),
                            false => name.clone(),
                        });
                        rest = &rest[prefix.len() + len..];
                        continue 'scan;
                    }
                }
            }
            let c = rest.chars().next().unwrap();
            out.push(c);
            rest = &rest[c.len_utf8()..];
        }
        out
    }
}

fn id(v: &Value, pointer: &str) -> String {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or_else(|| panic!("{pointer} in {v}")).to_owned()
}

/// Every body kind once, through one scripted run on a fresh Hub.
async fn script() -> String {
    let h = hub().await;
    let (bot, other, op) = (h.agent.clone(), h.other_agent.clone(), h.operator.clone());
    let mut r = Record::default();
    r.call(&h, "capability", Method::GET, "/.well-known/ma2h", &bot, None).await;

    // §8.1/§8.2: an ask, its replay, its open read, its answer and its terminal read.
    let ack = r.call(&h, "submit ask", Method::POST, "/v1/messages", &bot, Some(ask("k-1"))).await;
    let ask_id = id(&ack, "/id");
    r.call(&h, "submit replay", Method::POST, "/v1/messages", &bot, Some(ask("k-1"))).await;
    r.call(&h, "get open ask", Method::GET, &format!("/v1/messages/{ask_id}"), &bot, None).await;
    let answer = json!({"resolution": "answered", "value": "ship", "comment": "go"});
    r.call(&h, "resolve ask", Method::POST, &format!("/v1/messages/{ask_id}/resolve"), &op, Some(answer)).await;
    r.call(&h, "get answered ask", Method::GET, &format!("/v1/messages/{ask_id}"), &bot, None).await;
    r.call(&h, "ack response", Method::POST, &format!("/v1/messages/{ask_id}/ack"), &bot, Some(json!({"note": "ok"})))
        .await;
    r.call(&h, "get acked ask", Method::GET, &format!("/v1/messages/{ask_id}"), &bot, None).await;
    r.call(&h, "cancel terminal", Method::POST, &format!("/v1/messages/{ask_id}/cancel"), &bot, None).await;

    // A task cancelled, a notify, a refused envelope, an unknown id.
    let t = r.call(&h, "submit task", Method::POST, "/v1/messages", &bot, Some(task("k-2"))).await;
    r.call(&h, "cancel task", Method::POST, &format!("/v1/messages/{}/cancel", id(&t, "/id")), &bot, None).await;
    // Distinct times keep the listing's order (ties go by random id) the same every run.
    h.advance(Duration::seconds(1));
    let c = r.call(&h, "submit ask to cancel", Method::POST, "/v1/messages", &bot, Some(ask("k-4"))).await;
    r.call(&h, "cancel ask", Method::POST, &format!("/v1/messages/{}/cancel", id(&c, "/id")), &bot, None).await;
    h.advance(Duration::seconds(1));
    r.call(&h, "submit notify", Method::POST, "/v1/messages", &bot, Some(notify())).await;
    let bad = json!({"ma2h_version": "0.5", "type": "ask", "title": 7});
    r.call(&h, "submit invalid", Method::POST, "/v1/messages", &bot, Some(bad)).await;
    r.call(&h, "get unknown", Method::GET, "/v1/messages/msg_01J0000000000000000000000Z", &bot, None).await;
    r.call(&h, "listing", Method::GET, "/v1/operator/messages?counts=true", &op, None).await;
    r.call(&h, "listing resolved", Method::GET, "/v1/operator/messages?status=resolved&limit=1", &op, None).await;

    // §16 sessions, §8.7 directives and drains, §15 presence, §16.4.1 stops.
    let s = r
        .call(
            &h,
            "register session",
            Method::POST,
            "/v1/sessions",
            &other,
            Some(json!({"run_id": "r-9", "label": "worker", "labels": {"team": "ops"}, "ttl_seconds": 600})),
        )
        .await;
    let sess = id(&s, "/session/id");
    r.call(&h, "get session", Method::GET, &format!("/v1/sessions/{sess}"), &other, None).await;
    r.call(&h, "list sessions", Method::GET, "/v1/sessions", &other, None).await;
    let directive = json!({"to": "agent:other", "title": "Pause the consumer", "body": "Until **noon**.", "priority": "high", "tags": ["ops"]});
    let d = r.call(&h, "send directive", Method::POST, "/v1/operator/directives", &op, Some(directive)).await;
    let dir_id = id(&d, "/id");
    r.call(&h, "drain directive", Method::GET, &format!("/v1/inbox?session={sess}"), &other, None).await;
    r.call(&h, "track delivered", Method::GET, &format!("/v1/operator/directives/{dir_id}"), &op, None).await;
    r.call(
        &h,
        "inbox ack",
        Method::POST,
        &format!("/v1/inbox/ack?session={sess}"),
        &other,
        Some(json!({"ids": [dir_id], "note": "paused"})),
    )
    .await;
    r.call(&h, "track acknowledged", Method::GET, &format!("/v1/operator/directives/{dir_id}"), &op, None).await;
    r.call(&h, "presence", Method::GET, "/v1/agents/other/presence", &op, None).await;
    r.call(&h, "presence unknown", Method::GET, "/v1/agents/nobody/presence", &op, None).await;

    // §8.0 inter-agent: opt in, an addressed ask, its drain, its answer and the response entry.
    r.call(&h, "policy", Method::GET, "/v1/operator/inter-agent", &op, None).await;
    let policy = json!({"enabled": true, "allowlists": {"other": ["bot"]}});
    r.call(&h, "policy patched", Method::PATCH, "/v1/operator/inter-agent", &op, Some(policy)).await;
    let b = r.call(&h, "register sender session", Method::POST, "/v1/sessions", &bot, Some(json!({}))).await;
    let bot_sess = id(&b, "/session/id");
    let mut addressed = ask("k-3");
    addressed["to"] = json!("agent:other");
    addressed["agent"]["session"] = json!(bot_sess);
    addressed["request"]["allowed_resolvers"] = json!(["agent:other"]);
    let a = r.call(&h, "submit addressed", Method::POST, "/v1/messages", &bot, Some(addressed)).await;
    let msg = id(&a, "/id");
    r.call(&h, "get queued", Method::GET, &format!("/v1/messages/{msg}"), &bot, None).await;
    r.call(&h, "drain message", Method::GET, &format!("/v1/inbox?session={sess}"), &other, None).await;
    let reply = json!({"resolution": "answered", "value": "hold"});
    r.call(
        &h,
        "resolve addressed",
        Method::POST,
        &format!("/v1/messages/{msg}/resolve?session={sess}"),
        &other,
        Some(reply),
    )
    .await;
    r.call(&h, "drain response", Method::GET, &format!("/v1/inbox?session={bot_sess}"), &bot, None).await;

    // A bounce: an addressed notify to the session, which closes before acking it.
    let mut n = notify();
    n["to"] = json!(format!("agent:other#{sess}"));
    n["agent"]["session"] = json!(bot_sess);
    r.call(&h, "submit to session", Method::POST, "/v1/messages", &bot, Some(n)).await;
    r.call(&h, "close session", Method::DELETE, &format!("/v1/sessions/{sess}"), &other, None).await;
    r.call(&h, "drain receipt", Method::GET, &format!("/v1/inbox?session={bot_sess}"), &bot, None).await;

    r.call(&h, "stop", Method::POST, "/v1/agents/other/stop", &op, Some(json!({}))).await;
    r.call(&h, "stop status", Method::GET, "/v1/agents/other/stop", &op, None).await;
    r.call(&h, "stop lifted", Method::DELETE, "/v1/agents/other/stop", &op, None).await;
    h.advance(Duration::hours(1));
    r.call(&h, "get session expired", Method::GET, &format!("/v1/sessions/{bot_sess}"), &bot, None).await;
    r.text
}

#[tokio::test]
async fn every_body_kind_keeps_its_recorded_bytes() {
    let got = script().await;
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/snapshots/wire.txt");
    if std::env::var("MA2H_BLESS").as_deref() == Ok("1") {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, &got).unwrap();
        return;
    }
    let want = std::fs::read_to_string(&path).expect("tests/snapshots/wire.txt (MA2H_BLESS=1 records it)");
    for (i, (g, w)) in got.lines().zip(want.lines()).enumerate() {
        assert_eq!(g, w, "line {} of tests/snapshots/wire.txt differs", i + 1);
    }
    assert_eq!(got.lines().count(), want.lines().count(), "a body was added or dropped");
}

//! Malformed input through the Router never yields a 5xx (issue 7): the CI-bounded companion of the
//! cargo-fuzz targets in `fuzz/`, needing no fuzzer and no nightly.
//!
//! The project's own conformance vectors (`conformance/vectors/*.json`) seed a deterministic
//! mutator — a xorshift PRNG with a constant seed, so every run sends exactly the same requests and
//! a failure reproduces by re-running the test. Each mutated body is POSTed with a valid credential
//! and the reply must be the success status (202 submit / 200 resolve) or a 4xx whose body is the
//! §8.5 envelope `{"error": {"code": <non-empty string>, "message": <string>}}`.
//!
//! The Hub never *parses* an `MA2H-Signature` header (it only emits them; agents verify), so the
//! header parser has no HTTP surface here: it is covered by the `signature_header` fuzz target and
//! the protocol crate's tests.

#[path = "../common/mod.rs"]
mod common;
mod mutate;

use std::collections::BTreeMap;

use axum::body::Body;
use axum::http::{Method, Request, StatusCode};
use common::*;
use http_body_util::BodyExt;
use ma2h_core::kernel::settings::Settings;
use mutate::{Rng, content_type, mutate};
use serde_json::{Value, json};
use tower::ServiceExt;

/// Mutated submits (plus the fixed oversize cases) and mutated resolves. Sized for well under
/// 20 s in a debug build on two cores.
const SUBMIT_CASES: usize = 4000;
const RESOLVE_CASES: usize = 2000;

/// Every vector's envelope, placeholders filled with the harness's agents (valid and invalid
/// vectors alike: a mutated invalid envelope is as good a probe as a mutated valid one).
fn vector_envelopes() -> Vec<(String, Value)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../conformance/vectors");
    let mut files: Vec<_> = std::fs::read_dir(dir).expect("conformance/vectors").map(|e| e.unwrap().path()).collect();
    files.sort();
    let envelopes: Vec<_> = files
        .iter()
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .map(|p| {
            let text = std::fs::read_to_string(p)
                .unwrap()
                .replace("\"$AGENT\"", "\"bot\"")
                .replace("\"$OTHER_AGENT\"", "\"other\"");
            let vector: Value = serde_json::from_str(&text).unwrap();
            (p.file_stem().unwrap().to_string_lossy().into_owned(), vector["envelope"].clone())
        })
        .collect();
    assert!(envelopes.len() >= 5, "expected the conformance vectors as seeds");
    envelopes
}

struct Outcome {
    status: StatusCode,
    body: Value,
}

async fn post(t: &TestHub, uri: &str, key: &str, content_type: Option<&str>, body: Vec<u8>) -> Outcome {
    let mut req = Request::builder().method(Method::POST).uri(uri).header("authorization", format!("Bearer {key}"));
    if let Some(ct) = content_type {
        req = req.header("content-type", ct);
    }
    let resp = t.app.clone().oneshot(req.body(Body::from(body)).unwrap()).await.unwrap();
    let status = resp.status();
    let bytes = resp.into_body().collect().await.unwrap().to_bytes();
    let body = serde_json::from_slice(&bytes).unwrap_or_else(|_| Value::String(String::from_utf8_lossy(&bytes).into()));
    Outcome { status, body }
}

/// The issue 7 contract for one reply.
fn assert_contract(what: &str, ok: StatusCode, sent: &[u8], r: &Outcome) {
    let shown = String::from_utf8_lossy(&sent[..sent.len().min(400)]);
    assert!(
        r.status == ok || r.status.is_client_error(),
        "{what}: got {} (want {ok} or 4xx) for body {shown:?}: {}",
        r.status,
        r.body
    );
    if r.status.is_client_error() {
        let code = r.body["error"]["code"].as_str().unwrap_or_default();
        assert!(!code.is_empty(), "{what}: {} without a §8.5 error code for {shown:?}: {}", r.status, r.body);
        assert!(r.body["error"]["message"].is_string(), "{what}: no error.message for {shown:?}: {}", r.body);
    }
}

/// Unlimited rate and inbox depth: the budget must not turn the probes into 429s before they reach
/// the parser.
async fn unlimited_hub() -> TestHub {
    hub_with(Settings { requests_per_minute: 0, inbox_depth: 0, ..settings() }).await
}

#[tokio::test]
async fn mutated_submits_get_202_or_a_4xx_envelope() {
    let t = unlimited_hub().await;
    let seeds = vector_envelopes();
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let mut seen: BTreeMap<u16, usize> = BTreeMap::new();

    for case in 0..SUBMIT_CASES {
        let (name, seed) = rng.pick(&seeds);
        let mut seed = seed.clone();
        // A fresh key per case, so a mutated ask is judged on its own rather than as a replay.
        if seed.get("idempotency_key").is_some() {
            seed["idempotency_key"] = json!(format!("fuzz-{case}"));
        }
        let body = mutate(&mut rng, &seed);
        let r = post(&t, "/v1/messages", &t.agent, content_type(&mut rng), body.clone()).await;
        assert_contract(&format!("submit case {case} (seed {name})"), StatusCode::ACCEPTED, &body, &r);
        *seen.entry(r.status.as_u16()).or_default() += 1;
    }

    // Oversize: a `body` just over its cap (422 from the rules), too many / too large context
    // Parts, and bodies beyond what the HTTP layer buffers at all (the extractor's 422).
    let limits = settings().limits;
    let max_request = settings().max_request_bytes();
    let notify = notify();
    let part = |bytes: usize| json!({ "kind": "text", "text": "p".repeat(bytes) });
    let oversized = [
        with(notify.clone(), "/body", json!("b".repeat(limits.max_body_bytes + 1))),
        with(notify.clone(), "/context", Value::Array(vec![part(10); limits.max_context_parts + 1])),
        with(notify.clone(), "/context", json!([part(limits.max_part_bytes + 1)])),
        with(notify.clone(), "/body", json!("b".repeat(max_request + 1))),
    ];
    let mut bodies: Vec<Vec<u8>> = oversized.iter().map(|v| serde_json::to_vec(v).unwrap()).collect();
    bodies.push(b"[".repeat(max_request + 1));
    bodies.push(vec![0xff; max_request + 1]);
    for (i, body) in bodies.into_iter().enumerate() {
        let r = post(&t, "/v1/messages", &t.agent, Some("application/json"), body.clone()).await;
        assert_contract(&format!("oversize case {i}"), StatusCode::ACCEPTED, &body, &r);
        assert!(r.status.is_client_error(), "oversize case {i} was accepted");
        *seen.entry(r.status.as_u16()).or_default() += 1;
    }

    // Hostile but well-formed (issue 13): backtracking or oversized patterns, too many
    // properties, patterned defaults of any length, state a double cannot hold, deep nesting.
    let input = |schema: Value, default: Value| {
        let request = json!({ "mode": "input", "schema": schema, "default_on_expire": default,
            "allowed_resolvers": ["human:alice"] });
        with(ask("hostile"), "/request", request)
    };
    let patterned = |p: &str| json!({ "type": "object", "properties": { "code": { "type": "string", "pattern": p } } });
    let many: serde_json::Map<String, Value> = (0..200).map(|i| (format!("p{i}"), json!({"type": "string"}))).collect();
    let nested = (0..300).fold(json!(1), |v, _| json!([v]));
    let hostile = [
        input(patterned("^(?=(a|aa)+$)(a|aa)+b$"), json!({ "code": "a".repeat(30_000) })),
        input(patterned(&"(a|aa)+".repeat(2_000)), Value::Null),
        input(patterned("^(a|aa)+$"), json!({ "code": "a".repeat(30_000) })),
        input(json!({ "type": "object", "properties": many }), Value::Null),
        with(notify.clone(), "/state", json!({ "deep": nested })),
    ];
    let mut bodies: Vec<Vec<u8>> = hostile.iter().map(|v| serde_json::to_vec(v).unwrap()).collect();
    let mut big_state = serde_json::to_string(&without(notify.clone(), "/state")).unwrap();
    big_state.insert_str(1, r#""state": {"n": 123456789012345678901234567890123456789},"#);
    bodies.push(big_state.into_bytes());
    for (i, body) in bodies.into_iter().enumerate() {
        let r = post(&t, "/v1/messages", &t.agent, Some("application/json"), body.clone()).await;
        assert_contract(&format!("hostile case {i}"), StatusCode::ACCEPTED, &body, &r);
        *seen.entry(r.status.as_u16()).or_default() += 1;
    }

    eprintln!("submit statuses: {seen:?}");
    for status in [202, 400, 403, 422] {
        assert!(seen.contains_key(&status), "the mutator never produced a {status}: {seen:?}");
    }
}

/// The resolvable messages, re-created whenever a mutated body happens to resolve one.
#[derive(Clone, Copy)]
enum Target {
    Select,
    Input,
    Confirm,
    Task,
}

const TARGETS: [Target; 4] = [Target::Select, Target::Input, Target::Confirm, Target::Task];

fn target_envelope(target: Target, key: &str) -> Value {
    let with_request = |request: Value| with(ask(key), "/request", request);
    match target {
        Target::Select => ask(key),
        Target::Input => with_request(json!({
            "mode": "input",
            "schema": { "type": "object", "required": ["reason"], "properties": {
                "reason": { "type": "string", "maxLength": 40 },
                "n": { "type": "integer", "minimum": 1 },
                "color": { "enum": ["red", "blue"] } } },
            "allowed_resolvers": ["human:alice"]
        })),
        Target::Confirm => with_request(json!({
            "mode": "confirm", "permissions": { "allow_ignore": false }, "allowed_resolvers": ["human:alice"]
        })),
        Target::Task => task(key),
    }
}

/// Valid resolve bodies, at least one per target (paired with the wrong target they probe the 422s).
fn resolve_seeds() -> Vec<Value> {
    vec![
        json!({ "resolution": "answered", "value": "ship", "comment": "go" }),
        json!({ "resolution": "declined", "comment": "not now" }),
        json!({ "resolution": "answered", "value": { "reason": "because", "n": 2, "color": "red" } }),
        json!({ "resolution": "answered", "value": "approve" }),
        json!({ "resolution": "completed", "checklist": [
            { "text": "Generate", "done": true }, { "text": "Deploy", "done": true } ] }),
        json!({ "resolution": "dismissed", "comment": "done elsewhere" }),
    ]
}

/// Submit a fresh `target` message (a new idempotency key each time) and return its id.
async fn open(t: &TestHub, target: Target, fresh: &mut usize) -> String {
    *fresh += 1;
    t.submit_ok(target_envelope(target, &format!("open-{fresh}"))).await
}

#[tokio::test]
async fn mutated_resolves_get_200_or_a_4xx_envelope() {
    let t = unlimited_hub().await;
    let mut rng = Rng(0xd1b5_4a32_d192_ed03);
    let mut fresh = 0usize;
    let mut ids = Vec::new();
    for target in TARGETS {
        ids.push(open(&t, target, &mut fresh).await);
    }
    let notify_id = t.submit_ok(notify()).await;
    let mut resolved: Vec<String> = Vec::new();
    let seeds = resolve_seeds();
    let mut seen: BTreeMap<u16, usize> = BTreeMap::new();

    for case in 0..RESOLVE_CASES {
        let slot = rng.below(TARGETS.len());
        // Mostly an open message; sometimes a resolved one (409), the notify (422) or a bad id (404).
        let id = match rng.below(20) {
            0 if !resolved.is_empty() => rng.pick(&resolved).clone(),
            1 => notify_id.clone(),
            2 => rng.pick(&["msg_nope", "%00", "msg_01HZZZZZZZZZZZZZZZZZZZZZZZ", "..%2F..%2Fetc"]).to_string(),
            _ => ids[slot].clone(),
        };
        let seed = rng.pick(&seeds);
        // Resolve bodies are small: keep one case in five unmutated so valid bodies really land.
        let body = if rng.percent(20) { serde_json::to_vec(seed).unwrap() } else { mutate(&mut rng, seed) };
        let uri = format!("/v1/messages/{id}/resolve");
        let r = post(&t, &uri, &t.operator, content_type(&mut rng), body.clone()).await;
        assert_contract(&format!("resolve case {case} ({uri})"), StatusCode::OK, &body, &r);
        *seen.entry(r.status.as_u16()).or_default() += 1;
        if r.status == StatusCode::OK {
            resolved.push(id.clone());
            if id == ids[slot] {
                ids[slot] = open(&t, TARGETS[slot], &mut fresh).await;
            }
        }
    }

    eprintln!("resolve statuses: {seen:?}");
    for status in [200, 400, 404, 409, 422] {
        assert!(seen.contains_key(&status), "the mutator never produced a {status}: {seen:?}");
    }
}

//! Criterion micro-benchmarks of the protocol crate's hot paths:
//!
//! - RFC 8785 canonicalization (`jcs::canonicalize`) of a typical §6 Response and §9.2 context,
//! - §9.2 signing/verifying: building the `SignedContext` from a Response, HMAC-SHA256 and Ed25519,
//! - submit parsing: `Envelope::parse` (JSON + JSON Schema + typed fields) and `rules::check_submit`.
//!
//! Run with `cargo bench -p ma2h-bench --bench protocol` (add `-- --quick` for a short run).
//! `cargo test --workspace` does not build or run these; `--all-targets`/`--benches` only compiles
//! them (and runs each benchmark once, as a smoke test, with `cargo test --benches`).

use std::hint::black_box;

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use ma2h_protocol::envelope::Envelope;
use ma2h_protocol::jcs;
use ma2h_protocol::rules::{self, SizeLimits};
use ma2h_protocol::signature::{self, SignedContext, SigningKey};
use serde_json::{Value, json};

/// A §6 Response as the Hub stores and pushes it (answered select, with sealed state).
fn response() -> Value {
    json!({
        "ma2h_version": "0.5",
        "in_reply_to": "msg_01JBENCH0000000000000000AA",
        "resolution_id": "res_01JBENCH0000000000000000BB",
        "agent": {"id": "deploybot/web", "run_id": "run-4121"},
        "resolution": "answered",
        "response": {
            "value": "ship",
            "edited": false,
            "actor": "human:alice",
            "resolved_at": "2026-06-04T15:48:30.123Z",
            "comment": "LGTM — the migration was reviewed on Tuesday; ship it before the freeze."
        },
        "defaulted": false,
        "state": {"sealed": "v1.xchacha20poly1305.Zm9vYmFyYmF6cXV4cXV1eGNvcmdlZ3JhdWx0Z2FycGx5d2FsZG8"}
    })
}

const CALLBACK_URL: &str = "https://hooks.deploybot.example/ma2h/resume";
const JTI: &str = "jti_3q2-7wEAAAAAAAAAAAAAAA";
const T: &str = "1780000000";

fn context() -> SignedContext {
    SignedContext::for_response(&response(), CALLBACK_URL, JTI, T).expect("a complete Response")
}

/// A typical durable ask (select with a push callback, tags, expiry) as an agent submits it.
fn ask_body() -> Vec<u8> {
    serde_json::to_vec(&json!({
        "ma2h_version": "0.5", "type": "ask", "created_at": "2026-06-04T12:00:00Z",
        "agent": {"id": "deploybot/web", "run_id": "run-4121", "runtime": "github-actions", "project": "web"},
        "title": "Ship build 412 to prod?",
        "body": "All 412 tests passed. The migration adds two nullable columns; rollback is a redeploy.",
        "priority": "high", "tags": ["deploy", "prod"],
        "expires_at": "2099-01-01T00:00:00Z",
        "idempotency_key": "ship-412",
        "request": {
            "mode": "select",
            "options": [{"value": "ship", "label": "Ship now"}, {"value": "hold", "label": "Hold"}],
            "default_on_expire": "hold",
            "allowed_resolvers": ["human:alice", "human:bob"],
            "callback": {"mode": "push", "url": CALLBACK_URL, "auth": {"scheme": "hmac", "secret_ref": "deploy-hmac"}}
        }
    }))
    .expect("serializes")
}

fn notify_body() -> Vec<u8> {
    serde_json::to_vec(&json!({
        "ma2h_version": "0.5", "type": "notify", "created_at": "2026-06-04T12:00:00Z",
        "agent": {"id": "deploybot/web", "run_id": "run-4121", "runtime": "cli"},
        "title": "Nightly build is green", "body": "All 412 tests passed."
    }))
    .expect("serializes")
}

fn jcs_benches(c: &mut Criterion) {
    let mut g = c.benchmark_group("jcs");
    let resp = response();
    g.throughput(Throughput::Bytes(jcs::canonicalize(&resp).len() as u64));
    g.bench_function("canonicalize/response", |b| b.iter(|| jcs::canonicalize(black_box(&resp))));
    let ctx = context().to_value();
    g.throughput(Throughput::Bytes(jcs::canonicalize(&ctx).len() as u64));
    g.bench_function("canonicalize/signed_context", |b| b.iter(|| jcs::canonicalize(black_box(&ctx))));
    g.throughput(Throughput::Elements(1));
    g.bench_function("payload_sha256/response", |b| {
        b.iter(|| jcs::payload_sha256(black_box(resp.get("response")), black_box(resp.get("state"))));
    });
    g.finish();
}

fn signature_benches(c: &mut Criterion) {
    let mut g = c.benchmark_group("signature");
    let resp = response();
    g.bench_function("for_response", |b| {
        b.iter(|| SignedContext::for_response(black_box(&resp), CALLBACK_URL, JTI, T).expect("complete"));
    });

    let ctx = context();
    let hmac = SigningKey::Hmac(b"whsec-bench-0123456789abcdef0123456789".to_vec());
    let ed = SigningKey::ed25519_from_seed(&[7u8; 32]);
    for (name, key) in [("hmac-sha256", &hmac), ("ed25519", &ed)] {
        let v1 = signature::sign(&ctx, key);
        let keys = [key.verifying_key()];
        g.bench_function(format!("sign/{name}"), |b| b.iter(|| signature::sign(black_box(&ctx), black_box(key))));
        g.bench_function(format!("verify/{name}"), |b| {
            b.iter(|| signature::verify(black_box(&ctx), black_box(&v1), black_box(&keys)).expect("verifies"));
        });
        // What a Hub push costs end to end: context from the stored Response, canonicalize, sign.
        g.bench_function(format!("push_signing/{name}"), |b| {
            b.iter(|| {
                let ctx = SignedContext::for_response(black_box(&resp), CALLBACK_URL, JTI, T).expect("complete");
                signature::sign(&ctx, key)
            });
        });
    }
    g.finish();
}

fn envelope_benches(c: &mut Criterion) {
    let mut g = c.benchmark_group("envelope");
    let now = ma2h_protocol::time::parse("2026-06-04T12:00:01Z").expect("valid time");
    let limits = SizeLimits::default();
    for (name, body) in [("ask", ask_body()), ("notify", notify_body())] {
        g.throughput(Throughput::Bytes(body.len() as u64));
        g.bench_function(format!("parse/{name}"), |b| b.iter(|| Envelope::parse(black_box(&body)).expect("valid")));
        let env = Envelope::parse(&body).expect("valid");
        g.bench_function(format!("value/{name}"), |b| {
            b.iter(|| serde_json::from_slice::<Value>(black_box(&body)).expect("json"))
        });
        let value: Value = serde_json::from_slice(&body).expect("json");
        g.bench_function(format!("schema/{name}"), |b| {
            b.iter(|| ma2h_protocol::schema::validate(ma2h_protocol::schema::SchemaKind::Message, black_box(&value)))
        });
        g.bench_function(format!("fingerprint/{name}"), |b| b.iter(|| black_box(&env).idempotency_fingerprint()));
        g.bench_function(format!("check_submit/{name}"), |b| {
            b.iter(|| rules::check_submit(black_box(&env), now, &limits).expect("passes"));
        });
        g.bench_function(format!("parse_and_check/{name}"), |b| {
            b.iter_batched(
                || body.clone(),
                |body| {
                    let env = Envelope::parse(&body).expect("valid");
                    rules::check_submit(&env, now, &limits).expect("passes");
                    env
                },
                BatchSize::SmallInput,
            );
        });
    }
    g.finish();
}

criterion_group!(benches, jcs_benches, signature_benches, envelope_benches);
criterion_main!(benches);

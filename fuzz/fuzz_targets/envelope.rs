//! Fuzz target `envelope`: arbitrary bytes through the whole submit-side protocol path —
//! `Envelope::parse` (JSON → §10 version → JSON Schema → typed fields), the §8.1/§5.2/§7 cross-field
//! rules of `rules::check_submit`, the §8.1 idempotency fingerprint and the §5.2 confirm-option
//! synthesis.
//!
//! Asserts: nothing panics (any rejection is a `ProtocolError`, i.e. a 4xx at the HTTP layer);
//! the fingerprint is deterministic 64-char lowercase hex; and what the Hub would *store* for an
//! accepted envelope (its `raw` after synthesis) still parses and still passes the rules, because
//! GET serves that object back (§8.2) and a replayed submit recomputes the same fingerprint;
//! and every kind of §8.8 resolve body can be checked against the stored envelope without a
//! panic (the resolve path's `expect`s on "an ask has a request" rely on what parse guaranteed).
#![no_main]

use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use ma2h_protocol::envelope::{Envelope, Mode};
use ma2h_protocol::resolve::ResolveRequest;
use ma2h_protocol::rules::{self, SizeLimits};
use ma2h_protocol::time::{self, Timestamp};
use serde_json::Value;

/// A fixed "now" so a run is reproducible (the Hub clock of the HTTP tests, 2026-06-04T12:00Z).
static NOW: LazyLock<Timestamp> = LazyLock::new(|| time::parse("2026-06-04T12:00:00Z").expect("fixed time"));

/// One body per resolver outcome and value shape, checked against every accepted envelope.
static RESOLVES: LazyLock<Vec<ResolveRequest>> = LazyLock::new(|| {
    [
        r#"{"resolution":"answered","value":"approve"}"#,
        r#"{"resolution":"answered","value":{"reason":"x","n":1}}"#,
        r#"{"resolution":"answered","value":"ship"}"#,
        r#"{"resolution":"declined","comment":"no"}"#,
        r#"{"resolution":"completed","checklist":[{"text":"Generate","done":true}]}"#,
        r#"{"resolution":"dismissed"}"#,
    ]
    .iter()
    .map(|b| ResolveRequest::parse(b.as_bytes()).unwrap_or_else(|e| panic!("fixed resolve body {b}: {e}")))
    .collect()
});

fuzz_target!(|data: &[u8]| {
    let Ok(mut env) = Envelope::parse(data) else { return };
    let limits = SizeLimits::default();
    let verdict = rules::check_submit(&env, *NOW, &limits);

    // The fingerprint is computed before normalization (§8.1) and must be stable.
    let fingerprint = env.idempotency_fingerprint();
    assert_eq!(fingerprint.len(), 64);
    assert!(fingerprint.bytes().all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
    assert_eq!(fingerprint, Envelope::parse(data).expect("parse is deterministic").idempotency_fingerprint());

    // Accessors the use cases call on every accepted envelope.
    let _ = (env.callback(), env.allowed_resolvers(), env.state());

    if verdict.is_err() {
        return;
    }
    let was_bare_confirm = env.request().is_some_and(|r| r.mode == Mode::Confirm && r.options.is_empty());
    env.synthesize_confirm_options();
    if was_bare_confirm {
        let req = env.request().expect("an ask keeps its request");
        assert_eq!(req.options.len(), 2, "confirm synthesizes exactly approve/deny");
        let stored = env.raw.get("request").and_then(|r| r.get("options")).and_then(Value::as_array);
        assert_eq!(stored.map(Vec::len), Some(2), "the stored envelope shows the synthesized options");
    }
    // The stored object round-trips: what GET returns is itself an acceptable envelope.
    let stored = Envelope::from_value(Value::Object(env.raw.clone())).expect("stored envelope re-parses");
    rules::check_submit(&stored, *NOW, &limits).expect("stored envelope still passes the rules");
    for request in RESOLVES.iter() {
        let _ = request.check_against(&stored);
    }
});

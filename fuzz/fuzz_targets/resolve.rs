//! Fuzz target `resolve`: arbitrary bytes as a §8.8 resolve body (`ResolveRequest::parse`, then
//! `check_against`) for each kind of resolvable message — a select ask with restricted
//! permissions, a flat-schema input ask, a bare confirm ask (options synthesized, as stored), a
//! task with a checklist — and for a notify.
//!
//! Asserts: nothing panics — a bad body is a `ProtocolError` (400/422), whatever message it meets.
#![no_main]

use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use ma2h_protocol::envelope::Envelope;
use ma2h_protocol::resolve::ResolveRequest;

const AGENT: &str = r#""agent":{"id":"bot","run_id":"r1","runtime":"cli"},"created_at":"2026-06-04T12:00:00Z""#;

/// The messages every body is checked against, parsed exactly as the Hub parses a stored one.
static MESSAGES: LazyLock<Vec<Envelope>> = LazyLock::new(|| {
    [
        r#""type":"ask","title":"Ship?","idempotency_key":"k1","request":{"mode":"select",
            "options":[{"value":"ship","label":"Ship"},{"value":"hold","label":"Hold"}],
            "permissions":{"allow_respond":true,"allow_ignore":false},"default_on_expire":"hold"}"#,
        r#""type":"ask","title":"Why?","idempotency_key":"k2","request":{"mode":"input",
            "schema":{"type":"object","properties":{"reason":{"type":"string","maxLength":20},
            "n":{"type":"integer","minimum":1},"color":{"enum":["red","blue"]}},"required":["reason"]}}"#,
        r#""type":"ask","title":"Deploy?","idempotency_key":"k3","request":{"mode":"confirm",
            "permissions":{"allow_respond":false}}"#,
        r#""type":"task","title":"Rotate","idempotency_key":"k4","action":{"instructions":"Rotate it.",
            "checklist":[{"text":"Generate","done":false},{"text":"Deploy"}]}"#,
        r#""type":"notify","title":"Done""#,
    ]
    .iter()
    .map(|fields| {
        let json = format!(r#"{{"ma2h_version":"0.5",{AGENT},{fields}}}"#);
        let mut env = Envelope::parse(json.as_bytes()).unwrap_or_else(|e| panic!("fixed message {fields}: {e}"));
        env.synthesize_confirm_options();
        env
    })
    .collect()
});

fuzz_target!(|data: &[u8]| {
    let Ok(request) = ResolveRequest::parse(data) else { return };
    for env in MESSAGES.iter() {
        let _ = request.check_against(env);
    }
});

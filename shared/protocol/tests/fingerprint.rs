//! The §8.1 idempotency fingerprint: SHA-256 of the envelope's JCS bytes without `agent.run_id`
//! and `agent.session`. Claims stored before it was streamed hold that value, so it must not move.

use ma2h_protocol::envelope::Envelope;
use ma2h_protocol::jcs;
use serde_json::{Value, json};

/// The fingerprint as first defined: copy, drop the excluded members, canonicalize, hash.
fn by_definition(body: &Value) -> String {
    let mut copy = body.clone();
    if let Some(Value::Object(agent)) = copy.get_mut("agent") {
        agent.remove("run_id");
        agent.remove("session");
    }
    jcs::canonical_sha256(&copy)
}

fn ask(agent: Value) -> Value {
    json!({
        "ma2h_version": "0.5", "type": "ask", "created_at": "2026-12-04T10:00:00Z",
        "agent": agent, "title": "Ship build 412? €😀", "priority": "high",
        "idempotency_key": "k-1", "body": "line\nline \u{1f}",
        "request": {"mode": "select", "options": [{"value": "ship", "label": "Ship"}, {"value": "hold", "label": "Hold"}]},
        "context": [{"kind": "data", "data": {"n": 1.5, "big": 12345678901234567u64, "neg": -3}}],
        "state": {"resume": [1, 2, {"z": null, "a": true}]}
    })
}

#[test]
fn the_fingerprint_is_the_sha256_of_the_jcs_bytes_without_run_id_and_session() {
    for agent in [
        json!({"id": "bot/dev", "run_id": "run-1", "runtime": "cli"}),
        json!({"id": "bot/dev", "run_id": "run-2", "runtime": "cli", "session": "sess_01HZZZZZZZZZZZZZZZZZZZZZZZ"}),
        json!({"id": "bot/dev", "run_id": "r", "runtime": "cloud", "project": "p"}),
    ] {
        let body = ask(agent);
        let env = Envelope::parse(body.to_string().as_bytes()).unwrap();
        assert_eq!(env.idempotency_fingerprint(), by_definition(&body));
    }
}

#[test]
fn run_id_and_session_do_not_change_the_fingerprint_and_anything_else_does() {
    let fp = |agent: Value, title: &str| {
        let mut body = ask(agent);
        body["title"] = title.into();
        Envelope::parse(body.to_string().as_bytes()).unwrap().idempotency_fingerprint()
    };
    let base = fp(json!({"id": "bot", "run_id": "a", "runtime": "cli"}), "t");
    assert_eq!(base, fp(json!({"id": "bot", "run_id": "b", "runtime": "cli"}), "t"));
    assert_ne!(base, fp(json!({"id": "bot", "run_id": "a", "runtime": "cloud"}), "t"));
    assert_ne!(base, fp(json!({"id": "bot", "run_id": "a", "runtime": "cli"}), "t2"));
}

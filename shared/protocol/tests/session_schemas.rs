//! The v0.5 session schema (`schema/v0.5/session.schema.json`, spec §16) and the `sessions` member of
//! the capability document (spec §8.0) through `ma2h_protocol::schema::validate`.
//!
//! Some inputs are the upstream conformance vectors, used as test data only; each is marked with
//! the file it comes from (`autnmy/ma2h-protocol` `conformance/vectors/`).

use ma2h_protocol::ProtocolError;
use ma2h_protocol::schema::{SchemaKind, validate};
use serde_json::{Value, json};

const S: SchemaKind = SchemaKind::Session;

fn pass(kind: SchemaKind, doc: &Value) {
    if let Err(e) = validate(kind, doc) {
        panic!("expected {kind:?} to accept {doc}\n  got: {e}");
    }
}

/// Assert a rejection whose message contains every `needle`; returns the message.
fn fail(kind: SchemaKind, doc: &Value, needles: &[&str]) -> String {
    match validate(kind, doc) {
        Err(ProtocolError::Validation { message, .. }) => {
            for needle in needles {
                assert!(message.contains(needle), "message {message:?} should contain {needle:?}");
            }
            message
        }
        other => panic!("expected {kind:?} to reject {doc}\n  got: {other:?}"),
    }
}

/// `doc` with the top-level member `key` set to `value` (`Value::Null` removes it).
fn set(mut doc: Value, key: &str, value: Value) -> Value {
    let map = doc.as_object_mut().unwrap();
    if value.is_null() {
        map.remove(key);
    } else {
        map.insert(key.to_owned(), value);
    }
    doc
}

/// from sv-022-session-resource-valid.json
fn sv022() -> Value {
    json!({
        "id": "sess_01J5WRK0007", "agent_id": "deploybot/dev-team", "state": "active",
        "created_at": "2026-08-10T11:55:00Z", "expires_at": "2026-08-10T12:10:00Z",
        "last_seen": "2026-08-10T11:58:00Z", "ttl_seconds": 900, "run_id": "run_01J5WORKER07",
        "label": "dev-team · issue #612", "kind": "worker", "project": "web-app",
        "labels": { "repo": "acme/web-app" }
    })
}

/// from sv-058-session-operator-closed-valid.json (sv-059/060 are edits of the same resource)
fn sv058() -> Value {
    let doc = set(sv022(), "state", json!("closed"));
    let doc = set(doc, "closed_at", json!("2026-08-10T12:01:00Z"));
    set(doc, "closed_by_operator", json!(true))
}

#[test]
fn session_resources_follow_section_16() {
    pass(S, &sv022());
    pass(S, &sv058());
    // from sv-044-session-hash-owner-invalid.json
    let sv044 = json!({
        "id": "sess_01J5BAD0001", "agent_id": "legacy#worker", "state": "active",
        "created_at": "2026-08-10T11:55:00Z", "expires_at": "2026-08-10T12:10:00Z", "ttl_seconds": 900
    });
    let msg = fail(S, &sv044, &["`/agent_id`", "pattern"]);
    assert!(msg.contains("§16.1"), "the rule note explains the ban: {msg}");
    // from sv-059-session-active-operator-marker-invalid.json
    let sv059 = set(set(sv058(), "state", json!("active")), "closed_at", Value::Null);
    fail(S, &sv059, &["`/closed_by_operator`", "not allowed", "§16.3"]);
    // from sv-060-session-closed-by-operator-false-invalid.json
    let sv060 = set(sv058(), "closed_by_operator", json!(false));
    fail(S, &sv060, &["`/closed_by_operator`", "must be `true`"]);
    // a lapsed lease never gains the marker (§16.3: it rides the winning operator close only)
    fail(S, &set(sv058(), "state", json!("expired")), &["`/closed_by_operator`"]);
    pass(S, &set(set(sv058(), "state", json!("expired")), "closed_by_operator", Value::Null));
}

#[test]
fn session_resource_members_are_typed() {
    let minimal = json!({ "id": "sess_1", "agent_id": "a", "state": "active",
                          "created_at": "2026-08-10T11:55:00Z", "expires_at": "2026-08-10T12:10:00Z" });
    pass(S, &minimal);
    pass(S, &set(minimal.clone(), "x_future", json!({ "any": 1 })));
    for key in ["id", "agent_id", "state", "created_at", "expires_at"] {
        fail(S, &set(minimal.clone(), key, Value::Null), &[&format!("missing required field `{key}`")]);
    }
    fail(S, &set(minimal.clone(), "id", json!("msg_01")), &["`/id`"]);
    fail(S, &set(minimal.clone(), "id", json!("sess_")), &["`/id`"]);
    fail(S, &set(minimal.clone(), "agent_id", json!("")), &["`/agent_id`"]);
    fail(S, &set(minimal.clone(), "state", json!("lapsed")), &["`/state`", "`expired`"]);
    fail(S, &set(minimal.clone(), "expires_at", json!("soon")), &["`/expires_at`", "date-time"]);
    fail(S, &set(minimal.clone(), "last_seen", json!(12)), &["`/last_seen`"]);
    fail(S, &set(minimal.clone(), "ttl_seconds", json!(0)), &["`/ttl_seconds`", "at least 1"]);
    fail(S, &set(minimal.clone(), "ttl_seconds", json!(1.5)), &["`/ttl_seconds`", "integer"]);
    fail(S, &set(minimal.clone(), "run_id", json!("")), &["`/run_id`", "empty"]);
    fail(S, &set(minimal, "labels", json!({ "n": 1 })), &["`/labels/n`"]);
}

#[test]
fn register_requests_are_lenient_but_bounded() {
    let r = SchemaKind::SessionRegister;
    // the spec §16.1 example body
    let example = json!({ "run_id": "run_01H", "label": "dev-team · issue #612", "kind": "worker",
                          "project": "web-app", "labels": { "repo": "acme/web-app" }, "ttl_seconds": 900 });
    pass(r, &example);
    pass(r, &json!({}));
    pass(r, &set(example.clone(), "x_hint", json!(true)));
    pass(r, &set(example.clone(), "label", json!("é".repeat(200))));
    fail(r, &set(example.clone(), "label", json!("x".repeat(201))), &["`/label`", "at most 200"]);
    fail(r, &set(example.clone(), "run_id", json!("x".repeat(201))), &["`/run_id`", "at most 200"]);
    fail(r, &set(example.clone(), "kind", json!("x".repeat(101))), &["`/kind`", "at most 100"]);
    fail(r, &set(example.clone(), "project", json!("x".repeat(101))), &["`/project`", "at most 100"]);
    fail(r, &set(example.clone(), "run_id", json!("")), &["`/run_id`"]);
    fail(r, &set(example.clone(), "ttl_seconds", json!(0)), &["`/ttl_seconds`"]);
    fail(r, &set(example.clone(), "ttl_seconds", json!("900")), &["`/ttl_seconds`", "integer"]);
    fail(r, &set(example.clone(), "labels", json!({ "k": 1 })), &["`/labels/k`"]);
    fail(r, &set(example.clone(), "labels", json!({ "k": "v".repeat(201) })), &["`/labels/k`", "at most 200"]);
    let many: serde_json::Map<String, Value> = (0..33).map(|i| (format!("k{i}"), json!("v"))).collect();
    fail(r, &set(example.clone(), "labels", Value::Object(many)), &["`/labels`", "at most 32 member(s)"]);
    // a bad member name is described by the rule, never quoted back (the module's no-echo stance)
    let long_key = "k".repeat(101);
    let msg = fail(
        r,
        &set(example.clone(), "labels", json!({ long_key.clone(): "v" })),
        &["`/labels`", "every member name must be at most 100 characters"],
    );
    assert!(!msg.contains(&long_key), "{msg}");
    fail(r, &set(example.clone(), "labels", json!({ "": "v" })), &["`/labels`", "every member name must not be empty"]);
    let thirty_two: serde_json::Map<String, Value> = (0..32).map(|i| (format!("k{i}"), json!("v"))).collect();
    pass(r, &set(example.clone(), "labels", Value::Object(thirty_two)));
    fail(r, &json!(["not", "an", "object"]), &["`/`", "object"]);
    // a register body is not a session resource: nothing Hub-minted is required
    assert!(validate(S, &example).is_err());
}

#[test]
fn session_envelopes_wrap_one_resource() {
    let e = SchemaKind::SessionEnvelope;
    pass(e, &json!({ "session": sv022() }));
    pass(e, &json!({ "session": sv058() }));
    fail(e, &json!({}), &["missing required field `session`"]);
    fail(e, &json!({ "session": set(sv022(), "agent_id", json!("a#b")) }), &["`/session/agent_id`"]);
    fail(e, &sv022(), &["missing required field `session`"]);
}

#[test]
fn session_lists_carry_an_optional_scope() {
    let l = SchemaKind::SessionList;
    // from sv-064-session-list-scope-valid.json
    let sv064 = json!({ "sessions": [ {
        "id": "sess_01J5WRK0007", "agent_id": "deploybot/dev-team", "state": "active",
        "created_at": "2026-08-10T11:55:00Z", "expires_at": "2026-08-10T12:10:00Z" } ], "scope": "own" });
    pass(l, &sv064);
    pass(l, &set(sv064.clone(), "scope", json!("account")));
    // from sv-065-session-list-bad-scope-invalid.json
    fail(l, &json!({ "sessions": [], "scope": "agent_list_visibility" }), &["`/scope`", "`account`, `own`"]);
    // from sv-066-session-list-no-scope-valid.json
    pass(l, &json!({ "sessions": [] }));
    fail(l, &json!({ "scope": "own" }), &["missing required field `sessions`"]);
    fail(
        l,
        &json!({ "sessions": [sv022(), set(sv058(), "closed_by_operator", json!(false))] }),
        &["`/sessions/1/closed_by_operator`"],
    );
}

fn capability(version: &str, sessions: Value) -> Value {
    json!({ "ma2h_version": version, "sessions": sessions })
}

#[test]
fn the_sessions_capability_is_typed_and_a_v05_feature() {
    let c = SchemaKind::Capability;
    // the spec §8.0 example `sessions` object, plus the optional lower clamp
    let full = json!({ "enabled": true, "min_ttl_seconds": 120, "max_ttl_seconds": 3600, "max_live_per_agent": 16,
                       "agent_list_visibility": false, "terminal_retention_seconds": 86400,
                       "operator_hard_stop": true });
    pass(c, &capability("0.5", full.clone()));
    pass(c, &capability("0.10", json!({ "enabled": false })));
    pass(c, &capability("0.5", set(full.clone(), "terminal_retention_seconds", json!(0))));
    // from sv-054-capability-sessions-pre05-invalid.json
    let msg = fail(c, &capability("0.4", json!({ "enabled": true })), &["`/ma2h_version`"]);
    assert!(msg.contains("minor ≥ 5"), "the rule note explains the version floor: {msg}");
    fail(c, &capability("0.5", json!({})), &["`/sessions`: missing required field `enabled`"]);
    fail(c, &capability("0.5", set(full.clone(), "enabled", json!("yes"))), &["`/sessions/enabled`", "boolean"]);
    for key in ["min_ttl_seconds", "max_ttl_seconds", "max_live_per_agent"] {
        fail(c, &capability("0.5", set(full.clone(), key, json!(0))), &[&format!("`/sessions/{key}`"), "at least 1"]);
    }
    fail(
        c,
        &capability("0.5", set(full.clone(), "terminal_retention_seconds", json!(-1))),
        &["`/sessions/terminal_retention_seconds`"],
    );
    fail(c, &capability("0.5", set(full.clone(), "max_ttl_seconds", json!(60.5))), &["integer"]);
    fail(
        c,
        &capability("0.5", set(full.clone(), "agent_list_visibility", json!(1))),
        &["`/sessions/agent_list_visibility`"],
    );
    fail(c, &capability("0.5", set(full, "operator_hard_stop", json!("true"))), &["`/sessions/operator_hard_stop`"]);
    fail(c, &capability("0.5", json!(true)), &["`/sessions`", "object"]);
}

#[test]
fn defs_kinds_share_the_session_file() {
    for kind in [SchemaKind::Session, SchemaKind::SessionRegister, SchemaKind::SessionEnvelope, SchemaKind::SessionList]
    {
        assert_eq!(kind.file_name(), "session.schema.json");
        assert_eq!(kind.document()["$id"], json!(kind.id()));
        if let Some(pointer) = kind.pointer() {
            assert!(kind.document().pointer(pointer).is_some(), "{kind:?} points at {pointer}");
        }
    }
    assert_eq!(SchemaKind::Session.pointer(), None);
    assert_eq!(SchemaKind::ALL.len(), 14);
}

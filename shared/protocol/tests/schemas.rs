//! The v0.5 JSON Schemas (`schema/v0.5/`) through `ma2h_protocol::schema::validate`: valid documents
//! pass, and every rejection names the offending field as a JSON pointer.
//!
//! Some inputs are the upstream conformance vectors, used as test data only; each is marked with
//! the file it comes from.

use ma2h_protocol::ProtocolError;
use ma2h_protocol::schema::{SchemaKind, validate};
use serde_json::{Value, json};

fn pass(kind: SchemaKind, doc: &Value) {
    if let Err(e) = validate(kind, doc) {
        panic!("expected {kind:?} to accept {doc}\n  got: {e}");
    }
}

/// Assert a rejection whose message contains every `needle`; returns the message.
fn fail(kind: SchemaKind, doc: &Value, needles: &[&str]) -> String {
    match validate(kind, doc) {
        Err(ProtocolError::Validation { message: msg, .. }) => {
            for needle in needles {
                assert!(msg.contains(needle), "message {msg:?} should contain {needle:?}");
            }
            msg
        }
        other => panic!("expected {kind:?} to reject {doc}\n  got: {other:?}"),
    }
}

/// `doc` with the value at `pointer` replaced (parent must exist).
fn with(mut doc: Value, pointer: &str, value: Value) -> Value {
    let (parent, key) = pointer.rsplit_once('/').unwrap();
    let parent = doc.pointer_mut(parent).unwrap();
    match parent {
        Value::Object(map) => {
            map.insert(key.to_owned(), value);
        }
        Value::Array(items) => items[key.parse::<usize>().unwrap()] = value,
        _ => panic!("{pointer} has no container"),
    }
    doc
}

fn without(mut doc: Value, pointer: &str) -> Value {
    let (parent, key) = pointer.rsplit_once('/').unwrap();
    doc.pointer_mut(parent).unwrap().as_object_mut().unwrap().remove(key);
    doc
}

fn agent() -> Value {
    json!({ "id": "deploybot/dev-team", "run_id": "run_01", "runtime": "github-actions" })
}

fn notify() -> Value {
    // from autnmy/ma2h-protocol conformance/vectors/sv-001-notify-valid.json
    json!({
        "ma2h_version": "0.3",
        "type": "notify",
        "created_at": "2026-06-04T13:00:00Z",
        "agent": { "id": "deploybot/dev-team", "run_id": "digest_2026-06-04", "runtime": "cloud" },
        "title": "Daily digest"
    })
}

fn ask(request: Value) -> Value {
    json!({
        "ma2h_version": "0.5", "type": "ask", "created_at": "2026-06-04T15:00:00Z",
        "agent": agent(), "title": "Ship or hold?", "idempotency_key": "k1", "request": request
    })
}

fn select() -> Value {
    ask(json!({
        "mode": "select",
        "options": [ { "value": "ship", "label": "Ship" }, { "value": "hold", "label": "Hold" } ],
        "default_on_expire": "hold",
        "permissions": { "allow_accept": true, "allow_edit": false, "allow_respond": true, "allow_ignore": true },
        "allowed_resolvers": ["human:alice", "agent:reviewer#sess_01", "system:ops"],
        "callback": { "mode": "push", "url": "https://agent.example/ma2h",
                      "auth": { "scheme": "hmac", "secret_ref": "env:MA2H_SECRET" } }
    }))
}

fn task() -> Value {
    json!({
        "ma2h_version": "0.5", "type": "task", "created_at": "2026-06-04T15:00:00Z",
        "agent": agent(), "title": "Rotate the key", "idempotency_key": "t1",
        "expires_at": "2026-06-05T15:00:00Z",
        "action": {
            "instructions": "Rotate API_SIGNING_KEY in the prod vault.",
            "checklist": [ { "text": "Generate a key", "done": false }, { "text": "Update prod" } ],
            "verification": "Webhook test event returns 200.",
            "allowed_resolvers": ["human:alice"],
            "callback": { "mode": "push", "url": "https://agent.example/cb",
                          "auth": { "scheme": "bearer", "token_ref": "env:TOKEN" } }
        }
    })
}

const M: SchemaKind = SchemaKind::Message;

#[test]
fn valid_envelopes_pass() {
    pass(M, &notify());
    pass(M, &select());
    pass(M, &ask(json!({ "mode": "confirm" })));
    pass(
        M,
        &ask(json!({ "mode": "confirm", "default_on_expire": null, "options": [
        { "value": "approve", "label": "Yes" }, { "value": "deny", "label": "No" } ] })),
    );
    pass(
        M,
        &ask(json!({ "mode": "input", "default_on_expire": { "reason": "timeout" },
        "schema": { "type": "object", "properties": { "reason": { "type": "string" } }, "required": ["reason"] },
        "callback": { "mode": "pull" } })),
    );
    pass(M, &task());
    let rich = json!({
        "ma2h_version": "0.5", "type": "notify", "created_at": "2026-06-04T13:00:00+02:00",
        "agent": { "id": "a", "run_id": "r", "runtime": "other", "session": "sess_01H", "project": "web",
                   "labels": { "model": "opus" } },
        "to": "agent:reviewer/team#sess_42", "title": "t", "body": "**md**", "priority": "urgent",
        "tags": ["x"], "state": { "step": 3 }, "client_ref": "c", "sensitive": true,
        "context": [
            { "kind": "text", "text": "hello", "metadata": { "k": 1 } },
            { "kind": "data", "data": { "n": 1 } },
            { "kind": "file", "file": { "uri": "https://example.com/diff.patch", "name": "diff.patch", "mime_type": "text/x-diff" } }
        ]
    });
    pass(M, &rich);
    pass(M, &with(with(notify(), "/ma2h_version", json!("0.5")), "/to", json!("agent:reviewer")));
}

#[test]
fn a_pre_05_envelope_may_carry_neither_to_nor_a_session() {
    // upstream conformance vector sv-038: a 0.4 envelope with `to` is invalid, never inbox mail.
    let old = with(notify(), "/ma2h_version", json!("0.4"));
    fail(M, &with(old.clone(), "/to", json!("agent:reviewer")), &["/ma2h_version", "`to` is a v0.5 field"]);
    fail(M, &with(old, "/agent/session", json!("sess_01")), &["/ma2h_version", "`agent.session` is a v0.5 field"]);
}

#[test]
fn unknown_fields_are_ignored() {
    // §10 robustness: a Hub ignores fields it does not know, at any level of the envelope.
    let doc = with(select(), "/x_future", json!({ "anything": [1, 2] }));
    let doc = with(doc, "/request/x_hint", json!(true));
    pass(M, &with(doc, "/agent/x_host", json!("ci-7")));
}

#[test]
fn common_field_violations_name_the_field() {
    fail(M, &without(notify(), "/title"), &["`/`: missing required field `title`"]);
    pass(M, &with(notify(), "/title", json!("x".repeat(200))));
    fail(M, &with(notify(), "/title", json!("x".repeat(201))), &["`/title`", "at most 200"]);
    fail(M, &with(notify(), "/title", json!("")), &["`/title`"]);
    fail(M, &with(notify(), "/priority", json!("critical")), &["`/priority`", "`urgent`"]);
    fail(M, &with(notify(), "/agent/runtime", json!("lambda")), &["`/agent/runtime`", "github-actions"]);
    fail(M, &without(notify(), "/agent/run_id"), &["`/agent`: missing required field `run_id`"]);
    fail(M, &with(notify(), "/agent/session", json!("s_1")), &["`/agent/session`"]);
    fail(M, &with(notify(), "/agent/labels", json!({ "n": 1 })), &["`/agent/labels/n`"]);
    fail(M, &with(notify(), "/created_at", json!("yesterday")), &["`/created_at`", "date-time"]);
    fail(M, &with(notify(), "/expires_at", json!("2026-13-01T00:00:00Z")), &["`/expires_at`"]);
    fail(M, &with(notify(), "/tags", json!(["ok", 3])), &["`/tags/1`"]);
    fail(M, &with(notify(), "/state", json!("blob")), &["`/state`", "object"]);
    fail(M, &with(notify(), "/type", json!("directive")), &["`/type`"]);
    fail(M, &json!([1]), &["`/`", "object"]);
}

#[test]
fn version_must_be_a_canonical_zero_minor() {
    for ok in ["0.0", "0.3", "0.5", "0.10"] {
        pass(M, &with(notify(), "/ma2h_version", json!(ok)));
    }
    for bad in ["0.03", "0.", "1.0", "0.5.1", "v0.5"] {
        fail(M, &with(notify(), "/ma2h_version", json!(bad)), &["`/ma2h_version`"]);
    }
}

#[test]
fn to_follows_the_address_grammar() {
    fail(M, &with(notify(), "/to", json!("human:alice")), &["`/to`"]);
    fail(M, &with(notify(), "/to", json!("agent:bot#s1")), &["`/to`"]);
}

#[test]
fn cross_type_fields_are_excluded() {
    // from autnmy/ma2h-protocol conformance/vectors/sv-002-notify-with-request-invalid.json
    let sv002 = json!({
        "ma2h_version": "0.3", "type": "notify", "created_at": "2026-06-04T13:00:00Z",
        "agent": { "id": "deploybot/dev-team", "run_id": "r1", "runtime": "cloud" },
        "title": "Sneaky notify", "request": { "mode": "confirm" }
    });
    fail(M, &sv002, &["`/request`", "not allowed", "notify"]);
    fail(M, &with(notify(), "/action", task()["action"].clone()), &["`/action`", "not allowed"]);
    fail(M, &with(select(), "/action", task()["action"].clone()), &["`/action`", "not allowed"]);
    fail(M, &with(task(), "/request", json!({ "mode": "confirm" })), &["`/request`", "not allowed"]);
    fail(M, &without(select(), "/request"), &["`/`: missing required field `request`"]);
    fail(M, &without(task(), "/action"), &["`/`: missing required field `action`"]);
    fail(M, &without(task(), "/idempotency_key"), &["missing required field `idempotency_key`"]);
    fail(M, &without(task(), "/action/instructions"), &["`/action`: missing required field `instructions`"]);
}

#[test]
fn ask_requires_an_idempotency_key() {
    // from autnmy/ma2h-protocol conformance/vectors/sv-003-ask-missing-idempotency-invalid.json
    let sv003 = json!({
        "ma2h_version": "0.3", "type": "ask", "created_at": "2026-06-04T15:00:00Z",
        "agent": { "id": "deploybot/dev-team", "run_id": "r1", "runtime": "github-actions" },
        "title": "Ship or hold?",
        "request": { "mode": "select",
                     "options": [ { "value": "ship", "label": "Ship" }, { "value": "hold", "label": "Hold" } ] }
    });
    let msg = fail(M, &sv003, &["`/`: missing required field `idempotency_key`"]);
    assert!(msg.contains("spec §"), "the rule note explains the requirement: {msg}");
}

#[test]
fn request_modes_are_checked() {
    fail(M, &without(select(), "/request/options"), &["`/request`: missing required field `options`"]);
    fail(M, &with(select(), "/request/options", json!([])), &["`/request/options`", "at least 1"]);
    fail(
        M,
        &with(select(), "/request/options/0", json!({ "value": "ship" })),
        &["`/request/options/0`: missing required field `label`"],
    );
    fail(M, &with(select(), "/request/default_on_expire", json!({ "v": 1 })), &["`/request/default_on_expire`"]);
    fail(M, &ask(json!({ "mode": "input" })), &["`/request`: missing required field `schema`"]);
    fail(
        M,
        &ask(json!({ "mode": "input", "schema": { "type": "object" }, "default_on_expire": "x" })),
        &["`/request/default_on_expire`"],
    );
    let three =
        json!([ { "value": "a", "label": "A" }, { "value": "b", "label": "B" }, { "value": "c", "label": "C" } ]);
    // A confirm with 3 options is schema-valid: the exactly-two rule is the Hub's 422 (rules.rs).
    pass(M, &ask(json!({ "mode": "confirm", "options": three })));
    fail(M, &ask(json!({ "mode": "vote" })), &["`/request/mode`"]);
    fail(M, &with(select(), "/request/permissions/allow_edit", json!("yes")), &["`/request/permissions/allow_edit`"]);
}

#[test]
fn callbacks_are_checked() {
    // from autnmy/ma2h-protocol conformance/vectors/sv-005-callback-hmac-missing-secret-invalid.json
    let sv005 = json!({
        "ma2h_version": "0.3", "type": "ask", "created_at": "2026-06-04T15:00:00Z",
        "agent": { "id": "deploybot/dev-team", "run_id": "r1", "runtime": "github-actions" },
        "title": "Bad hmac callback", "idempotency_key": "k1",
        "request": { "mode": "confirm",
            "callback": { "mode": "push", "url": "https://deploybot.example/ma2h/resume", "auth": { "scheme": "hmac" } } }
    });
    fail(M, &sv005, &["`/request/callback/auth`: missing required field `secret_ref`"]);
    // from autnmy/ma2h-protocol conformance/vectors/sv-006-callback-bearer-with-secret-invalid.json
    let sv006 = json!({
        "ma2h_version": "0.3", "type": "ask", "created_at": "2026-06-04T15:00:00Z",
        "agent": { "id": "deploybot/dev-team", "run_id": "r1", "runtime": "github-actions" },
        "title": "Bad bearer callback", "idempotency_key": "k2",
        "request": { "mode": "confirm",
            "callback": { "mode": "push", "url": "https://deploybot.example/ma2h/resume",
                          "auth": { "scheme": "bearer", "secret_ref": "env:X" } } }
    });
    fail(M, &sv006, &["`/request/callback/auth/secret_ref`", "not allowed"]);
    let with_both = with(task(), "/action/callback/auth/secret_ref", json!("env:S"));
    fail(M, &with_both, &["`/action/callback/auth/secret_ref`"]);
    let hmac_token = with(select(), "/request/callback/auth/token_ref", json!("env:T"));
    fail(M, &hmac_token, &["`/request/callback/auth/token_ref`"]);
    fail(M, &without(select(), "/request/callback/url"), &["`/request/callback`: missing required field `url`"]);
    fail(M, &with(select(), "/request/callback/url", json!("not a uri")), &["`/request/callback/url`", "URI"]);
    fail(M, &with(select(), "/request/callback/mode", json!("webhook")), &["`/request/callback/mode`"]);
    let apikey =
        json!({ "mode": "push", "url": "https://a.example/x", "auth": { "scheme": "apikey", "token_ref": "env:K" } });
    pass(M, &with(select(), "/request/callback", apikey));
}

#[test]
fn allowed_resolvers_entries_are_typed() {
    fail(M, &with(select(), "/request/allowed_resolvers/1", json!("alice")), &["`/request/allowed_resolvers/1`"]);
    fail(M, &with(task(), "/action/allowed_resolvers/0", json!("robot:x")), &["`/action/allowed_resolvers/0`"]);
    fail(M, &with(task(), "/action/allowed_resolvers/0", json!("human:")), &["`/action/allowed_resolvers/0`"]);
}

#[test]
fn context_parts_carry_exactly_one_kind() {
    let part = |p: Value| with(notify(), "/context", json!([{ "kind": "text", "text": "ok" }, p]));
    fail(M, &part(json!({ "kind": "text", "text": "a", "data": { "b": 1 } })), &["`/context/1/data`", "not allowed"]);
    fail(
        M,
        &part(json!({ "kind": "file", "file": { "uri": "https://x.example/f" }, "text": "t" })),
        &["`/context/1/text`"],
    );
    fail(M, &part(json!({ "kind": "image", "image": "x" })), &["`/context/1/kind`"]);
    fail(M, &part(json!({ "text": "no kind" })), &["`/context/1`: missing required field `kind`"]);
    fail(M, &part(json!({ "kind": "data" })), &["`/context/1`: missing required field `data`"]);
    fail(
        M,
        &part(json!({ "kind": "file", "file": { "name": "x" } })),
        &["`/context/1/file`: missing required field `uri`"],
    );
}

#[test]
fn submit_ack_is_closed() {
    let ack = json!({ "id": "msg_01", "status": "open", "poll_url": "https://hub.example/v1/messages/msg_01",
                      "review_url": "https://hub.example/inbox/msg_01" });
    pass(SchemaKind::SubmitAck, &ack);
    let queued = json!({ "id": "msg_02", "status": "queued", "poll_url": "https://hub.example/v1/messages/msg_02",
                         "destination": { "state": "offline", "last_seen": "2026-08-10T11:20:00Z" } });
    pass(SchemaKind::SubmitAck, &queued);
    fail(
        SchemaKind::SubmitAck,
        &with(ack.clone(), "/resolution", json!("answered")),
        &["`/resolution`", "unknown field"],
    );
    fail(SchemaKind::SubmitAck, &without(queued.clone(), "/destination"), &["missing required field `destination`"]);
    fail(
        SchemaKind::SubmitAck,
        &with(queued.clone(), "/destination/state", json!("unknown")),
        &["`/destination/last_seen`"],
    );
    fail(SchemaKind::SubmitAck, &with(ack, "/status", json!("created")), &["`/status`"]);
}

#[test]
fn resolve_requests_follow_section_8_8() {
    let r = SchemaKind::ResolveRequest;
    // from autnmy/ma2h-protocol conformance/vectors/sv-041-resolve-request-answered-valid.json
    pass(r, &json!({ "resolution": "answered", "value": "approve", "comment": "Restarting the consumer now." }));
    // from autnmy/ma2h-protocol conformance/vectors/sv-056-resolve-request-completed-checklist-valid.json
    pass(
        r,
        &json!({ "resolution": "completed", "comment": "Key rotated; webhook re-signed and verified.",
        "checklist": [ { "text": "Generate a new key in the secret manager", "done": true },
                       { "text": "Update prod secret", "done": true } ] }),
    );
    pass(r, &json!({ "resolution": "answered", "value": { "reason": "ok" } }));
    // from autnmy/ma2h-protocol conformance/vectors/sv-042-resolve-request-answered-missing-value-invalid.json
    fail(
        r,
        &json!({ "resolution": "answered", "comment": "Forgot the value" }),
        &["`/`: missing required field `value`"],
    );
    // from autnmy/ma2h-protocol conformance/vectors/sv-055-resolve-request-declined-with-value-invalid.json
    fail(
        r,
        &json!({ "resolution": "declined", "value": "approve",
        "comment": "Not comfortable approving this restart window." }),
        &["`/value`", "not allowed"],
    );
    // from autnmy/ma2h-protocol conformance/vectors/sv-057-resolve-request-answered-with-checklist-invalid.json
    fail(
        r,
        &json!({ "resolution": "answered", "value": "approve",
        "checklist": [ { "text": "Restart the queue consumer", "done": true } ] }),
        &["`/checklist`", "not allowed"],
    );
    fail(r, &json!({ "resolution": "completed", "value": "x" }), &["`/value`"]);
    fail(r, &json!({ "resolution": "cancelled" }), &["`/resolution`"]);
    fail(
        r,
        &json!({ "resolution": "completed", "checklist": [ { "text": "a" } ] }),
        &["`/checklist/0`: missing required field `done`"],
    );
}

fn answered() -> Value {
    json!({ "ma2h_version": "0.5", "in_reply_to": "msg_1", "resolution_id": "res_1",
            "agent": { "id": "deploybot/dev-team", "run_id": "r1" }, "resolution": "answered", "defaulted": false,
            "response": { "value": "hold", "edited": false, "actor": "human:alice",
                          "resolved_at": "2026-06-04T18:04:11Z", "comment": "Wait." },
            "state": { "step": 2 } })
}

#[test]
fn responses_follow_section_6() {
    let r = SchemaKind::Response;
    pass(r, &answered());
    let defaulted = json!({ "ma2h_version": "0.5", "in_reply_to": "msg_1", "resolution_id": "res_2",
        "agent": { "id": "a", "run_id": "r" }, "resolution": "expired", "defaulted": true,
        "response": { "value": "hold", "actor": "system:default_on_expire", "resolved_at": "2026-06-05T15:22:08Z" } });
    pass(r, &defaulted);
    let done = json!({ "ma2h_version": "0.5", "in_reply_to": "msg_3", "resolution_id": "res_3",
        "agent": { "id": "a", "run_id": "r" }, "resolution": "completed",
        "response": { "actor": "human:bob", "resolved_at": "2026-06-05T15:22:08Z",
                      "checklist": [ { "text": "Update prod", "done": true } ] } });
    pass(r, &done);
    // from autnmy/ma2h-protocol conformance/vectors/sv-004-response-resolution-ignored-invalid.json
    fail(
        r,
        &json!({ "ma2h_version": "0.3", "in_reply_to": "msg_1", "resolution_id": "res_1",
        "agent": { "id": "deploybot/dev-team", "run_id": "r1" }, "resolution": "ignored",
        "response": { "actor": "human:alice", "resolved_at": "2026-06-04T17:00:00Z" } }),
        &["`/resolution`"],
    );
    // from autnmy/ma2h-protocol conformance/vectors/sv-007-expired-default-bad-actor-invalid.json
    fail(
        r,
        &json!({ "ma2h_version": "0.3", "in_reply_to": "msg_1", "resolution_id": "res_1",
        "agent": { "id": "deploybot/dev-team", "run_id": "r1" }, "resolution": "expired", "defaulted": true,
        "response": { "value": "hold", "actor": "human:alice", "resolved_at": "2026-06-05T15:22:08Z" } }),
        &["`/response/actor`", "system:default_on_expire"],
    );
    let defaulted_answer = with(answered(), "/defaulted", json!(true));
    let defaulted_answer = with(defaulted_answer, "/response/actor", json!("system:default_on_expire"));
    fail(r, &defaulted_answer, &["`/resolution`", "`expired`"]);
    fail(r, &with(answered(), "/response/actor", json!("alice")), &["`/response/actor`"]);
    fail(
        r,
        &with(answered(), "/response/checklist", json!([{ "text": "x", "done": true }])),
        &["`/response/checklist`"],
    );
    fail(r, &without(answered(), "/response/value"), &["`/response`: missing required field `value`"]);
    fail(r, &without(answered(), "/response"), &["missing required field `response`"]);
    fail(r, &with(done, "/response/value", json!("x")), &["`/response/value`"]);
    fail(r, &with(answered(), "/ma2h_version", json!("0.03")), &["`/ma2h_version`"]);
}

fn pulled(status: &str) -> Value {
    let mut doc = select();
    doc["id"] = json!("msg_1");
    doc["status"] = json!(status);
    doc
}

#[test]
fn get_message_bodies_follow_section_8_2() {
    let g = SchemaKind::GetMessage;
    pass(g, &pulled("open"));
    let closed = with(pulled("answered"), "/response", answered());
    pass(g, &closed);
    let acked = json!({ "state": "acknowledged", "delivered_at": "2026-06-04T18:05:00Z", "acknowledged_at": "2026-06-04T18:06:00Z",
                        "ack": { "ma2h_version": "0.5", "type": "ack", "in_reply_to": "msg_1", "by": "agent:bot",
                                 "acked_at": "2026-06-04T18:06:00Z" } });
    pass(g, &with(closed.clone(), "/delivery", acked));
    let mut delivered_notify = notify();
    delivered_notify["id"] = json!("msg_2");
    delivered_notify["status"] = json!("delivered");
    pass(g, &delivered_notify);

    fail(g, &with(pulled("open"), "/response", answered()), &["`/response`", "not allowed", "open"]);
    fail(g, &pulled("answered"), &["`/`: missing required field `response`"]);
    fail(g, &with(pulled("declined"), "/response", answered()), &["`/response/resolution`", "`declined`"]);
    fail(g, &with(delivered_notify.clone(), "/response", answered()), &["`/response`", "not allowed"]);
    fail(g, &with(delivered_notify, "/status", json!("open")), &["`/status`", "`delivered`"]);
    fail(g, &pulled("completed"), &["`/status`"]);
    fail(
        g,
        &with(closed.clone(), "/delivery", json!({ "state": "acknowledged" })),
        &["`/delivery`: missing required field `acknowledged_at`"],
    );
    fail(
        g,
        &with(closed.clone(), "/delivery", json!({ "state": "expired", "delivered_at": "2026-06-04T18:05:00Z" })),
        &["`/delivery/delivered_at`"],
    );
    fail(g, &with(pulled("open"), "/delivery", json!({ "state": "delivered-to-agent" })), &["`/delivery`"]);
    // the embedded envelope and Response are validated through the cross-file `$ref`s
    fail(g, &without(pulled("open"), "/title"), &["missing required field `title`"]);
    fail(g, &with(closed, "/response/response/actor", json!("nobody")), &["`/response/response/actor`"]);
    fail(g, &without(pulled("open"), "/id"), &["missing required field `id`"]);
}

#[test]
fn capability_document() {
    let c = SchemaKind::Capability;
    let doc = json!({
        "ma2h_version": "0.5", "max_body_bytes": 65536, "max_part_bytes": 262144, "max_context_parts": 16,
        "auth_schemes": ["bearer", "apikey"], "callback_auth_schemes": ["hmac", "bearer", "apikey"],
        "signature_algs": ["hmac-sha256", "ed25519"],
        "rate_limit": { "requests_per_minute": 60, "inbox_depth": 1000 },
        "retention_days": 30, "replay_window_seconds": 120,
        "x_hub": { "build": "dev" }
    });
    pass(c, &doc);
    pass(c, &json!({ "ma2h_version": "0.5" }));
    fail(c, &without(doc.clone(), "/ma2h_version"), &["missing required field `ma2h_version`"]);
    fail(c, &with(doc.clone(), "/auth_schemes/1", json!("basic")), &["`/auth_schemes/1`"]);
    fail(c, &with(doc.clone(), "/signature_algs/0", json!("rsa")), &["`/signature_algs/0`"]);
    fail(c, &with(doc.clone(), "/rate_limit/requests_per_minute", json!(-1)), &["`/rate_limit/requests_per_minute`"]);
    fail(c, &with(doc, "/max_body_bytes", json!("64k")), &["`/max_body_bytes`", "integer"]);
}

#[test]
fn schemas_use_our_namespace_and_compile() {
    for kind in SchemaKind::ALL {
        let doc = kind.document();
        assert_eq!(doc["$id"], json!(kind.id()), "{kind:?}");
        assert!(kind.id().starts_with("https://ma2h-hub.dev/schema/v0.5/"));
        assert_eq!(doc["$schema"], json!("https://json-schema.org/draft/2020-12/schema"));
        // forces compilation (including the cross-file `$ref`s of the GET body)
        let _ = validate(kind, &json!({}));
    }
}

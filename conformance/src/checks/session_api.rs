//! The session API as the §16 checks use it: the agents they act as, the advertised bounds, the
//! requests (register, read, list, close, drain, ack, resolve, submit naming a session) and the
//! §16.3 touchpoint table a presented session is checked against.

use std::time::{SystemTime, UNIX_EPOCH};

use chrono::{DateTime, Utc};
use ma2h_protocol::schema::{self, SchemaKind};
use serde_json::{Value, json};

use super::mailbox::unknown_id;
use super::{Ctx, ts};
use crate::client::Resp;
use crate::report::{Report, ensure};

pub(super) type Check = (&'static str, &'static str);

pub(super) const SESSIONS: &str = "/v1/sessions";
/// The longest lease / retention window the runner waits out.
pub(super) const MAX_WINDOW: u64 = 10;
/// The touchpoints that present a session (§16.3), in the order [`touch_all`] calls them.
pub(super) const TOUCHES: [&str; 4] = ["drain", "ack", "resolve", "submit"];
pub(super) type Want = [(u16, Option<&'static str>); 4];
/// An own live session.
pub(super) const LIVE: Want = [(200, None), (200, None), (200, None), (202, None)];
/// Another principal's or an unknown session: indistinguishable from nonexistent.
pub(super) const UNKNOWN: Want = [(404, None), (404, None), (404, None), (422, Some("invalid_field"))];
/// An own session that expired or that its owner closed: "re-register and continue".
pub(super) const ENDED: Want =
    [(410, Some("gone")), (410, Some("gone")), (410, Some("gone")), (410, Some("destination_gone"))];
/// An own session the account's operator closed: "stop; do not re-register".
pub(super) const KILLED: Want = [(410, Some(OPERATOR)); 4];
pub(super) const OPERATOR: &str = "session_closed_by_operator";

/// What the capability document says about sessions.
pub(super) struct Caps {
    pub min: u64,
    pub max: u64,
    pub max_live: u64,
    pub retention: u64,
    pub hard_stop: bool,
    pub agent_list: bool,
}

/// An agent the checks act as.
#[derive(Clone, Copy)]
pub(super) struct Who<'a> {
    pub key: &'a str,
    pub id: &'a str,
}

/// The agents the session checks act as: the first agent, another agent of its account, and
/// (when configured) an agent of another account.
#[derive(Clone, Copy)]
pub(super) struct Cast<'a> {
    pub bot: Who<'a>,
    pub other: Who<'a>,
    pub foreign: Option<Who<'a>>,
}

pub(super) fn record(r: &mut Report, (section, name): Check, res: Result<(), String>) {
    r.result(section, name, res);
}

pub(super) fn skip(r: &mut Report, (section, name): Check, why: &str) {
    r.skip(section, name, why);
}

pub(super) fn unix_now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs() as i64
}

pub(super) fn timestamp(v: &Value) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(v.as_str()?).ok().map(|t| t.with_timezone(&Utc))
}

/// A well-formed session id (`sess_` + a ULID) nobody registered, from the run nonce.
pub(super) fn unknown_session(cx: &Ctx) -> String {
    format!("sess_{}", &unknown_id(&cx.nonce)[4..])
}

/// `agent:<id>#<sess>` (§4).
pub(super) fn address(agent: &str, sess: &str) -> String {
    format!("agent:{agent}#{sess}")
}

fn descriptor(cx: &Ctx, who: Who<'_>, session: Option<&str>) -> Value {
    let mut agent = json!({ "id": who.id, "run_id": format!("conformance-{}", cx.nonce), "runtime": "cli" });
    if let Some(s) = session {
        agent["session"] = json!(s);
    }
    agent
}

/// A notify from `who`, naming `session` in `agent.session`.
pub(super) fn notify(cx: &Ctx, who: Who<'_>, session: Option<&str>) -> Value {
    json!({ "ma2h_version": "0.5", "type": "notify", "created_at": ts(Utc::now()),
        "agent": descriptor(cx, who, session), "title": "conformance: session notify" })
}

/// A select ask from `who`; without `resolvers` only its submitter may resolve it (§9.1).
pub(super) fn ask(cx: &Ctx, who: Who<'_>, label: &str, session: Option<&str>, resolvers: Option<&str>) -> Value {
    let mut e = json!({ "ma2h_version": "0.5", "type": "ask", "created_at": ts(Utc::now()),
        "agent": descriptor(cx, who, session), "title": format!("conformance: {label}"),
        "idempotency_key": cx.key(label),
        "request": { "mode": "select",
            "options": [{ "value": "ship", "label": "Ship" }, { "value": "hold", "label": "Hold" }] } });
    if let Some(actor) = resolvers {
        e["request"]["allowed_resolvers"] = json!([actor]);
    }
    e
}

pub(super) async fn register(cx: &Ctx, key: &str, body: &Value) -> Resp {
    cx.hub.post(SESSIONS, key, body).await
}

/// A registration's 201: schema-valid, with the session object returned.
pub(super) fn minted(resp: &Resp) -> Result<Value, String> {
    resp.expect(201, None).map_err(|e| format!("register: {e}"))?;
    schema::validate(SchemaKind::SessionEnvelope, &resp.body).map_err(|e| format!("session schema: {e}"))?;
    Ok(resp.body["session"].clone())
}

/// Register a session for `who`; `Ok(id)`.
pub(super) async fn open(cx: &Ctx, who: Who<'_>, ttl: Option<u64>, label: &str) -> Result<String, String> {
    let mut body = json!({ "label": format!("conformance: {label}"), "run_id": format!("conformance-{}", cx.nonce) });
    if let Some(t) = ttl {
        body["ttl_seconds"] = json!(t);
    }
    let s = minted(&register(cx, who.key, &body).await)?;
    s["id"].as_str().map(str::to_owned).ok_or_else(|| format!("no session id: {s}"))
}

pub(super) async fn read(cx: &Ctx, key: &str, id: &str) -> Resp {
    cx.hub.get(&format!("{SESSIONS}/{id}"), key).await
}

pub(super) async fn close(cx: &Ctx, key: &str, id: &str) -> Resp {
    cx.hub.call("DELETE", &format!("{SESSIONS}/{id}"), Some(key), None).await
}

/// A single-session read: 200, schema-valid; the session object.
pub(super) async fn session(cx: &Ctx, key: &str, id: &str) -> Result<Value, String> {
    let resp = read(cx, key, id).await;
    resp.expect(200, None).map_err(|e| format!("read {id}: {e}"))?;
    schema::validate(SchemaKind::SessionEnvelope, &resp.body).map_err(|e| format!("session schema: {e}"))?;
    ensure(resp.body["session"]["id"] == id, || format!("read {id} returned {}", resp.body))?;
    Ok(resp.body["session"].clone())
}

/// `GET /v1/sessions` with `key`: the body, list-schema-valid.
pub(super) async fn list(cx: &Ctx, key: &str) -> Result<Value, String> {
    let resp = cx.hub.get(SESSIONS, key).await;
    resp.expect(200, None).map_err(|e| format!("list: {e}"))?;
    schema::validate(SchemaKind::SessionList, &resp.body).map_err(|e| format!("session list schema: {e}"))?;
    Ok(resp.body)
}

pub(super) fn listed<'v>(body: &'v Value, id: &str) -> Option<&'v Value> {
    body["sessions"].as_array()?.iter().find(|s| s["id"] == id)
}

/// `GET /v1/inbox?wait=0[&session=…]`.
pub(super) async fn drain(cx: &Ctx, key: &str, session: Option<&str>) -> Resp {
    let q = session.map(|s| format!("&session={s}")).unwrap_or_default();
    cx.hub.get(&format!("/v1/inbox?wait=0{q}"), key).await
}

pub(super) fn entries(resp: &Resp) -> Result<Vec<Value>, String> {
    resp.expect(200, None).map_err(|e| format!("drain: {e}"))?;
    resp.body["messages"].as_array().cloned().ok_or_else(|| format!("drain: no `messages` array: {}", resp.show()))
}

/// `POST /v1/inbox/ack[?session=…]`.
pub(super) async fn ack(cx: &Ctx, key: &str, session: Option<&str>, ids: &[&str]) -> Resp {
    let q = session.map(|s| format!("?session={s}")).unwrap_or_default();
    cx.hub.post(&format!("/v1/inbox/ack{q}"), key, &json!({ "ids": ids })).await
}

pub(super) async fn resolve(cx: &Ctx, key: &str, session: &str, id: &str) -> Resp {
    let body = json!({ "resolution": "answered", "value": "ship" });
    cx.hub.post(&format!("/v1/messages/{id}/resolve?session={session}"), key, &body).await
}

/// The four touchpoints presenting `sess` as `who`: a drain, an ack (of an unknown id), a resolve
/// of `ask`, a submit naming it in `agent.session`.
pub(super) async fn touch_all(cx: &Ctx, who: Who<'_>, sess: &str, ask: &str) -> [Resp; 4] {
    [
        drain(cx, who.key, Some(sess)).await,
        ack(cx, who.key, Some(sess), &[&unknown_id(&cx.nonce)]).await,
        resolve(cx, who.key, sess, ask).await,
        cx.hub.submit(who.key, &notify(cx, who, Some(sess))).await,
    ]
}

pub(super) fn expect_touches(touches: &[Resp; 4], want: Want) -> Result<(), String> {
    for ((name, resp), (status, code)) in TOUCHES.iter().zip(touches).zip(want) {
        resp.expect(status, code).map_err(|e| format!("{name}: {e}"))?;
    }
    Ok(())
}

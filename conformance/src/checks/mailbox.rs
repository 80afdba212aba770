//! The human→agent leg: §8.0 `inbound`/`presence` advertisement, §13 directives from the
//! operator, the §8.7 drain (visibility window, redelivery) and consume/ack, §9.7 directive
//! signatures verified the way an agent must (§13.4: schema, context rebuilt from what was
//! received, replay window, `to` is me), the §14.2 delivery track, and §15 presence.
//!
//! Authoring is this Hub's `POST /v1/operator/directives` and the track its
//! `GET /v1/operator/directives/{id}` (the spec leaves the authoring surface to the Hub); without
//! them the directive checks are skipped. The signatures verify with the Hub's Ed25519 keys
//! published in the capability document, plus `--signing-secret` when the first agent signs with
//! HMAC. The timing checks wait out the advertised visibility and freshness windows, so they run
//! only when those are short (≤ 10 s — the local script starts the Hub so); otherwise they are
//! skipped. `--foreign-agent-key` (an agent of another account) adds the cross-account cases.

use std::collections::HashSet;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use chrono::{DateTime, Utc};
use ma2h_protocol::inbound::{InboundContext, parse_signature_member};
use ma2h_protocol::schema::{self, SchemaKind};
use ma2h_protocol::signature::{self, VerifyingKey};
use serde_json::{Value, json};

use super::{Ctx, ts};
use crate::client::Resp;
use crate::report::{Report, ensure};

type Check = (&'static str, &'static str);

const CAPABILITY: Check =
    ("8.0", "the capability document's `inbound` and `presence` objects are schema-valid and enabled");
const UNDELIVERABLE: Check = (
    "13.2",
    "a directive to an unknown, another account's or a session-qualified agent is one identical 422 `unknown_destination`",
);
const SENT: Check = (
    "13.1",
    "an operator's directive is accepted 201 with a Hub-assigned id, the attested `from` and a `queued` track",
);
const NEVER_DELIVERED: Check =
    ("8.7", "an ack of a never-delivered directive is a no-op (answered as an unknown id; the track stays `queued`)");
const DRAINED: Check = (
    "9.7",
    "a drained directive is schema-valid, addressed to the caller, as authored, and its signature verifies over the rebuilt inbound_signed_context",
);
const DELIVERED: Check = ("14.2", "a drained directive's track reads `delivered` with `delivered_at`");
const HIDDEN: Check = ("8.7", "a drained directive is hidden from the next drain inside the visibility window");
const ISOLATED: Check =
    ("8.7", "another agent's drain never sees the directive (queued, and once its visibility window lapsed)");
const FOREIGN_ACK: Check =
    ("8.7", "another agent's ack of the directive is a no-op (answered as an unknown id; the track is unchanged)");
const REDELIVERED: Check = (
    "9.7",
    "an unacked directive is redelivered after the visibility window: same id and content, fresh t/jti, verifying signature",
);
const ACKED: Check = (
    "14.3",
    "an ack consumes the directive: counted, the track reads `acknowledged` with the §14.1 ack; a repeat changes nothing",
);
const GONE: Check = ("8.7", "an acked directive is never redelivered (a drain after the visibility window)");
const INBOUND: [Check; 11] =
    [UNDELIVERABLE, SENT, NEVER_DELIVERED, DRAINED, DELIVERED, HIDDEN, ISOLATED, FOREIGN_ACK, REDELIVERED, ACKED, GONE];

const NEVER_SEEN: Check = ("15.2", "an agent that has never polled reads `unknown` (no last_seen) to its operator");
const OFFLINE: Check =
    ("15.2", "after the freshness window without activity the agent reads `offline`, keeping last_seen");
const ONLINE: Check = ("15.1", "a drain makes an `offline` agent `online` to its operator, with a fresh last_seen");
const OWNER_ONLY: Check = ("15.3", "another agent reading an online agent's presence gets `unknown` without last_seen");
const NOT_OURS: Check =
    ("15.3", "the operator reads `unknown` (no last_seen) for an unknown agent and for another account's active agent");
const PRESENCE: [Check; 5] = [NEVER_SEEN, NOT_OURS, OFFLINE, ONLINE, OWNER_ONLY];

pub(super) const DIRECTIVES: &str = "/v1/operator/directives";
/// The longest visibility / freshness window the runner waits out.
const MAX_WINDOW: u64 = 10;
/// The directive members §9.7 binds; the drained directive must carry them exactly as authored.
const AUTHORED: [&str; 5] = ["title", "body", "priority", "tags", "context"];

/// The first agent's presence before any other check made it poll.
pub struct Start {
    before: Option<Resp>,
}

/// Read the first agent's presence before the rest of the run (the long-poll checks make it
/// `online`), for the never-seen check.
pub async fn start(cx: &Ctx, capability: &Value) -> Start {
    let before = match enabled(capability, "presence") {
        true => Some(presence(cx, &cx.cfg.operator_key, &cx.cfg.agent_id).await),
        false => None,
    };
    Start { before }
}

fn enabled(capability: &Value, name: &str) -> bool {
    capability[name]["enabled"] == true
}

fn record(r: &mut Report, (section, name): Check, res: Result<(), String>) {
    r.result(section, name, res);
}

fn skip(r: &mut Report, (section, name): Check, why: &str) {
    r.skip(section, name, why);
}

fn unix_now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).unwrap_or_default().as_secs() as i64
}

/// Every mailbox and presence check.
pub async fn run(cx: &Ctx, r: &mut Report, capability: &Value, start: Start) {
    let (inbound_on, presence_on) = (enabled(capability, "inbound"), enabled(capability, "presence"));
    if !inbound_on && !presence_on {
        let why = "the Hub advertises neither `inbound` nor `presence` (§8.0)";
        for c in [CAPABILITY].iter().chain(&INBOUND).chain(&PRESENCE) {
            skip(r, *c, why);
        }
        return;
    }
    record(r, CAPABILITY, advertised(capability, inbound_on, presence_on));
    let w = capability["presence"]["freshness_seconds"].as_u64().filter(|_| presence_on);

    if let Some(before) = &start.before {
        never_seen(r, before, w);
    } else {
        skip(r, NEVER_SEEN, "the Hub advertises no `presence` (§8.0)");
    }

    let mb = Mailbox::new(cx, capability);
    if inbound_on {
        inbound(&mb, r).await;
    } else {
        for c in INBOUND {
            skip(r, c, "the Hub advertises no `inbound` (§8.0)");
        }
    }
    if presence_on {
        presence_checks(cx, r, w, inbound_on).await;
    } else {
        for c in &PRESENCE[1..] {
            skip(r, *c, "the Hub advertises no `presence` (§8.0)");
        }
    }
}

/// §15 after the mailbox checks: owner-only reads, then `offline` after an idle window and
/// `online` again after a drain.
async fn presence_checks(cx: &Ctx, r: &mut Report, w: Option<u64>, inbound_on: bool) {
    let (agent, op, id) = (&cx.cfg.agent_key, &cx.cfg.operator_key, &cx.cfg.agent_id);
    let mut others = vec![("another agent of the account", cx.cfg.other_agent_key.as_str())];
    let foreign = cx.cfg.foreign_agent_key.as_deref();
    if let Some(k) = foreign {
        others.push(("another account's agent", k));
    }

    // §15.3: an unknown agent, and another account's agent that has just polled, read as never seen
    let res = async {
        let nobody = format!("conf-nobody-{}", cx.nonce);
        unknown_presence(&presence(cx, op, &nobody).await, &nobody, w).map_err(|e| format!("unknown agent: {e}"))?;
        if let (Some(key), true) = (foreign, inbound_on) {
            drain(cx, key, 0).await.map_err(|e| format!("another account's agent: {e}"))?;
            let fid = &cx.cfg.foreign_agent_id;
            unknown_presence(&presence(cx, op, fid).await, fid, w)
                .map_err(|e| format!("another account's agent (after it drained): {e}"))?;
        }
        Ok(())
    }
    .await;
    record(r, NOT_OURS, res);

    if !inbound_on {
        for c in [OFFLINE, ONLINE, OWNER_ONLY] {
            skip(r, c, "needs a drain (§15.1) and the Hub advertises no `inbound`");
        }
        return;
    }
    // a drain, then nothing from the first agent for the window
    let idle = poll(cx, agent).await;
    let mut before = None;
    match (&idle, w) {
        (Err(e), _) => record(r, OFFLINE, Err(e.clone())),
        (_, Some(w)) if w <= MAX_WINDOW => {
            // past W by the write granularity a Hub may lag, plus slack
            sleep_until(Instant::now() + Duration::from_millis(w * 1000 + 1500)).await;
            let resp = presence(cx, op, id).await;
            let res = valid_presence(&resp, id, Some(w)).and_then(|()| {
                ensure(resp.body["state"] == "offline", || {
                    format!("{w} s after its last drain it reads {}", resp.show())
                })?;
                before = Some(timestamp(&resp.body["last_seen"]).ok_or("no parseable last_seen")?);
                Ok(())
            });
            record(r, OFFLINE, res);
        }
        (_, w) => {
            let why = match w {
                Some(w) => format!("presence.freshness_seconds is {w} s; the runner waits out at most {MAX_WINDOW} s"),
                None => "the Hub advertises no presence.freshness_seconds".to_owned(),
            };
            skip(r, OFFLINE, &why);
        }
    }

    // a drain brings it back
    let polled = poll(cx, agent).await;
    let resp = presence(cx, op, id).await;
    let res = polled.and_then(|()| {
        valid_presence(&resp, id, w)?;
        ensure(resp.body["state"] == "online", || format!("after a drain it reads {}", resp.show()))?;
        let seen = timestamp(&resp.body["last_seen"]).ok_or("no parseable last_seen")?;
        let window = w.unwrap_or(0) as i64 * 1000 + 2000;
        let age = (cx.hub_now() - seen).num_milliseconds();
        ensure((-2000..=window).contains(&age), || format!("last_seen {seen} is {age} ms old by the Hub clock"))?;
        match before {
            Some(b) => ensure(seen > b, || format!("last_seen {seen} did not move past the offline read's {b}")),
            None => Ok(()),
        }
    });
    let online = res.is_ok();
    record(r, ONLINE, res);

    // §15.3: while it is online, no other agent sees it
    let mut res = ensure(online, || "needs the agent online (previous check)".into());
    for (who, key) in &others {
        let resp = presence(cx, key, id).await;
        res = res.and_then(|()| unknown_presence(&resp, id, w).map_err(|e| format!("{who}: {e}")));
    }
    record(r, OWNER_ONLY, res);
}

/// One drain by the first agent (activity, §15.1); whatever it returns is acked away.
async fn poll(cx: &Ctx, key: &str) -> Result<(), String> {
    let entries = drain(cx, key, 0).await?;
    let ids: Vec<String> = entries.iter().filter_map(entry_id).map(str::to_owned).collect();
    cleanup(cx, &ids).await;
    Ok(())
}

/// The run's view of the mailbox: keys to verify with and the addressee string.
struct Mailbox<'a> {
    cx: &'a Ctx,
    keys: Vec<VerifyingKey>,
    published: usize,
    window: i64,
    /// `agent:<first agent>`.
    me: String,
    visibility: Option<u64>,
}

impl<'a> Mailbox<'a> {
    fn new(cx: &'a Ctx, capability: &Value) -> Self {
        let mut keys = VerifyingKey::published(capability);
        let published = keys.len();
        if let Some(secret) = &cx.cfg.signing_secret {
            keys.push(VerifyingKey::Hmac(secret.as_bytes().to_vec()));
        }
        Self {
            cx,
            keys,
            published,
            window: capability["replay_window_seconds"].as_i64().unwrap_or(120),
            me: format!("agent:{}", cx.cfg.agent_id),
            visibility: capability["inbound"]["visibility_timeout_seconds"].as_u64(),
        }
    }

    fn explain(&self, e: String) -> String {
        let hmac =
            if self.cx.cfg.signing_secret.is_some() { " and the signing secret" } else { " (no --signing-secret)" };
        format!("{e} — tried {} published Ed25519 key(s){hmac}", self.published)
    }

    /// [`verify_entry`] with the run's keys, window and identity.
    fn verify(&self, entry: &Value) -> Result<(String, i64), String> {
        verify_entry(entry, &self.keys, &self.me, self.window, unix_now()).map_err(|e| match e {
            Failure::Signature(e) => self.explain(e),
            Failure::Other(e) => e,
        })
    }
}

/// Why an entry failed: its signature (explained with the keys tried), or anything else.
#[derive(Debug)]
pub(super) enum Failure {
    Signature(String),
    Other(String),
}

impl From<String> for Failure {
    fn from(e: String) -> Self {
        Self::Other(e)
    }
}

/// The agent-side §9.7 / §13.4 check of one drained entry, in the order an agent must apply it:
/// schema, the context rebuilt from the received directive (recomputing `payload_sha256`), the
/// signature, the replay window around `now`, `to` is `me`. The signature must also stop binding
/// once the `body` or `to` is changed. Returns `(jti, t)`.
pub(super) fn verify_entry(
    entry: &Value,
    keys: &[VerifyingKey],
    me: &str,
    window: i64,
    now: i64,
) -> Result<(String, i64), Failure> {
    schema::validate(SchemaKind::InboundMessage, entry).map_err(|e| format!("inbound-message schema: {e}"))?;
    let directive = &entry["directive"];
    let member = entry["signature"].as_str().ok_or("no `signature` member".to_owned())?;
    let parsed = parse_signature_member(member).map_err(|e| format!("signature member: {e}"))?;
    let ctx = InboundContext::for_directive(directive, &parsed.jti, &parsed.t)
        .map_err(|m| format!("the directive lacks `{m}`"))?;
    signature::verify_canonical(&ctx.to_canonical(), &parsed.v1, keys)
        .map_err(|e| Failure::Signature(format!("signature: {e}")))?;
    signature::check_window(parsed.t_unix, now, window).map_err(|e| e.to_string())?;
    ensure(directive["to"] == me, || format!("addressed to {} (I am {me})", directive["to"]))?;
    for (field, value) in [("body", json!("Deploy now.")), ("to", json!("agent:someone-else"))] {
        let mut forged = directive.clone();
        forged[field] = value;
        let ctx = InboundContext::for_directive(&forged, &parsed.jti, &parsed.t).map_err(str::to_owned)?;
        ensure(signature::verify_canonical(&ctx.to_canonical(), &parsed.v1, keys).is_err(), || {
            format!("a directive with a changed `{field}` still verifies")
        })?;
    }
    Ok((parsed.jti, parsed.t_unix))
}

/// §8.0: schema-valid, and the windows the checks interpret are advertised.
fn advertised(capability: &Value, inbound: bool, presence: bool) -> Result<(), String> {
    schema::validate(SchemaKind::Capability, capability).map_err(|e| format!("capability schema: {e}"))?;
    ensure(inbound, || format!("`inbound` is not enabled: {}", capability["inbound"]))?;
    ensure(presence, || format!("`presence` is not enabled: {}", capability["presence"]))?;
    let ib = &capability["inbound"];
    for k in ["poll_url", "ack_url"] {
        ensure(ib[k].is_string(), || format!("`inbound.{k}` is missing"))?;
    }
    ensure(ib["visibility_timeout_seconds"].is_u64(), || "`inbound.visibility_timeout_seconds` is missing".into())?;
    ensure(capability["presence"]["freshness_seconds"].is_u64(), || "`presence.freshness_seconds` is missing".into())
}

/// `GET /v1/agents/{id}/presence` with `key`.
async fn presence(cx: &Ctx, key: &str, agent_id: &str) -> Resp {
    cx.hub.get(&format!("/v1/agents/{agent_id}/presence"), key).await
}

/// 200, presence-schema-valid, about `agent_id`, with the advertised window.
fn valid_presence(resp: &Resp, agent_id: &str, w: Option<u64>) -> Result<(), String> {
    resp.expect(200, None)?;
    schema::validate(SchemaKind::Presence, &resp.body).map_err(|e| format!("presence schema: {e}: {}", resp.show()))?;
    ensure(resp.body["agent_id"] == agent_id, || format!("agent_id {} (asked for {agent_id})", resp.body["agent_id"]))?;
    match w {
        Some(w) => ensure(resp.body["freshness_seconds"] == w, || {
            format!("freshness_seconds {} differs from the advertised {w}", resp.body["freshness_seconds"])
        }),
        None => Ok(()),
    }
}

fn unknown_presence(resp: &Resp, agent_id: &str, w: Option<u64>) -> Result<(), String> {
    valid_presence(resp, agent_id, w)?;
    ensure(resp.body["state"] == "unknown" && resp.body.get("last_seen").is_none(), || {
        format!("{agent_id} reads {}", resp.show())
    })
}

fn never_seen(r: &mut Report, before: &Resp, w: Option<u64>) {
    let agent = before.body["agent_id"].as_str().unwrap_or_default();
    if before.status == 200
        && before.body["last_seen"].is_string()
        && schema::is_valid(SchemaKind::Presence, &before.body)
    {
        // an earlier run against this Hub: the never-seen state is gone for good
        let why = format!("the agent was seen before this run ({}); needs an agent that has never polled", before.body);
        return skip(r, NEVER_SEEN, &why);
    }
    let res = unknown_presence(before, agent, w).map_err(|e| format!("before the run: {e}"));
    record(r, NEVER_SEEN, res);
}

fn timestamp(v: &Value) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(v.as_str()?).ok().map(|t| t.with_timezone(&Utc))
}

async fn sleep_until(at: Instant) {
    tokio::time::sleep(at.saturating_duration_since(Instant::now())).await;
}

/// A directive body from the operator to `to`, expiring in ten minutes so nothing lingers.
pub(super) fn directive(cx: &Ctx, to: &str, label: &str) -> Value {
    json!({ "to": to, "title": format!("conformance: {label}"),
        "body": "Nothing to do: a **conformance** check.", "priority": "high", "tags": ["conformance", label],
        "context": [{ "kind": "text", "text": format!("run {}", cx.nonce) }],
        "expires_at": ts(cx.hub_now() + chrono::Duration::minutes(10)) })
}

/// A well-formed directive id (`dir_` + a ULID) no mailbox holds, from the run nonce.
pub(super) fn unknown_id(nonce: &str) -> String {
    let tail: String = nonce.to_uppercase().chars().filter(char::is_ascii_alphanumeric).collect();
    format!("dir_01{:0>24}", &tail[tail.len().saturating_sub(24)..])
}

async fn drain(cx: &Ctx, key: &str, wait: u64) -> Result<Vec<Value>, String> {
    let resp = cx.hub.get(&format!("/v1/inbox?wait={wait}"), key).await;
    resp.expect(200, None).map_err(|e| format!("drain: {e}"))?;
    resp.body["messages"].as_array().cloned().ok_or_else(|| format!("drain: no `messages` array: {}", resp.show()))
}

fn entry_id(entry: &Value) -> Option<&str> {
    entry["directive"]["id"].as_str()
}

fn find<'e>(entries: &'e [Value], id: &str) -> Option<&'e Value> {
    entries.iter().find(|e| entry_id(e) == Some(id))
}

async fn ack(cx: &Ctx, key: &str, ids: &[&str], note: Option<&str>) -> Resp {
    let mut body = json!({ "ids": ids });
    if let Some(n) = note {
        body["note"] = json!(n);
    }
    cx.hub.post("/v1/inbox/ack", key, &body).await
}

async fn track(cx: &Ctx, id: &str) -> Result<Value, String> {
    let resp = cx.hub.get(&format!("{DIRECTIVES}/{id}"), &cx.cfg.operator_key).await;
    resp.expect(200, None).map_err(|e| format!("track: {e}"))?;
    Ok(resp.body)
}

async fn track_state(cx: &Ctx, id: &str, want: &str) -> Result<Value, String> {
    let body = track(cx, id).await?;
    ensure(body["delivery"]["state"] == want, || format!("the track reads {} (expected {want})", body["delivery"]))?;
    Ok(body)
}

/// An ack that must change nothing: answered exactly as `baseline` (an unknown id).
fn same_as_unknown(resp: &Resp, baseline: &Resp) -> Result<(), String> {
    resp.expect(200, None)?;
    ensure(resp.body["acked"].is_u64(), || format!("no `acked` count: {}", resp.show()))?;
    ensure(resp.body == baseline.body, || {
        format!("answered {} where an unknown id gets {}", resp.show(), baseline.show())
    })
}

/// `Ok(id)` from a 201 directive track.
fn created(resp: &Resp) -> Result<String, String> {
    match (resp.status, resp.body["id"].as_str()) {
        (201, Some(id)) => Ok(id.to_owned()),
        _ => Err(format!("send: expected 201 with an id, got {}", resp.show())),
    }
}

/// The directive checks, in mailbox order.
async fn inbound(mb: &Mailbox<'_>, r: &mut Report) {
    let cx = mb.cx;
    let (agent, other, op) = (&cx.cfg.agent_key, &cx.cfg.other_agent_key, &cx.cfg.operator_key);
    let foreign = cx.cfg.foreign_agent_key.as_deref();
    let me = mb.me.as_str();

    // a directive that stays queued: acked before any drain
    let d0 = cx.hub.post(DIRECTIVES, op, &directive(cx, me, "never-delivered")).await;
    if d0.status == 404 || d0.status == 405 {
        let why =
            format!("the Hub has no POST {DIRECTIVES} (answered {}); the authoring surface is Hub-specific", d0.status);
        for c in INBOUND {
            skip(r, c, &why);
        }
        return;
    }
    let d0 = created(&d0);

    // §13.2: unknown, other-account and session-qualified destinations look alike
    let res = async {
        let mut tos = vec![format!("agent:conf-nobody-{}", cx.nonce), format!("{me}#sess_conformance{}", cx.nonce)];
        if foreign.is_some() {
            tos.push(format!("agent:{}", cx.cfg.foreign_agent_id));
        }
        let mut first: Option<(String, Resp)> = None;
        for to in tos {
            let resp = cx.hub.post(DIRECTIVES, op, &directive(cx, &to, "undeliverable")).await;
            resp.expect(422, Some("unknown_destination")).map_err(|e| format!("to {to}: {e}"))?;
            match &first {
                None => first = Some((to, resp)),
                Some((to0, r0)) => ensure(resp.body == r0.body, || {
                    format!("to {to} answered {} but to {to0} {}", resp.show(), r0.show())
                })?,
            }
        }
        Ok(())
    }
    .await;
    record(r, UNDELIVERABLE, res);

    // never-delivered ack: no effect, answered like an unknown id
    let unknown = unknown_id(&cx.nonce);
    let baseline = ack(cx, agent, &[&unknown], None).await;
    let res = async {
        let id = d0.clone()?;
        same_as_unknown(&ack(cx, agent, &[&id], None).await, &baseline)?;
        track_state(cx, &id, "queued").await.map(drop)
    }
    .await;
    record(r, NEVER_DELIVERED, res);

    // the directive the rest of the checks follow
    let sent = directive(cx, me, "directive");
    let resp = cx.hub.post(DIRECTIVES, op, &sent).await;
    let d1 = created(&resp);
    let res = async {
        let id = d1.clone()?;
        let d = &resp.body["directive"];
        schema::validate(SchemaKind::Directive, d).map_err(|e| format!("directive schema: {e}"))?;
        ensure(d["id"] == id.as_str(), || format!("directive.id {} differs from id {id}", d["id"]))?;
        ensure(d["from"] == cx.cfg.operator_actor.as_str(), || {
            format!("from {} (the operator is {})", d["from"], cx.cfg.operator_actor)
        })?;
        ensure(d["to"] == me, || format!("to {}", d["to"]))?;
        ensure(resp.body["delivery"]["state"] == "queued", || format!("delivery {}", resp.body["delivery"]))?;
        let read = track_state(cx, &id, "queued").await?;
        ensure(read["directive"] == *d, || "the track's directive differs from the 201's".into())
    }
    .await;
    record(r, SENT, res);
    let Ok(d1) = d1 else {
        for c in [DRAINED, DELIVERED, HIDDEN, ISOLATED, FOREIGN_ACK, REDELIVERED, ACKED, GONE] {
            skip(r, c, "needs the directive of the 201 check");
        }
        if let Ok(id) = &d0 {
            cleanup(cx, std::slice::from_ref(id)).await;
        }
        return;
    };
    let ours: Vec<&str> = [d0.as_deref().ok(), Some(d1.as_str())].into_iter().flatten().collect();

    // other agents see nothing of it (before any delivery)
    let mut others = vec![("another agent of the account", other.as_str())];
    if let Some(k) = foreign {
        others.push(("another account's agent", k));
    }
    let mut leaks = Vec::new();
    for (who, key) in &others {
        leaks.extend(leaked(cx, who, key, &ours).await);
    }

    // the first delivery
    let first_at = Instant::now();
    let first = drain(cx, agent, 0).await;
    // at once again: inside the window (unless this round trip outlasted it)
    let again = drain(cx, agent, 0).await;
    let in_time = mb.visibility.is_none_or(|v| first_at.elapsed() < Duration::from_secs(v));
    let mut drained: HashSet<String> = HashSet::new();
    for entries in [&first, &again].into_iter().flatten() {
        drained.extend(entries.iter().filter_map(entry_id).map(str::to_owned));
    }
    let first_sig = first.clone().and_then(|entries| {
        let e = find(&entries, &d1).ok_or(format!("{d1} not in the drain ({} entries)", entries.len()))?;
        let (jti, t_unix) = mb.verify(e)?;
        for k in AUTHORED {
            ensure(e["directive"][k] == sent[k], || format!("`{k}` is {} (sent {})", e["directive"][k], sent[k]))?;
        }
        ensure(e["directive"]["from"] == cx.cfg.operator_actor.as_str(), || {
            format!("from {}", e["directive"]["from"])
        })?;
        // every entry of the drain is signed per delivery: our other directive too, with its own jti
        if let Some(e0) = d0.as_deref().ok().and_then(|id| find(&entries, id)) {
            let (jti0, _) = mb.verify(e0).map_err(|e| format!("the other directive: {e}"))?;
            ensure(jti0 != jti, || "two entries of one drain share a jti".into())?;
        }
        Ok((jti, t_unix, e["directive"].clone()))
    });
    record(r, DRAINED, first_sig.clone().map(drop));

    let res = async {
        first.clone()?;
        let body = track_state(cx, &d1, "delivered").await?;
        ensure(body["delivery"]["delivered_at"].is_string(), || format!("no delivered_at: {}", body["delivery"]))?;
        ensure(body["delivery"].get("ack").is_none(), || format!("an ack before any: {}", body["delivery"]))
    }
    .await;
    record(r, DELIVERED, res);

    // hidden inside the window
    if in_time {
        let res = again.and_then(|entries| {
            first.clone()?;
            ensure(find(&entries, &d1).is_none(), || format!("{d1} was delivered again at once"))
        });
        record(r, HIDDEN, res);
    } else {
        skip(r, HIDDEN, "two drains in a row took longer than the visibility window");
    }

    // another agent's ack: no effect
    let before = track(cx, &d1).await;
    let mut res = Ok(());
    for (who, key) in &others {
        let baseline = ack(cx, key, &[&unknown], None).await;
        let resp = ack(cx, key, &[&d1], Some("not mine")).await;
        res = res.and_then(|()| same_as_unknown(&resp, &baseline).map_err(|e| format!("{who}: {e}")));
    }
    let after = track(cx, &d1).await;
    let res = res.and_then(|()| {
        let (before, after) = (before?, after?);
        ensure(before["delivery"] == after["delivery"], || {
            format!("the track went from {} to {}", before["delivery"], after["delivery"])
        })
    });
    record(r, FOREIGN_ACK, res);

    // redelivery after the window
    let mut last_delivery = first_at;
    let short = mb.visibility.filter(|v| *v <= MAX_WINDOW);
    if let Some(vis) = short {
        let due = first_at + Duration::from_millis(vis * 1000 + 300);
        sleep_until(due).await;
        // the window lapsed: the entry is claimable again — by its own mailbox only
        for (who, key) in &others {
            leaks.extend(leaked(cx, who, key, &ours).await);
        }
        let mut found = None;
        let mut error = None;
        while found.is_none() && Instant::now() < due + Duration::from_secs(5) {
            let at = Instant::now();
            match drain(cx, agent, 1).await {
                Ok(entries) => {
                    drained.extend(entries.iter().filter_map(entry_id).map(str::to_owned));
                    if let Some(e) = find(&entries, &d1) {
                        found = Some(e.clone());
                        last_delivery = at;
                    }
                }
                Err(e) => {
                    error = Some(e);
                    break;
                }
            }
        }
        let res = first_sig.clone().and_then(|(jti1, t1, d)| {
            if let Some(e) = error {
                return Err(e);
            }
            let e = found.ok_or(format!("{d1} not redelivered within 5 s after the {vis} s window"))?;
            let (jti2, t2) = mb.verify(&e).map_err(|e| format!("redelivery: {e}"))?;
            ensure(e["directive"] == d, || format!("the redelivered directive differs: {}", e["directive"]))?;
            ensure(jti2 != jti1, || format!("jti {jti1} reused"))?;
            ensure(t2 > t1, || format!("t {t2} is not later than the first delivery's {t1}"))
        });
        record(r, REDELIVERED, res);
    } else {
        let why = match mb.visibility {
            Some(v) => {
                format!("inbound.visibility_timeout_seconds is {v} s; the runner waits out at most {MAX_WINDOW} s")
            }
            None => "the Hub advertises no inbound.visibility_timeout_seconds".to_owned(),
        };
        skip(r, REDELIVERED, &why);
    }

    let res = ensure(leaks.is_empty(), || leaks.join("; "));
    record(r, ISOLATED, res);

    // the ack consumes it
    let note = format!("conformance: received {}", cx.nonce);
    let res = async {
        first.clone()?;
        let resp = ack(cx, agent, &[&d1], Some(&note)).await;
        resp.expect(200, None)?;
        ensure(resp.body["acked"] == 1, || format!("acking one delivered directive answered {}", resp.show()))?;
        let body = track_state(cx, &d1, "acknowledged").await?;
        let delivery = &body["delivery"];
        ensure(delivery["acknowledged_at"].is_string(), || format!("no acknowledged_at: {delivery}"))?;
        let a = &delivery["ack"];
        schema::validate(SchemaKind::Ack, a).map_err(|e| format!("ack schema: {e}: {a}"))?;
        ensure(a["in_reply_to"] == d1.as_str() && a["by"] == me && a["note"] == note.as_str(), || {
            format!("the ack is {a} (expected in_reply_to {d1}, by {me}, the note)")
        })?;
        let repeat = ack(cx, agent, &[&d1], Some("a second note")).await;
        repeat.expect(200, None).map_err(|e| format!("repeat: {e}"))?;
        let again = track(cx, &d1).await?;
        ensure(again["delivery"] == *delivery, || format!("a repeat ack changed the track to {}", again["delivery"]))
    }
    .await;
    record(r, ACKED, res);
    let rest: Vec<String> = drained.iter().filter(|id| **id != d1).cloned().collect();
    cleanup(cx, &rest).await;

    // never again
    if let Some(vis) = short {
        sleep_until(last_delivery + Duration::from_millis(vis * 1000 + 500)).await;
        let res = drain(cx, agent, 0).await;
        if let Ok(entries) = &res {
            let stray: Vec<String> =
                entries.iter().filter_map(entry_id).filter(|id| *id != d1).map(str::to_owned).collect();
            cleanup(cx, &stray).await;
        }
        let res = res.and_then(|entries| {
            ensure(find(&entries, &d1).is_none(), || format!("{d1} was delivered again after its ack"))
        });
        record(r, GONE, res);
    } else {
        let why = match mb.visibility {
            Some(v) => {
                format!("inbound.visibility_timeout_seconds is {v} s; the runner waits out at most {MAX_WINDOW} s")
            }
            None => "the Hub advertises no inbound.visibility_timeout_seconds".to_owned(),
        };
        skip(r, GONE, &why);
    }
}

/// Ack whatever else the first agent drained (our never-delivered directive, strays of earlier
/// runs), so nothing lingers in its mailbox.
async fn cleanup(cx: &Ctx, ids: &[String]) {
    for chunk in ids.chunks(100) {
        let ids: Vec<&str> = chunk.iter().map(String::as_str).collect();
        ack(cx, &cx.cfg.agent_key, &ids, Some("conformance cleanup")).await;
    }
}

/// What `who`'s drain shows of `ours` (each a problem), or why it failed.
async fn leaked(cx: &Ctx, who: &str, key: &str, ours: &[&str]) -> Vec<String> {
    match drain(cx, key, 0).await {
        Ok(entries) => entries
            .iter()
            .filter_map(entry_id)
            .filter(|id| ours.contains(id))
            .map(|id| format!("{who} drained {id}"))
            .collect(),
        Err(e) => vec![format!("{who}: {e}")],
    }
}

#[cfg(test)]
mod tests {
    use ma2h_protocol::ids::DirectiveId;
    use ma2h_protocol::signature::{SigningKey, header_line, sign_canonical};

    use super::*;

    const NOW: i64 = 1_782_043_200;

    fn key() -> SigningKey {
        SigningKey::ed25519_from_seed(&[9; 32])
    }

    fn directive(to: &str) -> Value {
        json!({ "ma2h_version": "0.5", "type": "directive", "id": "dir_01HZXDIR0001", "from": "human:alice",
            "to": to, "created_at": "2026-06-30T12:00:00Z", "title": "Pause deploys", "body": "Hold.",
            "priority": "urgent", "tags": ["incident"] })
    }

    /// An entry as a Hub signs it (§9.7) at `t`.
    fn entry(directive: Value, t: i64, jti: &str) -> Value {
        let ctx = InboundContext::for_directive(&directive, jti, &t.to_string()).unwrap();
        let v1 = sign_canonical(&ctx.to_canonical(), &key());
        json!({ "directive": directive, "signature": header_line(&t.to_string(), jti, &v1) })
    }

    fn check(entry: &Value) -> Result<(String, i64), Failure> {
        verify_entry(entry, &[key().verifying_key()], "agent:bot", 120, NOW)
    }

    #[test]
    fn an_honest_entry_verifies_and_yields_its_jti_and_t() {
        let (jti, t) = check(&entry(directive("agent:bot"), NOW - 5, "jti_a")).unwrap();
        assert_eq!((jti.as_str(), t), ("jti_a", NOW - 5));
    }

    #[test]
    fn a_changed_payload_another_key_a_stale_t_or_another_addressee_fail() {
        let mut tampered = entry(directive("agent:bot"), NOW, "jti_a");
        tampered["directive"]["body"] = json!("Deploy now.");
        assert!(matches!(check(&tampered), Err(Failure::Signature(_))));
        let other_key = verify_entry(
            &entry(directive("agent:bot"), NOW, "jti_a"),
            &[SigningKey::ed25519_from_seed(&[1; 32]).verifying_key()],
            "agent:bot",
            120,
            NOW,
        );
        assert!(matches!(other_key, Err(Failure::Signature(_))));
        let stale = check(&entry(directive("agent:bot"), NOW - 121, "jti_a"));
        assert!(matches!(&stale, Err(Failure::Other(e)) if e.contains("outside")), "{stale:?}");
        // validly signed — for someone else
        let elsewhere = check(&entry(directive("agent:other"), NOW, "jti_a"));
        assert!(matches!(&elsewhere, Err(Failure::Other(e)) if e.contains("addressed to")), "{elsewhere:?}");
    }

    #[test]
    fn a_schema_invalid_entry_fails_before_its_signature_is_looked_at() {
        let mut d = directive("agent:bot");
        d["request"] = json!({ "mode": "confirm" });
        let res = check(&entry(d, NOW, "jti_a"));
        assert!(matches!(&res, Err(Failure::Other(e)) if e.contains("schema")), "{res:?}");
        let bare = json!({ "directive": directive("agent:bot") });
        assert!(check(&bare).is_err());
    }

    #[test]
    fn the_unknown_id_is_a_well_formed_directive_id() {
        for nonce in ["18f2a3b4c5d6e7f81234", "1", "abcdefabcdefabcdefabcdefabcdefabcdef"] {
            let id = unknown_id(nonce);
            assert!(DirectiveId::parse(&id).is_some(), "{id}");
            assert_eq!(id.len(), 30, "{id}");
        }
    }

    fn resp(status: u16, body: Value) -> Resp {
        Resp { status, body, date: None, retry_after: None, location: None }
    }

    #[test]
    fn presence_reads_are_checked_against_the_schema_and_the_window() {
        let unknown = resp(200, json!({ "agent_id": "bot", "state": "unknown", "freshness_seconds": 4 }));
        assert!(unknown_presence(&unknown, "bot", Some(4)).is_ok());
        assert!(unknown_presence(&unknown, "bot", Some(90)).unwrap_err().contains("advertised"));
        assert!(unknown_presence(&unknown, "other", Some(4)).is_err());
        let leaked = resp(
            200,
            json!({ "agent_id": "bot", "state": "online", "freshness_seconds": 4, "last_seen": "2026-06-30T12:00:00Z" }),
        );
        assert!(valid_presence(&leaked, "bot", Some(4)).is_ok());
        assert!(unknown_presence(&leaked, "bot", Some(4)).is_err());
        let no_last_seen = resp(200, json!({ "agent_id": "bot", "state": "offline", "freshness_seconds": 4 }));
        assert!(valid_presence(&no_last_seen, "bot", Some(4)).unwrap_err().contains("schema"));
        assert!(valid_presence(&resp(404, json!({})), "bot", None).is_err());
    }

    #[test]
    fn a_no_op_ack_must_answer_exactly_as_an_unknown_id() {
        let baseline = resp(200, json!({ "acked": 0 }));
        assert!(same_as_unknown(&resp(200, json!({ "acked": 0 })), &baseline).is_ok());
        assert!(same_as_unknown(&resp(200, json!({ "acked": 1 })), &baseline).is_err());
        assert!(same_as_unknown(&resp(200, json!({})), &resp(200, json!({}))).is_err());
        assert!(same_as_unknown(&resp(404, json!({ "acked": 0 })), &baseline).is_err());
    }
}

//! §16 sessions, black-box: the advertised `sessions` object (§8.0); registration, its clamps,
//! refusals and cap (§16.1); own and account listing, and reads where another principal's
//! session is indistinguishable from an unknown one (§16.4); the owner's idempotent close (§16.3).
//!
//! [`run`] is the entry point of every session check. The rest live beside this module: lease
//! renewal and the §16.3 terminal-touchpoint table in [`super::session_touch`], the mail a session
//! receives (§8.7.1 `response` entries, session-addressed directives, the §14.2 bounce) in
//! [`super::session_mail`], the operator kill-switch and the §16.4.1 hard stop in
//! [`super::hard_stop`]; the requests they share in [`super::session_api`].

use ma2h_protocol::schema::{self, SchemaKind};
use serde_json::{Value, json};

use super::mailbox::unknown_id;
use super::session_api::{
    Caps, Cast, Check, SESSIONS, Who, ask, close, list, listed, minted, open, record, register, session, skip,
    timestamp, unknown_session,
};
use super::{Ctx, hard_stop, inter_agent, session_mail, session_touch};
use crate::report::{Report, ensure};

const CAPABILITY: Check = (
    "8.0",
    "the capability document advertises `inbound.session_param` and a schema-valid, enabled `sessions` object with consistent bounds",
);
const REGISTERED: Check = (
    "16.1",
    "an agent registers a session: 201 with Location, a Hub-minted `sess_` id it owns, `active`, its lease, last_seen and descriptive members",
);
const CLAMPED: Check = (
    "16.1",
    "a requested ttl_seconds is clamped into [min_ttl_seconds, max_ttl_seconds], and expires_at = created_at + ttl_seconds",
);
const REFUSED: Check = (
    "16.1",
    "a registration with an ill-typed member is 400 `validation_error`, an operator's is 403, and neither mints a session",
);
const CAPPED: Check =
    ("16.1", "a registration past `max_live_per_agent` live sessions is 429 with Retry-After; a close frees a slot");
const LISTED: Check = (
    "16.4",
    "GET /v1/sessions: an agent lists only its own sessions (`scope: own`), the operator the account's (`scope: account`)",
);
const READ: Check = ("16.4", "the owner and the account's operator read a session: 200 `{session}`, schema-valid");
const HIDDEN: Check = (
    "16.4",
    "another agent's or another account's read or DELETE of a session is 404, identical to an unknown id's, and leaves it active",
);
const CLOSED: Check = (
    "16.3",
    "the owner's DELETE closes a session: 200 `closed` with closed_at and no closed_by_operator; a repeat answers the same",
);
const OWN: [Check; 9] = [CAPABILITY, REGISTERED, CLAMPED, REFUSED, CAPPED, LISTED, READ, HIDDEN, CLOSED];

/// Every session check.
pub async fn run(cx: &Ctx, r: &mut Report, capability: &Value) {
    let s = &capability["sessions"];
    let num = |k: &str| s[k].as_u64();
    let caps = match (num("min_ttl_seconds"), num("max_ttl_seconds"), num("max_live_per_agent")) {
        (Some(min), Some(max), Some(max_live)) if s["enabled"] == true => Caps {
            min,
            max,
            max_live,
            retention: num("terminal_retention_seconds").unwrap_or(u64::MAX),
            hard_stop: s["operator_hard_stop"] == true,
            agent_list: s["agent_list_visibility"] == true,
        },
        _ => {
            let why = format!("the Hub advertises no enabled `sessions` with its bounds (§8.0): {s}");
            let all = OWN
                .iter()
                .chain(&session_touch::ALL)
                .chain(&session_mail::ALL)
                .chain(&hard_stop::ALL)
                .chain(&inter_agent::ALL);
            for c in all {
                skip(r, *c, &why);
            }
            return;
        }
    };
    record(r, CAPABILITY, advertised(capability, &caps));
    let cast = Cast {
        bot: Who { key: &cx.cfg.agent_key, id: &cx.cfg.agent_id },
        other: Who { key: &cx.cfg.other_agent_key, id: &cx.cfg.other_agent_id },
        foreign: cx.cfg.foreign_agent_key.as_deref().map(|key| Who { key, id: &cx.cfg.foreign_agent_id }),
    };
    let (bot, other) = (cast.bot, cast.other);
    // an open ask of the first agent: what the resolve touchpoints try to resolve
    let ask = cx.hub.submit(bot.key, &ask(cx, bot, "session-touch", None, None)).await;
    let ask = super::ack_id(&ask).unwrap_or_else(|_| format!("msg_{}", &unknown_id(&cx.nonce)[4..]));

    registration(cx, r, &caps, bot).await;
    let live = open(cx, bot, Some(600), "live").await;
    let theirs = open(cx, other, Some(600), "another agent's").await;
    visibility(cx, r, &caps, cast, &live, &theirs).await;
    session_touch::run(cx, r, &caps, cast, &live, &theirs, &ask).await;
    if let Ok(id) = &live {
        close(cx, bot.key, id).await;
    }
    if let Ok(id) = &theirs {
        close(cx, other.key, id).await;
    }
    cx.close(&ask).await;

    session_mail::run(cx, r, capability, cast).await;
    hard_stop::run(cx, r, &caps).await;
    // The inter-agent leg rides sessions (§8.7.1 entries reach session drains only).
    inter_agent::run(cx, r, capability, cast).await;
}

/// §8.0: schema-valid, `inbound.session_param`, and bounds the other checks can rely on.
fn advertised(capability: &Value, caps: &Caps) -> Result<(), String> {
    schema::validate(SchemaKind::Capability, capability).map_err(|e| format!("capability schema: {e}"))?;
    ensure(capability["inbound"]["session_param"] == true, || {
        format!("`inbound.session_param` is {} (drains accept ?session=)", capability["inbound"]["session_param"])
    })?;
    let s = &capability["sessions"];
    ensure(caps.min >= 1 && caps.min <= caps.max, || format!("min_ttl_seconds/max_ttl_seconds: {s}"))?;
    ensure(caps.max_live >= 1, || format!("max_live_per_agent: {s}"))?;
    ensure(s["terminal_retention_seconds"].is_u64(), || format!("no terminal_retention_seconds: {s}"))?;
    for k in ["agent_list_visibility", "operator_hard_stop"] {
        ensure(s.get(k).is_none_or(Value::is_boolean), || format!("`sessions.{k}` is not a boolean: {s}"))?;
    }
    Ok(())
}

// ---- registration ---------------------------------------------------------------------------

async fn registration(cx: &Ctx, r: &mut Report, caps: &Caps, bot: Who<'_>) {
    let labels = json!({ "repo": "acme/conformance", "run": cx.nonce });
    let body = json!({ "run_id": format!("conformance-{}", cx.nonce), "label": "conformance: registered",
        "kind": "worker", "project": "conformance", "labels": labels, "ttl_seconds": 600 });
    let resp = register(cx, bot.key, &body).await;
    let res = minted(&resp).and_then(|s| {
        let id = s["id"].as_str().unwrap_or_default();
        let location = resp.location.as_deref().unwrap_or_default();
        ensure(location.ends_with(&format!("{SESSIONS}/{id}")), || format!("Location {location:?} for {id}"))?;
        ensure(s["agent_id"] == bot.id && s["state"] == "active", || format!("session {s}"))?;
        for k in ["run_id", "label", "kind", "project", "labels"] {
            ensure(s[k] == body[k], || format!("`{k}` is {} (registered {})", s[k], body[k]))?;
        }
        ensure(s["ttl_seconds"] == caps.max.min(600).max(caps.min), || format!("ttl_seconds {}", s["ttl_seconds"]))?;
        let seen = timestamp(&s["last_seen"]).ok_or(format!("no last_seen: {s}"))?;
        let age = (cx.hub_now() - seen).num_milliseconds();
        ensure((-2000..=5000).contains(&age), || format!("last_seen {seen} is {age} ms old"))
    });
    record(r, REGISTERED, res);
    if let Some(id) = resp.body["session"]["id"].as_str() {
        close(cx, bot.key, id).await;
    }

    // clamps: below the minimum, above the maximum, and none asked
    let mut res = Ok(());
    for (asked, want) in [(Some(1), Some(caps.min)), (Some(caps.max + 1000), Some(caps.max)), (None, None)] {
        let mut body = json!({ "label": "conformance: clamp" });
        if let Some(t) = asked {
            body["ttl_seconds"] = json!(t);
        }
        let resp = register(cx, bot.key, &body).await;
        res = res.and_then(|()| {
            let s = minted(&resp)?;
            let ttl = s["ttl_seconds"].as_u64().ok_or(format!("no ttl_seconds: {s}"))?;
            ensure(want.is_none_or(|w| ttl == w) && (caps.min..=caps.max).contains(&ttl), || {
                format!("asked {asked:?}, granted {ttl} (bounds [{}, {}])", caps.min, caps.max)
            })?;
            let (c, e) = (timestamp(&s["created_at"]), timestamp(&s["expires_at"]));
            let lease = c.zip(e).map(|(c, e)| (e - c).num_milliseconds()).ok_or(format!("timestamps: {s}"))?;
            ensure((lease - ttl as i64 * 1000).abs() <= 1000, || format!("expires_at - created_at = {lease} ms"))
        });
        if let Some(id) = resp.body["session"]["id"].as_str() {
            close(cx, bot.key, id).await;
        }
    }
    record(r, CLAMPED, res);

    // refusals mint nothing
    let res = async {
        let count = |l: Value| l["sessions"].as_array().map_or(0, Vec::len);
        let before = count(list(cx, bot.key).await?);
        let bad = [
            json!({ "ttl_seconds": "600" }),
            json!({ "ttl_seconds": 0 }),
            json!({ "ttl_seconds": 1.5 }),
            json!({ "label": 42 }),
            json!({ "run_id": "" }),
            json!({ "labels": { "repo": 7 } }),
            json!({ "labels": ["repo"] }),
            json!(["not", "an", "object"]),
        ];
        for body in &bad {
            register(cx, bot.key, body)
                .await
                .expect(400, Some("validation_error"))
                .map_err(|e| format!("{body}: {e}"))?;
        }
        register(cx, &cx.cfg.operator_key, &json!({})).await.expect(403, None).map_err(|e| format!("operator: {e}"))?;
        let after = count(list(cx, bot.key).await?);
        ensure(after == before, || format!("the agent held {before} sessions and now {after}"))
    }
    .await;
    record(r, REFUSED, res);

    if caps.max_live > 64 {
        let why = format!("max_live_per_agent is {}; the runner fills at most 64", caps.max_live);
        return skip(r, CAPPED, &why);
    }
    let mut opened = Vec::new();
    let res = async {
        let l = list(cx, bot.key).await?;
        let live = l["sessions"].as_array().map_or(0, |v| v.iter().filter(|s| s["state"] == "active").count());
        for _ in live as u64..caps.max_live {
            opened.push(open(cx, bot, Some(600), "cap").await?);
        }
        let over = register(cx, bot.key, &json!({ "label": "conformance: over the cap" })).await;
        if let Some(id) = over.body["session"]["id"].as_str() {
            opened.push(id.to_owned());
        }
        over.expect(429, None).map_err(|e| format!("registration {} of {}: {e}", caps.max_live + 1, caps.max_live))?;
        let retry = over.retry_after.as_deref().and_then(|v| v.trim().parse::<u64>().ok());
        ensure(retry.is_some(), || format!("no integer Retry-After on the 429 ({:?})", over.retry_after))?;
        let freed = opened.pop().ok_or("no session of ours to close")?;
        close(cx, bot.key, &freed).await.expect(200, None).map_err(|e| format!("close: {e}"))?;
        opened.push(open(cx, bot, Some(600), "cap").await.map_err(|e| format!("after a close: {e}"))?);
        Ok(())
    }
    .await;
    for id in &opened {
        close(cx, bot.key, id).await;
    }
    record(r, CAPPED, res);
}

// ---- reads ----------------------------------------------------------------------------------

async fn visibility(
    cx: &Ctx,
    r: &mut Report,
    caps: &Caps,
    cast: Cast<'_>,
    live: &Result<String, String>,
    theirs: &Result<String, String>,
) {
    let Cast { bot, other, foreign } = cast;
    let op = cx.cfg.operator_key.as_str();
    let res = async {
        let (mine, theirs) = (live.clone()?, theirs.clone()?);
        let own = list(cx, bot.key).await?;
        // agents never hold the account-wide grant where the ceiling is `false` (§16.4)
        let scope = own["scope"].as_str();
        ensure(scope == Some("own") || (caps.agent_list && scope == Some("account")), || {
            format!("an agent's list has scope {:?} (agent_list_visibility {})", scope, caps.agent_list)
        })?;
        ensure(listed(&own, &mine).is_some(), || format!("the agent's list lacks its {mine}"))?;
        if scope == Some("own") {
            let all = own["sessions"].as_array().cloned().unwrap_or_default();
            ensure(all.iter().all(|s| s["agent_id"] == bot.id), || "an own-scope list shows another agent's".into())?;
        }
        let acct = list(cx, op).await?;
        ensure(acct["scope"] == "account", || format!("the operator's list has scope {}", acct["scope"]))?;
        ensure(listed(&acct, &mine).is_some() && listed(&acct, &theirs).is_some(), || {
            format!("the operator's list lacks {mine} or {theirs}")
        })
    }
    .await;
    record(r, LISTED, res);

    let res = async {
        let id = live.clone()?;
        let s = session(cx, bot.key, &id).await?;
        ensure(s["agent_id"] == bot.id && s["state"] == "active" && s["last_seen"].is_string(), || format!("{s}"))?;
        let o = session(cx, op, &id).await.map_err(|e| format!("operator: {e}"))?;
        ensure(o["agent_id"] == bot.id, || format!("the operator reads {o}"))
    }
    .await;
    record(r, READ, res);

    let res = async {
        let id = live.clone()?;
        let unknown = unknown_session(cx);
        let mut readers = vec![("another agent of the account", other.key)];
        if let Some(f) = foreign {
            readers.push(("another account's agent", f.key));
        }
        for (who, key) in readers {
            for method in ["GET", "DELETE"] {
                let path = |s: &str| format!("{SESSIONS}/{s}");
                let base = cx.hub.call(method, &path(&unknown), Some(key), None).await;
                base.expect(404, None).map_err(|e| format!("{who}: {method} an unknown id: {e}"))?;
                let resp = cx.hub.call(method, &path(&id), Some(key), None).await;
                resp.expect(404, None).map_err(|e| format!("{who}: {method}: {e}"))?;
                ensure(resp.body == base.body, || {
                    format!("{who}: {method} answered {} where an unknown id gets {}", resp.show(), base.show())
                })?;
            }
        }
        let s = session(cx, bot.key, &id).await?;
        ensure(s["state"] == "active", || format!("after the others' DELETEs it reads {s}"))
    }
    .await;
    record(r, HIDDEN, res);

    let res = async {
        let id = open(cx, bot, Some(600), "closed").await?;
        let first = close(cx, bot.key, &id).await;
        first.expect(200, None)?;
        schema::validate(SchemaKind::SessionEnvelope, &first.body).map_err(|e| format!("session schema: {e}"))?;
        let s = &first.body["session"];
        ensure(s["id"] == id.as_str() && s["state"] == "closed" && s["closed_at"].is_string(), || format!("{s}"))?;
        ensure(s.get("closed_by_operator").is_none(), || format!("an owner's close carries {s}"))?;
        let again = close(cx, bot.key, &id).await;
        again.expect(200, None).map_err(|e| format!("repeat: {e}"))?;
        ensure(again.body["session"] == *s, || format!("a repeat answered {}", again.show()))?;
        let read = session(cx, bot.key, &id).await?;
        ensure(read["state"] == "closed" && read["closed_at"] == s["closed_at"], || format!("then reads {read}"))
    }
    .await;
    record(r, CLOSED, res);
}

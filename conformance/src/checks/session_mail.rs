//! What a session receives (§8.7.1): the §6 Response to an ask submitted with `agent.session`,
//! delivered as a `response` entry to that session's drain only and signed per §9.8 over
//! `response_signed_context` with `to = agent:<id>#<sess>` (verified the way the agent must: the
//! context rebuilt from the received body and its own drain identity), with its §14.2 response
//! track (`delivered-to-agent` by the drain, `acknowledged` by the inbox ack of its
//! `resolution_id`); session-addressed directives (§13.2) drained only by that session, signed
//! over that address (§9.7) and acked presenting it; the one identical 422 for every undeliverable
//! session address and the 410 for an ended one; and the §14.2 bounce of a closed session's
//! un-acked directives with its `prior`.

use std::time::{Duration, Instant};

use ma2h_protocol::entries::ResponseEntryContext;
use ma2h_protocol::inbound::parse_signature_member;
use ma2h_protocol::schema::{self, SchemaKind};
use ma2h_protocol::signature::{self, VerifyingKey};
use serde_json::{Value, json};

use super::Ctx;
use super::mailbox::{DIRECTIVES, Failure, directive, verify_entry};
use super::session_api::{
    self as s, Cast, Check, address, close, drain, entries, open, record, timestamp, unix_now, unknown_session,
};
use crate::client::Resp;
use crate::report::{Report, ensure};

const RESPONSE_SIGNED: Check = (
    "9.8",
    "the Response to an ask submitted with a live agent.session is a schema-valid `response` entry on that session's drain, its signature verifying over response_signed_context with to = agent:<id>#<sess> only",
);
const RESPONSE_ROUTED: Check = (
    "8.7.1",
    "the response entry is on no session-less drain nor another session's, and a session-less drain returns only directives",
);
const RESPONSE_TRACK: Check = (
    "14.2",
    "draining the response entry makes the message `delivered-to-agent`; acking its resolution_id presenting the session makes it `acknowledged`",
);
const ROUTED: Check = (
    "13.2",
    "a session-addressed directive is 201 with to = agent:<id>#<sess>, drained only by that session's drain, its signature binding that address",
);
const ROUTED_ACK: Check =
    ("14.3", "an ack presenting the session consumes its directive: the track reads `acknowledged`");
const DESTINATIONS: Check = (
    "13.2",
    "a directive to an unknown, another agent's or another account's session is one identical 422 `unknown_destination`; to an ended one 410 `destination_gone`",
);
const BOUNCED: Check = (
    "14.2",
    "closing a session bounces its un-acked directives: `bounced` with prior `delivered` (drained, with delivered_at) or `queued` (never drained)",
);
pub(super) const ALL: [Check; 7] =
    [RESPONSE_SIGNED, RESPONSE_ROUTED, RESPONSE_TRACK, ROUTED, ROUTED_ACK, DESTINATIONS, BOUNCED];

/// A 201 directive's id.
pub(super) fn created(resp: &Resp) -> Result<String, String> {
    match (resp.status, resp.body["id"].as_str()) {
        (201, Some(id)) => Ok(id.to_owned()),
        _ => Err(format!("directive: expected 201 with an id, got {}", resp.show())),
    }
}

pub(super) async fn send(cx: &Ctx, to: &str, label: &str) -> Resp {
    cx.hub.post(DIRECTIVES, &cx.cfg.operator_key, &directive(cx, to, label)).await
}

/// The operator's track of a directive.
pub(super) async fn track(cx: &Ctx, id: &str) -> Result<Value, String> {
    let resp = cx.hub.get(&format!("{DIRECTIVES}/{id}"), &cx.cfg.operator_key).await;
    resp.expect(200, None).map_err(|e| format!("track {id}: {e}"))?;
    Ok(resp.body)
}

/// Wait (≤ 15 s) for `id` to read `bounced` with `prior`; its `delivery` object. A lapsed
/// session's bounce waits for a sweep: on aws-local that is a scheduled function over moto, which
/// a busy two-core machine has been seen to take past 6 s.
pub(super) async fn bounced(cx: &Ctx, id: &str, prior: &str) -> Result<Value, String> {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let d = track(cx, id).await?["delivery"].clone();
        if d["state"] == "bounced" {
            ensure(d["prior"] == prior, || format!("{id} bounced with {d} (expected prior {prior})"))?;
            ensure(d.get("delivered_at").is_some() == (prior == "delivered"), || {
                format!("{id}: prior {prior} but {d}")
            })?;
            return Ok(d);
        }
        if Instant::now() > deadline {
            return Err(format!("{id} still reads {d} 15 s after its session ended"));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn directive_ids(entries: &[Value]) -> impl Iterator<Item = String> + '_ {
    entries.iter().filter_map(|e| e["directive"]["id"].as_str()).map(str::to_owned)
}

fn find_directive<'e>(entries: &'e [Value], id: &str) -> Option<&'e Value> {
    entries.iter().find(|e| e["directive"]["id"] == id)
}

fn find_response<'e>(entries: &'e [Value], message: &str) -> Option<&'e Value> {
    entries.iter().find(|e| e["response"]["in_reply_to"] == message)
}

/// The agent-side §9.8 check of a `response` entry drained presenting `sess`: schema, the context
/// rebuilt from the received Response with `to` from the drain identity, the signature, the
/// replay window — and the same signature must not verify for `sibling` or a changed answer.
fn verify_response(
    entry: &Value,
    keys: &[VerifyingKey],
    agent: &str,
    sess: &str,
    sibling: &str,
    window: i64,
) -> Result<(), String> {
    schema::validate(SchemaKind::InboundMessage, entry).map_err(|e| format!("inbound-message schema: {e}"))?;
    let members: Vec<&String> = entry.as_object().map(|o| o.keys().collect()).unwrap_or_default();
    ensure(members.len() == 2, || format!("the entry has members {members:?}"))?;
    let response = &entry["response"];
    ensure(response.get("to").is_none(), || "the §6 body carries a `to`".into())?;
    let member = entry["signature"].as_str().ok_or("no `signature` member")?;
    let parsed = parse_signature_member(member).map_err(|e| format!("signature member: {e}"))?;
    let canonical = |resp: &Value, sess: &str| {
        ResponseEntryContext::for_drain(resp, agent, sess, &parsed.jti, &parsed.t)
            .map(|c| c.to_canonical())
            .map_err(|m| format!("the response lacks `{m}`"))
    };
    signature::verify_canonical(&canonical(response, sess)?, &parsed.v1, keys)
        .map_err(|e| format!("signature over to = {}: {e} (tried {} key(s))", address(agent, sess), keys.len()))?;
    signature::check_window(parsed.t_unix, unix_now(), window).map_err(|e| e.to_string())?;
    ensure(signature::verify_canonical(&canonical(response, sibling)?, &parsed.v1, keys).is_err(), || {
        format!("the signature also verifies for {}", address(agent, sibling))
    })?;
    let mut forged = response.clone();
    forged["response"]["value"] = json!("hold");
    ensure(signature::verify_canonical(&canonical(&forged, sess)?, &parsed.v1, keys).is_err(), || {
        "a Response with a changed value still verifies".into()
    })
}

pub(super) async fn run(cx: &Ctx, r: &mut Report, capability: &Value, cast: Cast<'_>) {
    let Cast { bot, other, foreign } = cast;
    let mut keys = VerifyingKey::published(capability);
    if let Some(secret) = &cx.cfg.signing_secret {
        keys.push(VerifyingKey::Hmac(secret.as_bytes().to_vec()));
    }
    let window = capability["replay_window_seconds"].as_i64().unwrap_or(120);
    let mine = open(cx, bot, Some(600), "response").await;
    let sibling = open(cx, bot, Some(600), "sibling").await;
    // principal-addressed directives our session drains claim along the way, acked at the end
    let mut strays: Vec<String> = Vec::new();
    let mut cleanup: Vec<(&str, String)> = Vec::new();

    // ---- the Response of an ask submitted with agent.session
    let sent = async {
        let sess = mine.clone()?;
        let envelope = s::ask(cx, bot, "session-response", Some(&sess), Some(&cx.cfg.operator_actor));
        let id = super::ack_id(&cx.hub.submit(bot.key, &envelope).await)?;
        let answered = cx.answer(&id, "ship").await;
        answered.expect(200, None).map_err(|e| format!("resolve: {e}"))?;
        let rid = answered.body["resolution_id"].as_str().ok_or(format!("resolve: {}", answered.show()))?;
        Ok::<_, String>((id, rid.to_owned()))
    }
    .await;
    let sessionless = entries(&drain(cx, bot.key, None).await);
    let elsewhere = match &sibling {
        Ok(sib) => entries(&drain(cx, bot.key, Some(sib)).await),
        Err(e) => Err(e.clone()),
    };
    let t0 = cx.hub_now();
    let drained = match &mine {
        Ok(m) => entries(&drain(cx, bot.key, Some(m)).await),
        Err(e) => Err(e.clone()),
    };
    let t1 = cx.hub_now();
    for list in [&sessionless, &elsewhere, &drained].into_iter().flatten() {
        strays.extend(directive_ids(list));
    }

    let res = async {
        let ((id, rid), sess, sib) = (sent.clone()?, mine.clone()?, sibling.clone()?);
        let list = drained.clone()?;
        let e = find_response(&list, &id).ok_or(format!("no response entry for {id} ({} entries)", list.len()))?;
        verify_response(e, &keys, bot.id, &sess, &sib, window)?;
        let resp = &e["response"];
        ensure(resp["resolution_id"] == rid.as_str() && resp["resolution"] == "answered", || format!("{resp}"))?;
        ensure(resp["response"]["value"] == "ship", || format!("the answer is {}", resp["response"]))
    }
    .await;
    record(r, RESPONSE_SIGNED, res);

    let res = async {
        let (id, _) = sent.clone()?;
        let (list, other_list) = (sessionless.clone()?, elsewhere.clone()?);
        let odd: Vec<&Value> = list
            .iter()
            .filter(|e| e.as_object().is_none_or(|o| o.len() != 2 || !o.contains_key("directive")))
            .collect();
        ensure(odd.is_empty(), || format!("a session-less drain returned {}", odd[0]))?;
        ensure(find_response(&other_list, &id).is_none(), || "another session's drain got the response entry".into())
    }
    .await;
    record(r, RESPONSE_ROUTED, res);

    let res = async {
        let ((id, rid), sess) = (sent.clone()?, mine.clone()?);
        let list = drained.clone()?;
        find_response(&list, &id).ok_or("needs the drained response entry")?;
        // read well after the drain: a read-stamped delivered_at would be this late
        tokio::time::sleep(Duration::from_millis(1200)).await;
        let read = cx.hub.read(bot.key, &id).await;
        read.expect(200, None).map_err(|e| format!("read: {e}"))?;
        let d = &read.body["delivery"];
        ensure(d["state"] == "delivered-to-agent", || format!("after the drain: delivery {d}"))?;
        let at = timestamp(&d["delivered_at"]).ok_or(format!("no delivered_at: {d}"))?;
        let (lo, hi) = (t0 - chrono::Duration::seconds(1), t1 + chrono::Duration::milliseconds(500));
        ensure(at >= lo && at <= hi, || format!("delivered_at {at} is not the drain's ({t0} … {t1})"))?;
        let acked = s::ack(cx, bot.key, Some(&sess), &[&rid]).await;
        acked.expect(200, None).map_err(|e| format!("ack: {e}"))?;
        ensure(acked.body["acked"] == 1, || format!("acking {rid} answered {}", acked.show()))?;
        let read = cx.hub.read(bot.key, &id).await;
        let d = &read.body["delivery"];
        ensure(d["state"] == "acknowledged" && d["acknowledged_at"].is_string(), || format!("after the ack: {d}"))
    }
    .await;
    record(r, RESPONSE_TRACK, res);

    // ---- a directive addressed to the session
    let routed = async {
        let (sess, sib) = (mine.clone()?, sibling.clone()?);
        let to = address(bot.id, &sess);
        let resp = send(cx, &to, "session-addressed").await;
        let id = created(&resp)?;
        ensure(resp.body["directive"]["to"] == to.as_str(), || format!("the directive reads {}", resp.body))?;
        ensure(resp.body["delivery"]["state"] == "queued", || format!("delivery {}", resp.body["delivery"]))?;
        for (who, q) in [("a session-less drain", None), ("another session's drain", Some(sib.as_str()))] {
            let list = entries(&drain(cx, bot.key, q).await)?;
            strays.extend(directive_ids(&list));
            ensure(find_directive(&list, &id).is_none(), || format!("{who} got {id}"))?;
        }
        let list = entries(&drain(cx, bot.key, Some(&sess)).await)?;
        strays.extend(directive_ids(&list).filter(|d| *d != id));
        let e = find_directive(&list, &id).ok_or(format!("{id} not on its session's drain"))?;
        verify_entry(e, &keys, &to, window, unix_now()).map_err(|f| match f {
            Failure::Signature(e) => format!("{e} (tried {} key(s))", keys.len()),
            Failure::Other(e) => e,
        })?;
        let t = track(cx, &id).await?;
        ensure(t["delivery"]["state"] == "delivered", || format!("after the drain: {}", t["delivery"]))?;
        Ok::<_, String>(id)
    }
    .await;
    record(r, ROUTED, routed.clone().map(drop));

    let res = async {
        let (id, sess) = (routed?, mine.clone()?);
        let acked = s::ack(cx, bot.key, Some(&sess), &[&id]).await;
        acked.expect(200, None)?;
        ensure(acked.body["acked"] == 1, || format!("acking {id} answered {}", acked.show()))?;
        let t = track(cx, &id).await?;
        ensure(t["delivery"]["state"] == "acknowledged", || format!("after the ack: {}", t["delivery"]))
    }
    .await;
    record(r, ROUTED_ACK, res);

    // ---- undeliverable and ended session addresses
    let res = async {
        let sess = mine.clone()?;
        let theirs = open(cx, other, Some(600), "destination").await?;
        cleanup.push((other.key, theirs.clone()));
        let mut tos = vec![
            ("an unknown session", address(bot.id, &unknown_session(cx))),
            ("another agent's session", address(bot.id, &theirs)),
            ("a session under the wrong agent", address(other.id, &sess)),
        ];
        if let Some(f) = foreign {
            let fs = open(cx, f, Some(600), "foreign destination").await?;
            cleanup.push((f.key, fs.clone()));
            tos.push(("another account's session", address(f.id, &fs)));
        }
        let mut first: Option<(&str, Resp)> = None;
        for (what, to) in tos {
            let resp = send(cx, &to, "undeliverable").await;
            resp.expect(422, Some("unknown_destination")).map_err(|e| format!("{what}: {e}"))?;
            match &first {
                None => first = Some((what, resp)),
                Some((w0, r0)) => {
                    ensure(resp.body == r0.body, || format!("{what} answered {} but {w0} {}", resp.show(), r0.show()))?
                }
            }
        }
        let ended = open(cx, bot, Some(600), "ended destination").await?;
        close(cx, bot.key, &ended).await.expect(200, None).map_err(|e| format!("close: {e}"))?;
        send(cx, &address(bot.id, &ended), "ended").await.expect(410, Some("destination_gone"))
    }
    .await;
    record(r, DESTINATIONS, res);

    // ---- the bounce of a closed session's mail
    let res = async {
        let sess = open(cx, bot, Some(600), "bounce").await?;
        let to = address(bot.id, &sess);
        let d1 = created(&send(cx, &to, "bounce-delivered").await)?;
        let list = entries(&drain(cx, bot.key, Some(&sess)).await)?;
        strays.extend(directive_ids(&list).filter(|d| *d != d1));
        ensure(find_directive(&list, &d1).is_some(), || format!("{d1} not on its session's drain"))?;
        let d2 = created(&send(cx, &to, "bounce-queued").await)?;
        close(cx, bot.key, &sess).await.expect(200, None).map_err(|e| format!("close: {e}"))?;
        bounced(cx, &d1, "delivered").await?;
        bounced(cx, &d2, "queued").await.map(drop)
    }
    .await;
    record(r, BOUNCED, res);

    for (key, id) in &cleanup {
        close(cx, key, id).await;
    }
    for id in [&mine, &sibling].into_iter().flatten() {
        close(cx, bot.key, id).await;
    }
    strays.sort();
    strays.dedup();
    for chunk in strays.chunks(100) {
        let ids: Vec<&str> = chunk.iter().map(String::as_str).collect();
        s::ack(cx, bot.key, None, &ids).await;
    }
}

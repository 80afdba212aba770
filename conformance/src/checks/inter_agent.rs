//! The v0.5 inter-agent leg, black-box (§4 `to`, §8.0, §8.1, §8.2 `mailbox`, §8.7.1, §8.7.2,
//! §9.1, §9.8, §14.2): the advertised object; honest destination validation (one identical 422,
//! the sender's own ended session 410, no pre-0.5 `to`); the honest ack; the delivered `message`
//! entry (session drains only, attested `from`, stripped, signed); one claimant per window among
//! sibling sessions; the sender's `mailbox` track; the addressee as default resolver; the return
//! `response` entry; the bounce with its undeliverable auto-cancellation and signed `receipt`;
//! unseen expiry; replay; and the stream when advertised.
//!
//! The addressee is the first agent (its entries verify with the published keys or the configured
//! signing secret); the sender is the second agent, whose receipts must verify with the published
//! keys (`scripts/conformance.sh` signs its deliveries with Ed25519). The account must have
//! opted in (`ma2h-hub admin inter-agent --enable`): if it has not, every check is skipped.

use std::time::{Duration, Instant};

use ma2h_protocol::inbound::parse_signature_member;
use ma2h_protocol::inter_agent::{MessageEntryContext, ReceiptEntryContext};
use ma2h_protocol::schema::{self, SchemaKind};
use ma2h_protocol::signature::{self, VerifyingKey};
use serde_json::{Value, json};

use super::session_api::{Cast, Check, Who, ack, address, close, drain, entries, open, record, skip, unknown_session};
use super::{Ctx, ts};
use crate::client::Resp;
use crate::report::{Report, ensure};

const ADVERTISED: Check = (
    "8.0",
    "`inter_agent` is advertised (enabled, entry_kinds message/response/receipt, sender_allowlists) with `ack`, and a stream hold is at most the presence window",
);
const UNKNOWN: Check = (
    "4",
    "an addressed submit to an unknown agent, another account's agent, an unknown session or another agent's ended session is one identical 422 `unknown_destination`",
);
const GONE: Check = ("4", "an addressed submit to the sender's own ended session is 410 `destination_gone`");
const PRE05: Check = ("10", "a 0.4 envelope carrying `to` is refused with a 4xx, never accepted");
const ACKED: Check = (
    "8.1",
    "an addressed notify is 202 `queued`, an ask 202 `open`, each with a schema-valid `destination` — exactly {state: unknown} for another agent",
);
const DELIVERED: Check = (
    "8.7.1",
    "a `message` entry reaches only a session-presenting drain, with the attested session-qualified `from`, `state`/`client_ref`/callback stripped, and a §9.8 signature over message_signed_context that fails for a changed to/from/title",
);
const CLAIMED: Check = (
    "8.7.1",
    "a principal-addressed entry goes to one of two sibling sessions per visibility window, then to the other after it",
);
const TRACKED: Check = (
    "8.2",
    "the sender's GET carries `mailbox`: queued, delivered by the first drain, acknowledged by the inbox ack of the message id; an addressed notify's status mirrors it",
);
const RESOLVER: Check = (
    "9.1",
    "an addressed ask without allowed_resolvers refuses the submitter and the operator; the addressee presenting its session resolves it, attested agent:<id>#<sess>",
);
const RETURNED: Check =
    ("6", "the answer reaches the asker's live session as a `response` entry carrying the same resolution_id");
const BOUNCED: Check = (
    "14.2",
    "closing the addressee's session bounces its un-acked mail: the ask reads cancelled by system:undeliverable, mailbox bounced with prior, and the sender's session gets a §9.8-signed receipt with that prior",
);
const EXPIRED: Check =
    ("14.2", "an addressed notify that nobody drains reads `expired` (never delivered, no prior) after its expires_at");
const REPLAYED: Check =
    ("8.1", "replaying an addressed ask's key from another session returns the original id, status and destination");
const STREAMED: Check = (
    "8.7.2",
    "the advertised stream pushes a session's entry as an event (id = its ack key), ends its hold in time, and the push leaves the track `queued`",
);
pub(super) const ALL: [Check; 14] = [
    ADVERTISED, UNKNOWN, GONE, PRE05, ACKED, DELIVERED, CLAIMED, TRACKED, RESOLVER, RETURNED, BOUNCED, EXPIRED,
    REPLAYED, STREAMED,
];

type R = Result<(), String>;

fn envelope(cx: &Ctx, from: Who<'_>, kind: &str, to: &str, session: Option<&str>, label: &str) -> Value {
    let mut agent = json!({ "id": from.id, "run_id": format!("conformance-{}", cx.nonce), "runtime": "cli" });
    if let Some(s) = session {
        agent["session"] = json!(s);
    }
    let mut e = json!({ "ma2h_version": "0.5", "type": kind, "created_at": ts(chrono::Utc::now()), "agent": agent,
        "to": to, "title": format!("conformance: {label}"), "client_ref": "conf-ref",
        "state": { "resume": cx.nonce } });
    if kind == "ask" {
        e["idempotency_key"] = json!(cx.key(label));
        e["request"] = json!({ "mode": "confirm" });
    } else {
        e.as_object_mut().map(|o| o.remove("state"));
    }
    e
}

/// A 202 addressed ack: schema-valid with `destination`; `(id, body)`.
fn addressed_ack(resp: &Resp) -> Result<(String, Value), String> {
    resp.expect(202, None).map_err(|e| format!("addressed submit: {e}"))?;
    schema::validate(SchemaKind::SubmitAck, &resp.body).map_err(|e| format!("submit-ack schema: {e}"))?;
    ensure(resp.body.get("destination").is_some(), || format!("no `destination`: {}", resp.show()))?;
    Ok((resp.body["id"].as_str().unwrap_or_default().to_owned(), resp.body.clone()))
}

async fn read(cx: &Ctx, key: &str, id: &str) -> Result<Value, String> {
    let resp = cx.hub.read(key, id).await;
    resp.expect(200, None).map_err(|e| format!("GET {id}: {e}"))?;
    schema::validate(SchemaKind::GetMessage, &resp.body).map_err(|e| format!("get-message schema: {e}"))?;
    Ok(resp.body)
}

/// Poll (≤ 6 s) until `pred` holds on the sender's read of `id`.
async fn read_until(cx: &Ctx, key: &str, id: &str, what: &str, pred: impl Fn(&Value) -> bool) -> Result<Value, String> {
    let deadline = Instant::now() + Duration::from_secs(6);
    loop {
        let body = read(cx, key, id).await?;
        if pred(&body) {
            return Ok(body);
        }
        if Instant::now() > deadline {
            return Err(format!("{id} never showed {what}: {body}"));
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn find<'e>(list: &'e [Value], kind: &str, member: &str, value: &str) -> Option<&'e Value> {
    list.iter().find(|e| e[kind][member] == value)
}

/// The addressee-side §9.8 check of a `message` entry.
fn verify_message(entry: &Value, keys: &[VerifyingKey], window: i64) -> R {
    schema::validate(SchemaKind::InboundMessage, entry).map_err(|e| format!("inbound-message schema: {e}"))?;
    let m = &entry["message"];
    let parsed =
        parse_signature_member(entry["signature"].as_str().ok_or("no signature")?).map_err(|e| e.to_string())?;
    let canonical = |m: &Value| {
        MessageEntryContext::for_entry(m, &parsed.jti, &parsed.t).map(|c| c.to_canonical()).map_err(str::to_owned)
    };
    signature::verify_canonical(&canonical(m)?, &parsed.v1, keys).map_err(|e| format!("message signature: {e}"))?;
    signature::check_window(parsed.t_unix, super::session_api::unix_now(), window).map_err(|e| e.to_string())?;
    for field in ["to", "from", "title"] {
        let mut forged = m.clone();
        forged[field] = json!("agent:someone-else");
        ensure(signature::verify_canonical(&canonical(&forged)?, &parsed.v1, keys).is_err(), || {
            format!("a message with a changed `{field}` still verifies")
        })?;
    }
    Ok(())
}

fn verify_receipt(entry: &Value, keys: &[VerifyingKey], to: &str) -> R {
    schema::validate(SchemaKind::InboundMessage, entry).map_err(|e| format!("inbound-message schema: {e}"))?;
    let parsed =
        parse_signature_member(entry["signature"].as_str().ok_or("no signature")?).map_err(|e| e.to_string())?;
    let ctx = ReceiptEntryContext::for_receipt(&entry["receipt"], to, &parsed.jti, &parsed.t).map_err(str::to_owned)?;
    signature::verify_canonical(&ctx.to_canonical(), &parsed.v1, keys).map_err(|e| format!("receipt signature: {e}"))
}

pub(super) async fn run(cx: &Ctx, r: &mut Report, capability: &Value, cast: Cast<'_>) {
    let ia = &capability["inter_agent"];
    if ia["enabled"] != true {
        for c in ALL {
            skip(r, c, "inter_agent is not advertised as enabled");
        }
        return;
    }
    let Cast { bot: addressee, other: sender, foreign } = cast;
    // The account must have opted in: a probe notify to the addressee.
    let probe = cx
        .hub
        .submit(sender.key, &envelope(cx, sender, "notify", &format!("agent:{}", addressee.id), None, "probe"))
        .await;
    if probe.status == 422 && probe.body.to_string().contains("not enabled") {
        for c in ALL {
            skip(r, c, "the account has not opted in to the inter-agent leg");
        }
        return;
    }
    let mut keys = VerifyingKey::published(capability);
    if let Some(secret) = &cx.cfg.signing_secret {
        keys.push(VerifyingKey::Hmac(secret.as_bytes().to_vec()));
    }
    let window = capability["replay_window_seconds"].as_i64().unwrap_or(120);

    record(r, ADVERTISED, advertised(capability));
    // Sessions: the addressee's A (session-addressed mail) and A2 (sibling), the sender's S.
    let a = open(cx, addressee, Some(600), "a2a-addressee").await;
    let a2 = open(cx, addressee, Some(600), "a2a-sibling").await;
    let s = open(cx, sender, Some(600), "a2a-sender").await;
    // The probe notify is principal-addressed mail the sibling checks must not trip over.
    let mut cleanup: Vec<String> = ack_id_of(&probe).into_iter().collect();

    record(r, UNKNOWN, unknown(cx, sender, addressee, foreign).await);
    record(r, GONE, gone(cx, sender).await);
    record(r, PRE05, {
        let mut old = envelope(cx, sender, "notify", &format!("agent:{}", addressee.id), None, "pre-0.5");
        old["ma2h_version"] = json!("0.4");
        let resp = cx.hub.submit(sender.key, &old).await;
        ensure((400..500).contains(&resp.status), || format!("a 0.4 `to` was answered {}", resp.show()))
    });

    // ---- an addressed ask to A, from the sender's session S
    let flow = async {
        let (a, s) = (a.clone()?, s.clone()?);
        let ask = envelope(cx, sender, "ask", &address(addressee.id, &a), Some(&s), "a2a-ask");
        let (id, body) = addressed_ack(&cx.hub.submit(sender.key, &ask).await)?;
        Ok::<_, String>((a, s, id, body, ask))
    }
    .await;
    let notify = async {
        let (id, body) = addressed_ack(
            &cx.hub
                .submit(
                    sender.key,
                    &envelope(cx, sender, "notify", &format!("agent:{}", addressee.id), None, "a2a-notify"),
                )
                .await,
        )?;
        Ok::<_, String>((id, body))
    }
    .await;
    record(
        r,
        ACKED,
        async {
            let (_, _, _, ask_ack, _) = flow.clone()?;
            let (_, notify_ack) = notify.clone()?;
            ensure(notify_ack["status"] == "queued", || format!("addressed notify acked {notify_ack}"))?;
            ensure(ask_ack["status"] == "open", || format!("addressed ask acked {ask_ack}"))?;
            ensure(ask_ack["destination"] == json!({"state": "unknown"}), || {
                format!("destination {}", ask_ack["destination"])
            })
        }
        .await,
    );

    // Session-less drain first: it must not see the message entry.
    let bare = entries(&drain(cx, addressee.key, None).await);
    let drained = match &flow {
        Ok((a, ..)) => entries(&drain(cx, addressee.key, Some(a)).await),
        Err(e) => Err(e.clone()),
    };
    record(
        r,
        DELIVERED,
        async {
            let (_, s, id, _, ask) = flow.clone()?;
            let list = drained.clone()?;
            ensure(bare.clone()?.iter().all(|e| e.get("directive").is_some()), || {
                "a session-less drain returned a non-directive".into()
            })?;
            let e = find(&list, "message", "id", &id)
                .ok_or(format!("no message entry for {id} ({} entries)", list.len()))?;
            let m = &e["message"];
            ensure(m["from"] == address(sender.id, &s), || format!("from = {}", m["from"]))?;
            ensure(m["to"] == ask["to"], || format!("to = {}", m["to"]))?;
            ensure(m.get("state").is_none() && m.get("client_ref").is_none(), || format!("not stripped: {m}"))?;
            verify_message(e, &keys, window)
        }
        .await,
    );
    if let Ok(list) = &drained {
        cleanup.extend(list.iter().filter_map(|e| e["message"]["id"].as_str().map(str::to_owned)));
    }

    record(r, CLAIMED, claimed(cx, addressee, sender, &a, &a2, &mut cleanup).await);

    record(
        r,
        TRACKED,
        async {
            let (a, _, id, _, _) = flow.clone()?;
            let delivered = read(cx, sender.key, &id).await?;
            ensure(
                delivered["mailbox"]["state"] == "delivered" && delivered["mailbox"]["delivered_at"].is_string(),
                || format!("after the drain: {}", delivered["mailbox"]),
            )?;
            let (nid, _) = notify.clone()?;
            let queued = read(cx, sender.key, &nid).await?;
            ensure(queued["status"] == queued["mailbox"]["state"], || {
                format!("notify status {} vs {}", queued["status"], queued["mailbox"])
            })?;
            ack(cx, addressee.key, Some(&a), &[&id]).await.expect(200, None)?;
            let acked = read(cx, sender.key, &id).await?;
            ensure(acked["mailbox"]["state"] == "acknowledged", || format!("after the ack: {}", acked["mailbox"]))
        }
        .await,
    );

    let answered = async {
        let (a, _, id, _, _) = flow.clone()?;
        let answer = json!({ "resolution": "answered", "value": "approve" });
        let by_sender = cx.hub.resolve(sender.key, &id, &answer).await;
        ensure(matches!(by_sender.status, 403 | 404), || format!("the submitter's resolve: {}", by_sender.show()))?;
        let by_human = cx.hub.resolve(&cx.cfg.operator_key, &id, &answer).await;
        ensure(matches!(by_human.status, 403 | 404), || format!("the operator's resolve: {}", by_human.show()))?;
        let done = cx.hub.post(&format!("/v1/messages/{id}/resolve?session={a}"), addressee.key, &answer).await;
        done.expect(200, None)?;
        let read = read(cx, sender.key, &id).await?;
        ensure(read["response"]["response"]["actor"] == address(addressee.id, &a), || {
            format!("actor {}", read["response"]["response"]["actor"])
        })?;
        Ok::<_, String>(done.body["resolution_id"].as_str().unwrap_or_default().to_owned())
    }
    .await;
    record(r, RESOLVER, answered.clone().map(|_| ()));
    record(
        r,
        RETURNED,
        async {
            let (_, s, id, _, _) = flow.clone()?;
            let rid = answered.clone()?;
            let list = entries(&drain(cx, sender.key, Some(&s)).await)?;
            let e = find(&list, "response", "in_reply_to", &id).ok_or(format!("no response entry for {id}"))?;
            ensure(e["response"]["resolution_id"] == rid.as_str(), || {
                format!("resolution_id {}", e["response"]["resolution_id"])
            })?;
            ack(cx, sender.key, Some(&s), &[&rid]).await.expect(200, None)
        }
        .await,
    );

    record(r, BOUNCED, bounced(cx, addressee, sender, &s, &keys).await);
    record(r, EXPIRED, expired(cx, sender).await);
    record(r, REPLAYED, replayed(cx, sender, addressee).await);
    match capability["inbound"]["stream_url"].as_str() {
        Some(url) => record(r, STREAMED, streamed(cx, addressee, sender, url).await),
        None => skip(r, STREAMED, "no inbound.stream_url advertised (long-poll is the floor)"),
    }

    // Leave nothing claimable behind for later checks.
    for sess in [&a, &a2, &s].into_iter().flatten() {
        for key in [addressee.key, sender.key] {
            let ids: Vec<&str> = cleanup.iter().map(String::as_str).collect();
            ack(cx, key, None, &ids).await;
            close(cx, key, sess).await;
        }
    }
}

fn ack_id_of(resp: &Resp) -> Option<String> {
    resp.body["id"].as_str().map(str::to_owned)
}

fn advertised(capability: &Value) -> R {
    let ia = &capability["inter_agent"];
    ensure(ia["entry_kinds"] == json!(["message", "response", "receipt"]), || {
        format!("entry_kinds {}", ia["entry_kinds"])
    })?;
    ensure(ia["sender_allowlists"] == true, || format!("sender_allowlists {}", ia["sender_allowlists"]))?;
    ensure(capability["ack"]["enabled"] == true, || "inter_agent without the §14 ack primitive".into())?;
    if let Some(hold) = capability["inbound"]["stream_max_hold_seconds"].as_u64() {
        let fresh = capability["presence"]["freshness_seconds"].as_u64().unwrap_or(0);
        ensure(hold <= fresh, || format!("stream_max_hold_seconds {hold} > freshness_seconds {fresh}"))?;
    }
    Ok(())
}

async fn unknown(cx: &Ctx, sender: Who<'_>, addressee: Who<'_>, foreign: Option<Who<'_>>) -> R {
    let ended = open(cx, addressee, Some(600), "a2a-ended").await?;
    close(cx, addressee.key, &ended).await.expect(200, None)?;
    let mut targets = vec![
        format!("agent:conf-nobody-{}", cx.nonce),
        address(addressee.id, &unknown_session(cx)),
        address(addressee.id, &ended),
    ];
    if let Some(f) = foreign {
        targets.push(format!("agent:{}", f.id));
    }
    let mut bodies = Vec::new();
    for to in &targets {
        let resp = cx.hub.submit(sender.key, &envelope(cx, sender, "notify", to, None, "a2a-unknown")).await;
        resp.expect(422, Some("unknown_destination")).map_err(|e| format!("to {to}: {e}"))?;
        bodies.push(resp.body);
    }
    ensure(bodies.windows(2).all(|w| w[0] == w[1]), || format!("the refusals differ: {bodies:?}"))
}

async fn gone(cx: &Ctx, sender: Who<'_>) -> R {
    let mine = open(cx, sender, Some(600), "a2a-own-ended").await?;
    close(cx, sender.key, &mine).await.expect(200, None)?;
    let resp =
        cx.hub.submit(sender.key, &envelope(cx, sender, "notify", &address(sender.id, &mine), None, "a2a-gone")).await;
    resp.expect(410, Some("destination_gone"))
}

async fn claimed(
    cx: &Ctx,
    addressee: Who<'_>,
    sender: Who<'_>,
    a: &Result<String, String>,
    a2: &Result<String, String>,
    cleanup: &mut Vec<String>,
) -> R {
    let (a, a2) = (a.clone()?, a2.clone()?);
    let vis = Duration::from_secs(3);
    let (id, _) = addressed_ack(
        &cx.hub
            .submit(sender.key, &envelope(cx, sender, "notify", &format!("agent:{}", addressee.id), None, "a2a-role"))
            .await,
    )?;
    cleanup.push(id.clone());
    let first = entries(&drain(cx, addressee.key, Some(&a)).await)?;
    let second = entries(&drain(cx, addressee.key, Some(&a2)).await)?;
    let has = |list: &[Value]| find(list, "message", "id", &id).is_some();
    ensure(has(&first) != has(&second), || {
        format!("claimed by {} of the two sessions", u8::from(has(&first)) + u8::from(has(&second)))
    })?;
    let (holder, sibling) = if has(&first) { (&a, &a2) } else { (&a2, &a) };
    let _ = holder;
    // After the visibility window the sibling rescues it.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        tokio::time::sleep(vis.min(Duration::from_millis(500))).await;
        if has(&entries(&drain(cx, addressee.key, Some(sibling)).await)?) {
            return Ok(());
        }
        if Instant::now() > deadline {
            return Err("the sibling session never got the un-acked entry after the window".into());
        }
    }
}

async fn bounced(
    cx: &Ctx,
    addressee: Who<'_>,
    sender: Who<'_>,
    s: &Result<String, String>,
    keys: &[VerifyingKey],
) -> R {
    let s = s.clone()?;
    let doomed = open(cx, addressee, Some(600), "a2a-doomed").await?;
    let to = address(addressee.id, &doomed);
    let (seen, _) =
        addressed_ack(&cx.hub.submit(sender.key, &envelope(cx, sender, "ask", &to, Some(&s), "a2a-bounce")).await)?;
    entries(&drain(cx, addressee.key, Some(&doomed)).await)?;
    let (never, _) = addressed_ack(
        &cx.hub.submit(sender.key, &envelope(cx, sender, "notify", &to, Some(&s), "a2a-bounce-unseen")).await,
    )?;
    close(cx, &cx.cfg.operator_key, &doomed).await.expect(200, None)?;
    // The operator's close stopped the addressee principal (§16.4.1): lift it.
    cx.hub.call("DELETE", &format!("/v1/agents/{}/stop", addressee.id), Some(&cx.cfg.operator_key), None).await;
    let ask = read_until(cx, sender.key, &seen, "its bounce", |b| b["status"] != "open").await?;
    ensure(ask["status"] == "cancelled" && ask["response"]["response"]["actor"] == "system:undeliverable", || {
        format!("the bounced ask reads {} by {}", ask["status"], ask["response"]["response"]["actor"])
    })?;
    ensure(ask["mailbox"]["state"] == "bounced" && ask["mailbox"]["prior"] == "delivered", || {
        format!("mailbox {}", ask["mailbox"])
    })?;
    let unseen = read(cx, sender.key, &never).await?;
    ensure(unseen["status"] == "bounced" && unseen["mailbox"]["prior"] == "queued", || {
        format!("unseen notify {unseen}")
    })?;
    let list = entries(&drain(cx, sender.key, Some(&s)).await)?;
    let mut acks = Vec::new();
    for (id, prior) in [(&seen, "delivered"), (&never, "queued")] {
        let e =
            find(&list, "receipt", "in_reply_to", id).ok_or(format!("no receipt for {id} ({} entries)", list.len()))?;
        ensure(e["receipt"]["prior"] == prior && e["receipt"]["session"] == doomed.as_str(), || {
            format!("receipt {}", e["receipt"])
        })?;
        verify_receipt(e, keys, &address(sender.id, &s))?;
        acks.push(e["receipt"]["id"].as_str().unwrap_or_default().to_owned());
    }
    for e in &list {
        if let Some(rid) = e["response"]["resolution_id"].as_str() {
            acks.push(rid.to_owned());
        }
    }
    let ids: Vec<&str> = acks.iter().map(String::as_str).collect();
    ack(cx, sender.key, Some(&s), &ids).await.expect(200, None)
}

async fn expired(cx: &Ctx, sender: Who<'_>) -> R {
    // Self-addressed: no other drain of this run can claim it.
    let mut e = envelope(cx, sender, "notify", &format!("agent:{}", sender.id), None, "a2a-expiring");
    e["expires_at"] = json!(ts(cx.hub_now() + chrono::Duration::seconds(2)));
    let (id, _) = addressed_ack(&cx.hub.submit(sender.key, &e).await)?;
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let body = read_until(cx, sender.key, &id, "`expired`", |b| b["status"] == "expired").await?;
    ensure(body["mailbox"]["state"] == "expired" && body["mailbox"].get("prior").is_none(), || {
        format!("mailbox {}", body["mailbox"])
    })
}

async fn replayed(cx: &Ctx, sender: Who<'_>, addressee: Who<'_>) -> R {
    let (one, two) =
        (open(cx, sender, Some(600), "a2a-replay-1").await?, open(cx, sender, Some(600), "a2a-replay-2").await?);
    let mut ask = envelope(cx, sender, "ask", &format!("agent:{}", addressee.id), Some(&one), "a2a-replay");
    let (id, _) = addressed_ack(&cx.hub.submit(sender.key, &ask).await)?;
    ask["agent"]["session"] = json!(two);
    let (again, body) = addressed_ack(&cx.hub.submit(sender.key, &ask).await)?;
    ensure(again == id && body["status"] == "open", || format!("the replay answered {body}"))?;
    cx.hub.cancel(sender.key, &id).await;
    for s in [&one, &two] {
        close(cx, sender.key, s).await;
    }
    Ok(())
}

async fn streamed(cx: &Ctx, addressee: Who<'_>, sender: Who<'_>, url: &str) -> R {
    let path = url.find("/v1/").map_or(url, |i| &url[i..]);
    let sess = open(cx, addressee, Some(600), "a2a-stream").await?;
    let to = address(addressee.id, &sess);
    let (id, _) =
        addressed_ack(&cx.hub.submit(sender.key, &envelope(cx, sender, "notify", &to, None, "a2a-stream")).await)?;
    let started = Instant::now();
    let (status, ct, text) = cx.hub.get_text(&format!("{path}?session={sess}"), addressee.key).await;
    ensure(status == 200 && ct.starts_with("text/event-stream"), || format!("stream: {status} {ct}"))?;
    ensure(started.elapsed() < Duration::from_secs(65), || "the hold was not bounded".into())?;
    ensure(text.contains(&format!("id: {id}\n")), || format!("no event with id {id}: {text}"))?;
    let read = read(cx, sender.key, &id).await?;
    ensure(read["mailbox"]["state"] == "queued", || format!("after the push: {}", read["mailbox"]))?;
    ack(cx, addressee.key, Some(&sess), &[&id]).await.expect(200, None)?;
    close(cx, addressee.key, &sess).await;
    Ok(())
}

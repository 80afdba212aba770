//! §16.2 renewal and the §16.3 touchpoint table: exactly the activity that presents an own live
//! session renews its lease (a session-less drain or ack and a read do not); another principal's
//! or an unknown session is indistinguishable from nonexistent; an own self-closed or expired one
//! answers 410 and stays as it is. The lease-lapse checks wait a lease out on the Hub clock, so
//! they run only when the Hub's shortest lease is short (≤ 10 s).

use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value;

use super::Ctx;
use super::mailbox::{DIRECTIVES, directive, unknown_id};
use super::session_api::{
    Caps, Cast, Check, ENDED, LIVE, MAX_WINDOW, TOUCHES, UNKNOWN, Who, ack, address, ask, close, drain, entries,
    expect_touches, notify, open, record, resolve, session, skip, timestamp, touch_all, unknown_session,
};
use crate::client::Resp;
use crate::report::{Report, ensure};

const NOT_RENEWED: Check = ("16.2", "a session-less drain or ack and a read of the session renew no lease");
const RENEWED: Check = (
    "16.2",
    "an own live session presented on a drain, ack, resolve or submit succeeds and renews it: last_seen = now, expires_at = now + ttl",
);
const ACTOR: Check = ("8.8", "a resolve presenting a session attests the session-qualified actor `agent:<id>#<sess>`");
const FOREIGN: Check = (
    "16.3",
    "presenting another agent's, another account's or an unknown session: drain/ack/resolve 404, submit 422 `invalid_field`, identical for all, renewing nothing",
);
const SELF_CLOSED: Check = (
    "16.3",
    "presenting an own self-closed session: drain/ack/resolve 410 `gone`, submit 410 `destination_gone`; it stays closed",
);
const LEASE: Check = (
    "16.2",
    "a drain presenting the session keeps it active past its original expiry; reads do not renew, so it then lapses to `expired`",
);
const EXPIRED: Check = (
    "16.3",
    "presenting an own expired session: drain/ack/resolve 410 `gone`, submit 410 `destination_gone`, a directive to it 410; it stays expired",
);
const EXPIRY_BOUNCE: Check =
    ("14.2", "a lapsed session bounces its drained but un-acked directive: `bounced` with prior `delivered`");
pub(super) const ALL: [Check; 8] = [NOT_RENEWED, RENEWED, ACTOR, FOREIGN, SELF_CLOSED, LEASE, EXPIRED, EXPIRY_BOUNCE];

/// The renewal and touchpoint checks on the first agent's `live` session and another agent's
/// (`theirs`), then the lease lapse. `open_ask` is an open ask of the first agent: what the
/// resolve touchpoint tries to resolve.
pub(super) async fn run(
    cx: &Ctx,
    r: &mut Report,
    caps: &Caps,
    cast: Cast<'_>,
    live: &Result<String, String>,
    theirs: &Result<String, String>,
    open_ask: &str,
) {
    let Cast { bot, other, foreign } = cast;
    let res = async {
        let id = live.clone()?;
        let before = session(cx, bot.key, &id).await?;
        tokio::time::sleep(Duration::from_millis(50)).await;
        entries(&drain(cx, bot.key, None).await)?;
        ack(cx, bot.key, None, &[&unknown_id(&cx.nonce)]).await.expect(200, None).map_err(|e| format!("ack: {e}"))?;
        session(cx, &cx.cfg.operator_key, &id).await?;
        let after = session(cx, bot.key, &id).await?;
        ensure(after["expires_at"] == before["expires_at"] && after["last_seen"] == before["last_seen"], || {
            format!("the lease moved from {before} to {after}")
        })
    }
    .await;
    record(r, NOT_RENEWED, res);

    // each touchpoint in turn renews the lease
    let resolvable = cx.hub.submit(bot.key, &ask(cx, bot, "session-resolve", None, None)).await;
    let resolvable = super::ack_id(&resolvable);
    let mut resolved = false;
    let res = async {
        let (id, ask_id) = (live.clone()?, resolvable.clone()?);
        let mut last = session(cx, bot.key, &id).await?;
        let ttl = last["ttl_seconds"].as_i64().ok_or("no ttl_seconds")?;
        for (i, name) in TOUCHES.iter().enumerate() {
            tokio::time::sleep(Duration::from_millis(50)).await;
            let t0 = cx.hub_now();
            let resp = match i {
                0 => drain(cx, bot.key, Some(&id)).await,
                1 => ack(cx, bot.key, Some(&id), &[&unknown_id(&cx.nonce)]).await,
                2 => resolve(cx, bot.key, &id, &ask_id).await,
                _ => cx.hub.submit(bot.key, &notify(cx, bot, Some(&id))).await,
            };
            let t1 = cx.hub_now();
            resp.expect(LIVE[i].0, None).map_err(|e| format!("{name}: {e}"))?;
            resolved |= i == 2;
            let now = session(cx, bot.key, &id).await?;
            let at = |s: &Value, k: &str| timestamp(&s[k]).ok_or(format!("{name}: no {k}: {s}"));
            let (seen, exp, prev) = (at(&now, "last_seen")?, at(&now, "expires_at")?, at(&last, "expires_at")?);
            let slack = chrono::Duration::seconds(1);
            ensure(seen >= t0 - slack && seen <= t1 + slack, || {
                format!("{name}: last_seen {seen} not in [{t0}, {t1}]")
            })?;
            ensure(exp > prev, || format!("{name}: expires_at stayed {prev} → {exp}"))?;
            let lease = (exp - seen).num_milliseconds();
            ensure((lease - ttl * 1000).abs() <= 1000, || format!("{name}: expires_at − last_seen = {lease} ms"))?;
            last = now;
        }
        Ok(())
    }
    .await;
    record(r, RENEWED, res);

    let res = async {
        ensure(resolved, || "needs the resolve presenting the session (previous check)".into())?;
        let (id, ask_id) = (live.clone()?, resolvable.clone()?);
        let read = cx.hub.read(bot.key, &ask_id).await;
        read.expect(200, None)?;
        let actor = &read.body["response"]["response"]["actor"];
        ensure(*actor == address(bot.id, &id), || format!("the Response's actor is {actor}"))
    }
    .await;
    record(r, ACTOR, res);

    // another agent's, another account's agent's and an unknown session
    let res = async {
        let (mine, theirs) = (live.clone()?, theirs.clone()?);
        let their_before = session(cx, other.key, &theirs).await?;
        let mut cases = vec![
            ("an unknown session", bot, unknown_session(cx)),
            ("another agent's session", bot, theirs.clone()),
            ("the first agent's session, by another agent", other, mine.clone()),
        ];
        if let Some(f) = foreign {
            cases.push(("the first agent's session, by another account's agent", f, mine.clone()));
        }
        let mut first: Option<(&str, [Resp; 4])> = None;
        for (what, who, sess) in cases {
            let t = touch_all(cx, who, &sess, open_ask).await;
            expect_touches(&t, UNKNOWN).map_err(|e| format!("{what}: {e}"))?;
            if let Some((what0, t0)) = &first {
                for ((name, a), b) in TOUCHES.iter().zip(&t).zip(t0) {
                    ensure(a.body == b.body, || format!("{name}: {what} answered {}, {what0} {}", a.show(), b.show()))?;
                }
            } else {
                first = Some((what, t));
            }
        }
        let their_after = session(cx, other.key, &theirs).await?;
        ensure(their_after["expires_at"] == their_before["expires_at"], || {
            format!("another agent's presentation renewed {theirs}: {their_before} → {their_after}")
        })
    }
    .await;
    record(r, FOREIGN, res);

    let res = async {
        let id = open(cx, bot, Some(600), "self-closed").await?;
        close(cx, bot.key, &id).await.expect(200, None).map_err(|e| format!("close: {e}"))?;
        let closed = session(cx, bot.key, &id).await?;
        expect_touches(&touch_all(cx, bot, &id, open_ask).await, ENDED)?;
        let after = session(cx, bot.key, &id).await?;
        ensure(after == closed, || format!("the touches changed it: {closed} → {after}"))
    }
    .await;
    record(r, SELF_CLOSED, res);
    if let Ok(id) = &resolvable {
        cx.close(id).await;
    }
    lease(cx, r, caps, bot, open_ask).await;
}

// ---- lease lapse ----------------------------------------------------------------------------

async fn sleep_to(cx: &Ctx, at: DateTime<Utc>) {
    let ms = (at - cx.hub_now()).num_milliseconds();
    if ms > 0 {
        tokio::time::sleep(Duration::from_millis(ms as u64)).await;
    }
}

/// §16.2/§16.3 on the Hub clock: a drain halfway renews; reads do not; the lease then lapses.
async fn lease(cx: &Ctx, r: &mut Report, caps: &Caps, bot: Who<'_>, open_ask: &str) {
    let want = caps.min.max(3);
    if want > MAX_WINDOW || want > caps.max {
        let why = format!("the shortest lease is {} s; the runner waits out at most {MAX_WINDOW} s", caps.min);
        for c in [LEASE, EXPIRED, EXPIRY_BOUNCE] {
            skip(r, c, &why);
        }
        return;
    }
    let op = cx.cfg.operator_key.as_str();
    let mut directive_id = Err("needs the session".to_owned());
    let res = async {
        let id = open(cx, bot, Some(want), "lease").await?;
        let s0 = session(cx, bot.key, &id).await?;
        let ttl = s0["ttl_seconds"].as_i64().ok_or("no ttl_seconds")?;
        let e0 = timestamp(&s0["expires_at"]).ok_or("no expires_at")?;
        // a directive to the session, claimed by the renewing drain and never acked
        let sent = cx.hub.post(DIRECTIVES, op, &directive(cx, &address(bot.id, &id), "lease")).await;
        directive_id = sent.body["id"].as_str().map(str::to_owned).ok_or(format!("directive: {}", sent.show()));
        sleep_to(cx, e0 - chrono::Duration::milliseconds(ttl * 500)).await;
        entries(&drain(cx, bot.key, Some(&id)).await).map_err(|e| format!("halfway: {e}"))?;
        let e1 = timestamp(&session(cx, bot.key, &id).await?["expires_at"]).ok_or("no expires_at")?;
        ensure(e1 > e0 + chrono::Duration::milliseconds(1000), || format!("the drain moved expires_at {e0} → {e1}"))?;
        sleep_to(cx, e0 + chrono::Duration::milliseconds(500)).await;
        let s2 = session(cx, bot.key, &id).await?;
        ensure(s2["state"] == "active", || format!("past its original expiry {e0} it reads {s2}"))?;
        ensure(timestamp(&s2["expires_at"]) == Some(e1), || {
            format!("a read moved expires_at to {}", s2["expires_at"])
        })?;
        sleep_to(cx, e1 + chrono::Duration::milliseconds(700)).await;
        let s3 = session(cx, bot.key, &id).await?;
        ensure(s3["state"] == "expired" && timestamp(&s3["expires_at"]) == Some(e1), || {
            format!("past {e1} without activity it reads {s3}")
        })?;
        Ok((id, s3))
    }
    .await;
    record(r, LEASE, res.clone().map(drop));

    let res = async {
        let (id, s3) = res?;
        expect_touches(&touch_all(cx, bot, &id, open_ask).await, ENDED)?;
        let to = cx.hub.post(DIRECTIVES, op, &directive(cx, &address(bot.id, &id), "expired")).await;
        to.expect(410, Some("destination_gone")).map_err(|e| format!("directive: {e}"))?;
        let after = session(cx, bot.key, &id).await?;
        ensure(after["state"] == "expired" && after["expires_at"] == s3["expires_at"], || {
            format!("the touches changed it: {s3} → {after}")
        })
    }
    .await;
    record(r, EXPIRED, res);

    let res = async { super::session_mail::bounced(cx, &directive_id?, "delivered").await.map(drop) }.await;
    record(r, EXPIRY_BOUNCE, res);
}

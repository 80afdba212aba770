//! The operator's kill-switch (§16.4) and, on a Hub advertising `sessions.operator_hard_stop`,
//! the six points of the §16.4.1 durable stop: a stop record keyed on the principal (read back by
//! the operator), surviving the purge of the killed session, gating registration with 403
//! `session_closed_by_operator`, holding against registrations racing it, liftable by the account's
//! human only, and leaving what a directive sender sees unchanged (a bounce indistinguishable from
//! a self-close).
//!
//! These checks stop an agent, so they act only as a dedicated one (`--stop-agent-key`) and always
//! lift its stop and end its sessions afterwards, whatever failed. The purge point waits out
//! `sessions.terminal_retention_seconds`, so it runs only when that is short (≤ 10 s).

use std::time::Duration;

use ma2h_protocol::schema::{self, SchemaKind};
use serde_json::Value;

use super::Ctx;
use super::session_api::{
    self as s, Caps, Check, ENDED, KILLED, MAX_WINDOW, OPERATOR, Who, address, close, drain, expect_touches, list,
    open, read, record, register, session, skip, timestamp, touch_all, unknown_session,
};
use super::session_mail::{bounced, created, send, track};
use crate::client::Resp;
use crate::report::{Report, ensure};

const KILL_SWITCH: Check = (
    "16.4",
    "the operator's DELETE closes an agent's session with closed_by_operator: true; repeats by either party and reads keep it",
);
const KILLED_TOUCH: Check = (
    "16.3",
    "presenting an operator-closed session: drain/ack/resolve and submit 410 `session_closed_by_operator` (a self-closed one: `gone`/`destination_gone`)",
);
const UNATTRIBUTED: Check = (
    "16.4",
    "a directive sender cannot tell an operator kill from a self-close: the same bounced track and the same 410 `destination_gone`",
);
const STOP_RECORD: Check = (
    "16.4.1",
    "an operator close records a durable stop of the principal, read by the operator: stopped, stopped_by, stopped_at, session_id",
);
const GATE: Check = ("16.4.1", "a stopped agent's registration is 403 `session_closed_by_operator` and mints nothing");
const NO_AGENT_RESUME: Check = (
    "16.4.1",
    "no agent credential (the stopped agent's, another's, another account's) may read, set or lift a stop: 403 on GET/POST/DELETE, and it holds",
);
const NOT_RETROACTIVE: Check = (
    "16.3",
    "the operator marker rides only a winning close: an operator DELETE of an already self-closed session leaves it unmarked and `gone`",
);
const OUTLIVES_PURGE: Check = (
    "16.4.1",
    "the stop outlives the purge of the killed session: that session then presents as unknown (404, as an unknown id) and registration is still refused",
);
const LIFTED: Check =
    ("16.4.1", "the operator lifts the stop (DELETE → stopped: false, idempotent) and the agent registers again");
const STOPPED: Check = (
    "16.4.1",
    "the operator's POST /v1/agents/{id}/stop stops the agent and closes each of its live sessions by operator",
);
const RACE: Check =
    ("16.4.1", "registrations racing a stop each end refused or operator-closed: no live session after the stop");
pub(super) const ALL: [Check; 11] = [
    KILL_SWITCH,
    KILLED_TOUCH,
    UNATTRIBUTED,
    STOP_RECORD,
    GATE,
    NO_AGENT_RESUME,
    NOT_RETROACTIVE,
    OUTLIVES_PURGE,
    LIFTED,
    STOPPED,
    RACE,
];

fn stop_path(agent: &str) -> String {
    format!("/v1/agents/{agent}/stop")
}

async fn stop_status(cx: &Ctx, agent: &str) -> Result<Value, String> {
    let resp = cx.hub.get(&stop_path(agent), &cx.cfg.operator_key).await;
    resp.expect(200, None).map_err(|e| format!("GET stop: {e}"))?;
    ensure(resp.body["agent_id"] == agent, || format!("GET stop answered {}", resp.show()))?;
    Ok(resp.body)
}

async fn lift(cx: &Ctx, agent: &str) -> Resp {
    cx.hub.call("DELETE", &stop_path(agent), Some(&cx.cfg.operator_key), None).await
}

async fn refused(cx: &Ctx, st: Who<'_>) -> Result<(), String> {
    let resp = register(cx, st.key, &serde_json::json!({ "label": "conformance: while stopped" })).await;
    if let Some(id) = resp.body["session"]["id"].as_str() {
        close(cx, st.key, id).await;
    }
    resp.expect(403, Some(OPERATOR)).map_err(|e| format!("registration: {e}"))
}

fn live_count(l: &Value) -> usize {
    l["sessions"].as_array().map_or(0, |v| v.iter().filter(|s| s["state"] == "active").count())
}

/// Every kill-switch and hard-stop check, then the cleanup.
pub(super) async fn run(cx: &Ctx, r: &mut Report, caps: &Caps) {
    let Some(key) = cx.cfg.stop_agent_key.as_deref() else {
        let why = "needs --stop-agent-key: an agent of the account that these checks stop and resume";
        for c in ALL {
            skip(r, c, why);
        }
        return;
    };
    let st = Who { key, id: &cx.cfg.stop_agent_id };
    // a previous run against this Hub may have left it stopped
    lift(cx, st.id).await;
    let ask = super::ack_id(&cx.hub.submit(st.key, &s::ask(cx, st, "stop-touch", None, None)).await);
    let placeholder = format!("msg_{}", &unknown_session(cx)[5..]);
    checks(cx, r, caps, st, ask.as_deref().unwrap_or(&placeholder)).await;
    // whatever happened above: no stop, no live session, no open ask left behind
    lift(cx, st.id).await;
    if let Ok(l) = list(cx, st.key).await {
        for sess in l["sessions"].as_array().into_iter().flatten().filter(|s| s["state"] == "active") {
            close(cx, st.key, sess["id"].as_str().unwrap_or_default()).await;
        }
    }
    if let Ok(id) = &ask {
        cx.hub.cancel(st.key, id).await;
    }
}

async fn checks(cx: &Ctx, r: &mut Report, caps: &Caps, st: Who<'_>, ask: &str) {
    let op = cx.cfg.operator_key.as_str();
    let k0 = open(cx, st, Some(600), "self-closed").await;
    let k1 = open(cx, st, Some(600), "killed").await;
    // registered before the stop, closed by its owner in the not-retroactive check
    let m = open(cx, st, Some(600), "closed before the operator's").await;
    let to = |k: &Result<String, String>| k.clone().map(|k| address(st.id, &k));
    let d_self = match to(&k0) {
        Ok(a) => created(&send(cx, &a, "to a self-closed session").await),
        Err(e) => Err(e),
    };
    let d_op = match to(&k1) {
        Ok(a) => created(&send(cx, &a, "to a killed session").await),
        Err(e) => Err(e),
    };
    let mut self_closed = k0.clone().map(drop);
    if let Ok(k) = &k0 {
        self_closed = close(cx, st.key, k).await.expect(200, None).map_err(|e| format!("owner's close: {e}"));
    }
    let kill_at = cx.hub_now();
    let kill = match &k1 {
        Ok(k) => Ok(close(cx, op, k).await),
        Err(e) => Err(e.clone()),
    };

    let res = async {
        let (k, kill) = (k1.clone()?, kill.clone()?);
        kill.expect(200, None).map_err(|e| format!("operator's DELETE: {e}"))?;
        schema::validate(SchemaKind::SessionEnvelope, &kill.body).map_err(|e| format!("session schema: {e}"))?;
        let sess = &kill.body["session"];
        ensure(
            sess["state"] == "closed" && sess["closed_by_operator"] == true && sess["closed_at"].is_string(),
            || format!("the operator's close answered {sess}"),
        )?;
        ensure(sess["agent_id"] == st.id, || format!("agent_id {}", sess["agent_id"]))?;
        for (who, key) in [("the operator", op), ("the agent", st.key)] {
            let again = close(cx, key, &k).await;
            again.expect(200, None).map_err(|e| format!("{who}'s repeat: {e}"))?;
            ensure(again.body["session"] == *sess, || format!("{who}'s repeat answered {}", again.show()))?;
        }
        let owner = session(cx, st.key, &k).await?;
        ensure(owner == *sess, || format!("the owner reads {owner}"))
    }
    .await;
    record(r, KILL_SWITCH, res);

    let res = async {
        let (k0, k1) = (k0.clone()?, k1.clone()?);
        self_closed.clone()?;
        kill.clone()?.expect(200, None).map_err(|e| format!("operator's DELETE: {e}"))?;
        expect_touches(&touch_all(cx, st, &k1, ask).await, KILLED).map_err(|e| format!("operator-closed: {e}"))?;
        expect_touches(&touch_all(cx, st, &k0, ask).await, ENDED).map_err(|e| format!("self-closed: {e}"))
    }
    .await;
    record(r, KILLED_TOUCH, res);

    let res = async {
        let (a0, a1, d_self, d_op) = (to(&k0)?, to(&k1)?, d_self.clone()?, d_op.clone()?);
        // while both sessions are still readable (inside the terminal retention)
        let (r_self, r_op) = (send(cx, &a0, "after a self-close").await, send(cx, &a1, "after a kill").await);
        r_self.expect(410, Some("destination_gone")).map_err(|e| format!("to the self-closed session: {e}"))?;
        r_op.expect(410, Some("destination_gone")).map_err(|e| format!("to the killed session: {e}"))?;
        ensure(r_self.body == r_op.body, || format!("{} vs {}", r_self.show(), r_op.show()))?;
        let (b_self, b_op) = (bounced(cx, &d_self, "queued").await?, bounced(cx, &d_op, "queued").await?);
        let keys = |v: &Value| v.as_object().map(|o| o.keys().cloned().collect::<Vec<_>>()).unwrap_or_default();
        ensure(keys(&b_self) == keys(&b_op) && b_self["deliveries"] == b_op["deliveries"], || {
            format!("a self-close bounced as {b_self}, the operator's kill as {b_op}")
        })?;
        let (t_self, t_op) = (track(cx, &d_self).await?, track(cx, &d_op).await?);
        ensure(keys(&t_self) == keys(&t_op), || format!("the tracks differ in shape: {t_self} vs {t_op}"))
    }
    .await;
    record(r, UNATTRIBUTED, res);

    if !caps.hard_stop {
        let why = "the Hub does not advertise sessions.operator_hard_stop (a cooperative kill-switch only)";
        for c in [STOP_RECORD, GATE, NO_AGENT_RESUME, OUTLIVES_PURGE, LIFTED, STOPPED, RACE] {
            skip(r, c, why);
        }
        not_retroactive(cx, r, st, &m, ask).await;
        return;
    }

    let res = async {
        let k = k1.clone()?;
        kill.clone()?.expect(200, None).map_err(|e| format!("operator's DELETE: {e}"))?;
        let stop = stop_status(cx, st.id).await?;
        ensure(stop["stopped"] == true && stop["stopped_by"] == cx.cfg.operator_actor.as_str(), || {
            format!("the stop reads {stop} (operator {})", cx.cfg.operator_actor)
        })?;
        ensure(stop["session_id"] == k.as_str(), || format!("session_id {} (killed {k})", stop["session_id"]))?;
        let at = timestamp(&stop["stopped_at"]).ok_or(format!("no stopped_at: {stop}"))?;
        let slack = chrono::Duration::seconds(2);
        ensure(at >= kill_at - slack && at <= cx.hub_now() + slack, || format!("stopped_at {at}, killed at {kill_at}"))
    }
    .await;
    record(r, STOP_RECORD, res);

    let res = async {
        let before = list(cx, st.key).await?;
        refused(cx, st).await?;
        let after = list(cx, st.key).await?;
        // "mints nothing": no id that was not there before. (Not a count: a terminal session may
        // be purged between the two lists at a short retention.)
        let ids = |l: &Value| -> std::collections::BTreeSet<String> {
            l["sessions"].as_array().into_iter().flatten().filter_map(|s| s["id"].as_str().map(str::to_owned)).collect()
        };
        let minted: Vec<String> = ids(&after).difference(&ids(&before)).cloned().collect();
        ensure(minted.is_empty(), || format!("new sessions listed after the refused registration: {minted:?}"))
    }
    .await;
    record(r, GATE, res);

    let res = async {
        let mut agents = vec![
            ("the stopped agent", st.key),
            ("another agent of the account", cx.cfg.agent_key.as_str()),
            ("another agent of the account", cx.cfg.other_agent_key.as_str()),
        ];
        if let Some(f) = cx.cfg.foreign_agent_key.as_deref() {
            agents.push(("another account's agent", f));
        }
        for (who, key) in agents {
            for method in ["GET", "POST", "DELETE"] {
                let body = (method == "POST").then(|| serde_json::json!({}));
                let resp = cx.hub.call(method, &stop_path(st.id), Some(key), body.as_ref()).await;
                resp.expect(403, None).map_err(|e| format!("{who}: {method}: {e}"))?;
            }
        }
        let stop = stop_status(cx, st.id).await?;
        ensure(stop["stopped"] == true, || format!("after the agents' attempts the stop reads {stop}"))?;
        refused(cx, st).await
    }
    .await;
    record(r, NO_AGENT_RESUME, res);

    not_retroactive(cx, r, st, &m, ask).await;
    outlives_purge(cx, r, caps, st, &k1, kill_at).await;

    let res = async {
        let lifted = lift(cx, st.id).await;
        lifted.expect(200, None).map_err(|e| format!("lift: {e}"))?;
        ensure(lifted.body["stopped"] == false && lifted.body["agent_id"] == st.id, || lifted.show())?;
        let stop = stop_status(cx, st.id).await?;
        ensure(stop["stopped"] == false && stop.get("stopped_by").is_none(), || format!("after the lift: {stop}"))?;
        let id = open(cx, st, Some(600), "after the lift").await.map_err(|e| format!("after the lift: {e}"))?;
        close(cx, st.key, &id).await;
        let again = lift(cx, st.id).await;
        again.expect(200, None).map_err(|e| format!("a repeat lift: {e}"))?;
        ensure(again.body["stopped"] == false, || format!("a repeat lift answered {}", again.show()))
    }
    .await;
    let lifted = res.is_ok();
    record(r, LIFTED, res);
    if !lifted {
        for c in [STOPPED, RACE] {
            skip(r, c, "needs the stop lifted (previous check)");
        }
        return;
    }
    stop_agent(cx, r, st, ask).await;
}

async fn not_retroactive(cx: &Ctx, r: &mut Report, st: Who<'_>, m: &Result<String, String>, ask: &str) {
    let res = async {
        let m = m.clone()?;
        // the owner's close first (closing is never gated by a stop), then the operator's
        close(cx, st.key, &m).await.expect(200, None).map_err(|e| format!("owner's close: {e}"))?;
        let before = session(cx, st.key, &m).await?;
        ensure(before["state"] == "closed", || format!("the owner's close left {before}"))?;
        let resp = close(cx, &cx.cfg.operator_key, &m).await;
        resp.expect(200, None).map_err(|e| format!("operator's DELETE: {e}"))?;
        ensure(resp.body["session"] == before, || format!("the operator's DELETE answered {}", resp.show()))?;
        let after = session(cx, st.key, &m).await?;
        ensure(after == before, || format!("it now reads {after}"))?;
        expect_touches(&touch_all(cx, st, &m, ask).await, ENDED)
    }
    .await;
    record(r, NOT_RETROACTIVE, res);
}

/// §16.4.1 point 2: wait for the killed session's purge, then the kill must still hold.
async fn outlives_purge(
    cx: &Ctx,
    r: &mut Report,
    caps: &Caps,
    st: Who<'_>,
    k1: &Result<String, String>,
    kill_at: chrono::DateTime<chrono::Utc>,
) {
    if caps.retention > MAX_WINDOW {
        let why = format!(
            "sessions.terminal_retention_seconds is {}; the runner waits out at most {MAX_WINDOW} s",
            caps.retention
        );
        return skip(r, OUTLIVES_PURGE, &why);
    }
    let k = match k1 {
        Ok(k) => k.clone(),
        Err(e) => return record(r, OUTLIVES_PURGE, Err(e.clone())),
    };
    let deadline = kill_at + chrono::Duration::seconds(caps.retention as i64 + 10);
    let purged = loop {
        let resp = read(cx, &cx.cfg.operator_key, &k).await;
        if resp.status == 404 {
            break true;
        }
        if cx.hub_now() > deadline {
            break false;
        }
        tokio::time::sleep(Duration::from_millis(250)).await;
    };
    if !purged {
        let why = format!("{k} was still readable {} s after its close (no purge observed)", caps.retention + 10);
        return skip(r, OUTLIVES_PURGE, &why);
    }
    let res = async {
        let unknown = drain(cx, st.key, Some(&unknown_session(cx))).await;
        unknown.expect(404, None).map_err(|e| format!("an unknown session: {e}"))?;
        let gone = drain(cx, st.key, Some(&k)).await;
        gone.expect(404, None).map_err(|e| format!("the purged session: {e}"))?;
        ensure(gone.body == unknown.body, || format!("{} vs an unknown id's {}", gone.show(), unknown.show()))?;
        refused(cx, st).await?;
        let stop = stop_status(cx, st.id).await?;
        ensure(stop["stopped"] == true, || format!("after the purge the stop reads {stop}"))
    }
    .await;
    record(r, OUTLIVES_PURGE, res);
}

/// §16.4.1 via `POST /v1/agents/{id}/stop`, with registrations racing it.
async fn stop_agent(cx: &Ctx, r: &mut Report, st: Who<'_>, ask: &str) {
    let op = cx.cfg.operator_key.as_str();
    let l1 = open(cx, st, Some(600), "stopped by the agent stop").await;
    let l2 = open(cx, st, Some(600), "stopped by the agent stop").await;
    let body = serde_json::json!({ "label": "conformance: racing a stop" });
    let (path, empty) = (stop_path(st.id), serde_json::json!({}));
    let (stop, a, b, c, d, e, f) = tokio::join!(
        cx.hub.post(&path, op, &empty),
        register(cx, st.key, &body),
        register(cx, st.key, &body),
        register(cx, st.key, &body),
        register(cx, st.key, &body),
        register(cx, st.key, &body),
        register(cx, st.key, &body),
    );
    let res = async {
        let (l1, l2) = (l1.clone()?, l2.clone()?);
        stop.expect(200, None).map_err(|e| format!("POST stop: {e}"))?;
        let sb = &stop.body;
        ensure(sb["stopped"] == true && sb["stopped_by"] == cx.cfg.operator_actor.as_str(), || format!("{sb}"))?;
        ensure(sb.get("session_id").is_none() && timestamp(&sb["stopped_at"]).is_some(), || format!("{sb}"))?;
        for id in [&l1, &l2] {
            let sess = session(cx, op, id).await?;
            ensure(sess["state"] == "closed" && sess["closed_by_operator"] == true, || {
                format!("after the stop {sess}")
            })?;
        }
        expect_touches(&touch_all(cx, st, &l1, ask).await, KILLED)?;
        refused(cx, st).await
    }
    .await;
    record(r, STOPPED, res);

    let res = async {
        stop.expect(200, None).map_err(|e| format!("POST stop: {e}"))?;
        for (i, reg) in [a, b, c, d, e, f].iter().enumerate() {
            if reg.status == 201 {
                let id = reg.body["session"]["id"].as_str().ok_or(format!("registration {i}: {}", reg.show()))?;
                let sess = session(cx, op, id).await?;
                ensure(sess["closed_by_operator"] == true, || format!("{id}, minted racing the stop, reads {sess}"))?;
            } else {
                reg.expect(403, Some(OPERATOR)).map_err(|e| format!("registration {i}: {e}"))?;
            }
        }
        let l = list(cx, st.key).await?;
        ensure(live_count(&l) == 0, || format!("{} live sessions after the stop", live_count(&l)))
    }
    .await;
    record(r, RACE, res);
}

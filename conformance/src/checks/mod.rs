//! The checks, one module per spec area. Each module records its obligations into the
//! [`Report`]; [`run`] orders them so the §7 timing checks overlap the rest of the run.

mod authz;
mod cancel;
mod channels;
mod decisions;
mod hard_stop;
mod inter_agent;
mod lifecycle;
mod limits;
mod mailbox;
mod push;
mod push_tokens;
mod read;
mod resolve;
mod session_api;
mod session_mail;
mod session_touch;
mod sessions;
mod submit;
mod vectors;
mod versions;

use std::sync::atomic::{AtomicUsize, Ordering};

use anyhow::bail;
use chrono::{DateTime, SecondsFormat, Utc};
use serde_json::{Value, json};

use crate::client::{Hub, Resp};
use crate::config::Config;
use crate::report::Report;

/// What every check needs: the Hub client, the configuration and per-run uniqueness.
pub struct Ctx {
    pub hub: Hub,
    pub cfg: Config,
    /// Unique per run; goes into idempotency keys so reruns never replay (§8.1).
    pub nonce: String,
    seq: AtomicUsize,
    /// Hub clock minus local clock, when the `Date` header shows a clear skew (§9.5).
    pub skew: chrono::Duration,
}

impl Ctx {
    /// A fresh idempotency key.
    pub fn key(&self, label: &str) -> String {
        format!("conf-{}-{label}-{}", self.nonce, self.seq.fetch_add(1, Ordering::Relaxed))
    }

    /// Our best estimate of the Hub clock (authoritative for expiry, §9.5).
    pub fn hub_now(&self) -> DateTime<Utc> {
        Utc::now() + self.skew
    }

    fn agent(&self, id: &str) -> Value {
        json!({ "id": id, "run_id": format!("conformance-{}", self.nonce), "runtime": "cli" })
    }

    /// A human-inbox notify from the first agent.
    pub fn notify(&self) -> Value {
        json!({ "ma2h_version": "0.5", "type": "notify", "created_at": ts(Utc::now()),
            "agent": self.agent(&self.cfg.agent_id), "title": "conformance: notify" })
    }

    /// A select ask from the first agent that the configured operator may resolve.
    pub fn ask(&self, label: &str) -> Value {
        json!({ "ma2h_version": "0.5", "type": "ask", "created_at": ts(Utc::now()),
            "agent": self.agent(&self.cfg.agent_id), "title": format!("conformance: {label}"),
            "idempotency_key": self.key(label),
            "state": { "conformance": self.nonce, "n": 0.1 },
            "request": { "mode": "select",
                "options": [{ "value": "ship", "label": "Ship" }, { "value": "hold", "label": "Hold" }],
                "allowed_resolvers": [self.cfg.operator_actor] } })
    }

    /// A task from the first agent that the configured operator may resolve.
    pub fn task(&self, label: &str) -> Value {
        json!({ "ma2h_version": "0.5", "type": "task", "created_at": ts(Utc::now()),
            "agent": self.agent(&self.cfg.agent_id), "title": format!("conformance: {label}"),
            "idempotency_key": self.key(label),
            "action": { "instructions": "Nothing to do: a conformance check.",
                "checklist": [{ "text": "Look", "done": false }],
                "allowed_resolvers": [self.cfg.operator_actor] } })
    }

    /// Submit as the first agent; `Ok(id)` on a 202 with an id.
    pub async fn submit_ok(&self, envelope: &Value) -> Result<String, String> {
        let r = self.hub.submit(&self.cfg.agent_key, envelope).await;
        ack_id(&r)
    }

    /// Answer `id` with `value` as the operator.
    pub async fn answer(&self, id: &str, value: &str) -> Resp {
        self.hub.resolve(&self.cfg.operator_key, id, &json!({ "resolution": "answered", "value": value })).await
    }

    /// Best-effort cleanup of a message a check left open (cancel an ask, dismiss a task).
    pub async fn close(&self, id: &str) {
        let r = self.hub.cancel(&self.cfg.agent_key, id).await;
        if r.status >= 400 {
            let body = json!({ "resolution": "dismissed" });
            self.hub.resolve(&self.cfg.operator_key, id, &body).await;
            self.hub.resolve(&self.cfg.agent_key, id, &body).await;
        }
    }
}

/// `Ok(id)` from a 202 submit ack.
pub fn ack_id(r: &Resp) -> Result<String, String> {
    match (r.status, r.body["id"].as_str()) {
        (202, Some(id)) => Ok(id.to_owned()),
        _ => Err(format!("submit: expected 202 with an id, got {}", r.show())),
    }
}

/// RFC 3339 with milliseconds and `Z`.
pub fn ts(t: DateTime<Utc>) -> String {
    t.to_rfc3339_opts(SecondsFormat::Millis, true)
}

/// A unique-enough run nonce without a randomness dependency: time and process id.
fn nonce() -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_nanos();
    format!("{:x}{:x}", nanos & 0xffff_ffff_ffff, std::process::id())
}

/// Run every check against the configured Hub.
pub async fn run(cfg: Config) -> anyhow::Result<Report> {
    let hub = Hub::new(&cfg.base_url)?;
    let probe = hub.call("GET", "/.well-known/ma2h", None, None).await;
    if probe.status == 0 {
        bail!("cannot reach {}: {}", hub.base(), probe.body);
    }
    let mut skew = chrono::Duration::zero();
    if let Some(date) = probe.date.as_deref().and_then(|d| DateTime::parse_from_rfc2822(d).ok()) {
        let est = date.with_timezone(&Utc) - Utc::now();
        // the header has 1 s resolution: only correct a clear skew
        if est.num_milliseconds().abs() > 2000 {
            skew = est;
        }
    }
    let cx = Ctx { hub, cfg, nonce: nonce(), seq: AtomicUsize::new(0), skew };
    let mut r = Report::new(cx.cfg.json);

    // §15.2: the first agent's presence before anything makes it poll.
    let before = mailbox::start(&cx, &probe.body).await;
    // §7 expiry checks: submit short-lived asks now, let them expire while the rest runs.
    let pending = lifecycle::start(&cx, &mut r).await;
    versions::run(&cx, &mut r, &probe).await;
    submit::run(&cx, &mut r).await;
    vectors::run(&cx, &mut r).await;
    read::run(&cx, &mut r).await;
    cancel::run(&cx, &mut r).await;
    resolve::run(&cx, &mut r).await;
    authz::run(&cx, &mut r).await;
    push::run(&cx, &mut r, &probe.body).await;
    limits::run(&cx, &mut r, &probe.body).await;
    mailbox::run(&cx, &mut r, &probe.body, before).await;
    // §16 after the mailbox checks: a session-presenting drain also claims principal-addressed
    // directives, and the first agent's presence must be left to those checks until then.
    sessions::run(&cx, &mut r, &probe.body).await;
    channels::run(&cx, &mut r).await;
    decisions::run(&cx, &mut r, &probe.body).await;
    lifecycle::finish(&cx, &mut r, pending).await;

    // §8.5: every error response of the whole run used the canonical envelope.
    let seen = *cx.hub.errors_seen.lock().unwrap();
    let bad = cx.hub.violations.lock().unwrap().clone();
    let name = format!("every error response uses the {{\"error\": {{code, message}}}} envelope ({seen} seen)");
    let outcome = if seen == 0 {
        Err("no error responses were observed".to_owned())
    } else if let Some(v) = bad.first() {
        Err(format!("{} of {seen} violate it, e.g. {}", bad.len(), v.what))
    } else {
        Ok(())
    };
    r.result("8.5", &name, outcome);
    Ok(r)
}

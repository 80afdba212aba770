//! The two resolve-to-agent latency scenarios, one sample at a time (no other load):
//!
//! - `push-latency`: an ask with a push callback to our own receiver; the operator resolves it;
//!   latency = resolve request sent → the Hub's signed POST fully received by the receiver.
//! - `longpoll-wake`: the agent parks `GET /v1/messages/{id}?wait=<s>`; the operator resolves;
//!   latency = resolve request sent → the long-poll response fully read by the waiter.
//!
//! Both also report the same arrival relative to the resolve ack (the operator's `200` read),
//! which may be negative: the Hub may wake the waiter or send the push before the ack is back.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context as _, Result, bail};
use axum::body::Bytes as AxumBytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use bytes::Bytes;
use hyper::header::HeaderValue;
use serde_json::{Value, json};
use tokio::sync::oneshot;

use crate::envelope;
use crate::http::{Conn, Target};
use crate::stats::{self, Summary};

/// What both scenarios need to submit and resolve.
pub struct Common {
    pub target: Target,
    pub agent_key: HeaderValue,
    pub agent_id: String,
    pub operator_key: HeaderValue,
    /// `human:<id>` of the operator key, listed in `allowed_resolvers` (§9.1).
    pub operator_actor: String,
    pub samples: usize,
    /// Untimed rounds before the recorded samples (connection setup, caches).
    pub warmup: usize,
    pub timeout: Duration,
}

/// Per-sample times, microseconds.
#[derive(Default)]
pub struct Samples {
    /// resolve request sent → arrival (push received / long-poll returned).
    pub from_sent: Vec<i64>,
    /// resolve ack read → arrival (negative: arrival came first).
    pub from_ack: Vec<i64>,
    /// resolve request sent → resolve ack read.
    pub resolve_rtt: Vec<i64>,
    pub failures: Vec<String>,
}

impl Samples {
    pub fn print(&self, what: &str) {
        println!("  {what}, from resolve request SENT: {}", Summary::of_samples(&self.from_sent).line());
        println!("  {what}, from resolve ack READ:     {}", Summary::of_samples(&self.from_ack).line());
        println!("  resolve round trip (sent → ack):  {}", Summary::of_samples(&self.resolve_rtt).line());
        let early = self.from_ack.iter().filter(|&&v| v < 0).count();
        println!("  arrivals before the resolve ack: {early} of {}", self.from_ack.len());
        if !self.failures.is_empty() {
            println!("  FAILED samples: {} (first: {})", self.failures.len(), self.failures[0]);
        }
    }

    pub fn to_json(&self) -> Value {
        json!({
            "from_resolve_sent": Summary::of_samples(&self.from_sent).to_json(),
            "from_resolve_acked": Summary::of_samples(&self.from_ack).to_json(),
            "resolve_round_trip": Summary::of_samples(&self.resolve_rtt).to_json(),
            "failures": self.failures.len(),
            "first_failure": self.failures.first(),
        })
    }
}

async fn submit_ask(c: &Common, conn: &mut Conn, key: &str, callback: Option<Value>) -> Result<String> {
    let created_at = envelope::now_rfc3339();
    let env = envelope::ask(&c.agent_id, &created_at, key, Some(&c.operator_actor), callback);
    let resp = conn.post("/v1/messages", &c.agent_key, Bytes::from(serde_json::to_vec(&env)?)).await?;
    if resp.status != 202 && resp.status != 200 {
        bail!("submit: {}", resp.show());
    }
    resp.json()["id"].as_str().map(str::to_owned).context("submit ack without id")
}

static RESOLVE_BODY: &[u8] = br#"{"resolution":"answered","value":"ship","comment":"ma2h-bench"}"#;

/// Resolve as the operator; returns (sent, acked).
async fn resolve(c: &Common, conn: &mut Conn, id: &str) -> Result<(Instant, Instant)> {
    let path = format!("/v1/messages/{id}/resolve");
    let sent = Instant::now();
    let resp = conn.post(&path, &c.operator_key, Bytes::from_static(RESOLVE_BODY)).await?;
    let acked = Instant::now();
    if resp.status != 200 {
        bail!("resolve: {}", resp.show());
    }
    Ok((sent, acked))
}

// ---------------------------------------------------------------- push-latency

pub struct PushOptions {
    pub common: Common,
    /// Host the callback URL names (must be bound to the agent with `admin bind-callback`).
    pub callback_host: String,
    /// Where the receiver listens.
    pub listen: String,
    /// `auth.secret_ref` for an `hmac` callback; without it, no `auth` (the Hub signs with the
    /// agent's own signing secret).
    pub secret_ref: Option<String>,
    /// Verify every push's §9.2 signature with this HMAC secret (checked after the timestamp).
    pub verify_secret: Option<String>,
}

struct Arrival {
    at: Instant,
    signature: Option<String>,
    body: AxumBytes,
}

type Waiters = Arc<Mutex<HashMap<String, oneshot::Sender<Arrival>>>>;

async fn receive(
    State(w): State<Waiters>,
    Path(slot): Path<String>,
    headers: HeaderMap,
    body: AxumBytes,
) -> StatusCode {
    let at = Instant::now();
    let signature =
        headers.get(ma2h_protocol::signature::SIGNATURE_HEADER).and_then(|v| v.to_str().ok()).map(str::to_owned);
    if let Some(tx) = w.lock().expect("waiters lock").remove(&slot) {
        let _ = tx.send(Arrival { at, signature, body });
    }
    StatusCode::OK
}

pub async fn push_latency(o: &PushOptions) -> Result<Samples> {
    let c = &o.common;
    let listener = tokio::net::TcpListener::bind(&o.listen).await.with_context(|| format!("binding {}", o.listen))?;
    let port = listener.local_addr()?.port();
    let waiters: Waiters = Arc::default();
    let app = axum::Router::new().route("/cb/{slot}", axum::routing::post(receive)).with_state(waiters.clone());
    tokio::spawn(async move {
        let _ = axum::serve(listener, app).await;
    });
    println!(
        "push-latency: receiver on http://{}:{port}/cb/…; {} samples after {} warmup rounds, one at a time",
        o.callback_host, c.samples, c.warmup
    );

    let run = envelope::run_id();
    let mut agent = Conn::connect(&c.target).await?;
    let mut operator = Conn::connect(&c.target).await?;
    let mut out = Samples::default();
    for i in 0..c.warmup + c.samples {
        let slot = format!("{run}-{i}");
        let mut callback = json!({"mode": "push", "url": format!("http://{}:{port}/cb/{slot}", o.callback_host)});
        if let Some(r) = &o.secret_ref {
            callback["auth"] = json!({"scheme": "hmac", "secret_ref": r});
        }
        let id = submit_ask(c, &mut agent, &format!("bench-push-{slot}"), Some(callback)).await?;
        let (tx, rx) = oneshot::channel();
        waiters.lock().expect("waiters lock").insert(slot.clone(), tx);
        let (sent, acked) = resolve(c, &mut operator, &id).await?;
        let arrival = match tokio::time::timeout(c.timeout, rx).await {
            Ok(Ok(a)) => a,
            _ => {
                waiters.lock().expect("waiters lock").remove(&slot);
                out.failures.push(format!("{id}: no push within {:?}", c.timeout));
                continue;
            }
        };
        if let Some(secret) = &o.verify_secret
            && let Err(e) = verify_push(&arrival, secret, &format!("http://{}:{port}/cb/{slot}", o.callback_host))
        {
            out.failures.push(format!("{id}: {e}"));
            continue;
        }
        if i >= c.warmup {
            out.from_sent.push(stats::signed_us(sent, arrival.at));
            out.from_ack.push(stats::signed_us(acked, arrival.at));
            out.resolve_rtt.push(stats::signed_us(sent, acked));
        }
    }
    out.print("push received");
    Ok(out)
}

/// §9.2: the header parses, `t` is within the window, and the HMAC verifies over the context
/// rebuilt from the received body.
fn verify_push(a: &Arrival, secret: &str, callback_url: &str) -> Result<()> {
    use ma2h_protocol::signature::{self, SignedContext, VerifyingKey};
    let header = a.signature.as_deref().context("push without MA2H-Signature")?;
    let parsed = signature::parse_header(header)?;
    let now =
        i64::try_from(std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs()))?;
    signature::check_window(parsed.t_unix, now, signature::REPLAY_WINDOW_SECS)?;
    let body: Value = serde_json::from_slice(&a.body).context("push body is not JSON")?;
    let ctx = SignedContext::for_response(&body, callback_url, &parsed.jti, &parsed.t)
        .map_err(|f| anyhow::anyhow!("push body lacks `{f}`"))?;
    signature::verify(&ctx, &parsed.v1, &[VerifyingKey::Hmac(secret.as_bytes().to_vec())])?;
    Ok(())
}

// ---------------------------------------------------------------- longpoll-wake

pub struct LongPollOptions {
    pub common: Common,
    /// `?wait=` seconds (the Hub clamps it to `MA2H_LONG_POLL_MAX_SECONDS`).
    pub wait_seconds: u32,
    /// Pause between sending the long-poll and resolving, so the waiter is parked in the Hub.
    pub settle: Duration,
}

pub async fn longpoll_wake(o: &LongPollOptions) -> Result<Samples> {
    let c = &o.common;
    println!(
        "longpoll-wake: GET /v1/messages/{{id}}?wait={} parked {:?} before each resolve; {} samples after {} warmup rounds",
        o.wait_seconds, o.settle, c.samples, c.warmup
    );
    let run = envelope::run_id();
    let mut agent = Conn::connect(&c.target).await?;
    let mut operator = Conn::connect(&c.target).await?;
    let mut waiter_conn = Some(Conn::connect(&c.target).await?);
    let mut out = Samples::default();
    for i in 0..c.warmup + c.samples {
        let id = submit_ask(c, &mut agent, &format!("bench-lp-{run}-{i}"), None).await?;
        let mut conn = match waiter_conn.take() {
            Some(conn) => conn,
            None => Conn::connect(&c.target).await?,
        };
        let (path, key) = (format!("/v1/messages/{id}?wait={}", o.wait_seconds), c.agent_key.clone());
        let waiter = tokio::spawn(async move {
            let r = conn.get(&path, &key).await;
            (Instant::now(), r, conn)
        });
        tokio::time::sleep(o.settle).await;
        if waiter.is_finished() {
            let (_, r, _) = waiter.await?;
            out.failures.push(format!("{id}: the long-poll returned before the resolve: {:?}", r.map(|r| r.show())));
            continue;
        }
        let (sent, acked) = resolve(c, &mut operator, &id).await?;
        let (returned, resp, conn) = match tokio::time::timeout(c.timeout, waiter).await {
            Ok(joined) => joined?,
            Err(_) => {
                out.failures.push(format!("{id}: the long-poll did not return within {:?}", c.timeout));
                continue;
            }
        };
        let resp = match resp {
            Ok(r) => r,
            Err(e) => {
                out.failures.push(format!("{id}: long-poll transport error: {e:#}"));
                continue;
            }
        };
        waiter_conn = Some(conn);
        let status = resp.json()["status"].as_str().unwrap_or_default().to_owned();
        if resp.status != 200 || status == "open" {
            out.failures.push(format!("{id}: the long-poll returned {} without the answer", resp.show()));
            continue;
        }
        if i >= c.warmup {
            out.from_sent.push(stats::signed_us(sent, returned));
            out.from_ack.push(stats::signed_us(acked, returned));
            out.resolve_rtt.push(stats::signed_us(sent, acked));
        }
    }
    out.print("long-poll returned");
    Ok(out)
}

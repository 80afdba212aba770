//! The live inbox (issue 39): `GET /inbox/events`, a Server-Sent Events stream of the operator's
//! [`Pulse`], and `GET /inbox/live`, the same pulse as one JSON document. `/inbox/live.js` reads
//! the stream: it keeps the tab title's open count current, refetches a list page when its
//! version changes, flags a message page that changed under its reader, and (opt-in) raises a
//! desktop notification for a new urgent/high ask the operator may answer.
//!
//! The local binary holds the stream and sends a pulse the moment a change commits (the
//! in-process change feed), for up to [`HOLD`]; then it closes and the browser reconnects. A
//! Lambda behind API Gateway's HTTP API cannot stream a response (the integration buffers it),
//! so there the stream is one pulse and a `retry:` of the poll interval (`MA2H_LIVE_POLL_SECONDS`,
//! 20 s): `EventSource`
//! reconnects on its own, which makes it a poll — one code path in the browser either way.
//!
//! ```text
//! retry: 1000
//!
//! event: pulse
//! data: {"open":3,"urgent":1,"high":0,"asks":2,"tasks":1,"version":"9f…","alerts":[…]}
//! ```

use std::time::{Duration, Instant};

use axum::Json;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures_util::stream;
use ma2h_core::Hub;
use ma2h_core::messages::pulse::{Pulse, pulse};
use ma2h_protocol::envelope::{MessageType, Priority};
use serde::Serialize;

use super::session::Session;

/// How long the local binary holds one stream before asking the browser to reconnect (a
/// reconnect re-checks the session cookie, so a logout or revoked key ends the feed within it).
const HOLD: Duration = Duration::from_secs(300);
/// With nothing changing, a pulse is re-read and a keep-alive comment sent this often.
const IDLE: Duration = Duration::from_secs(25);
/// Bursts are coalesced: at most one read per this gap.
const GAP: Duration = Duration::from_secs(1);

#[derive(Debug, Serialize)]
struct AlertJson {
    id: String,
    title: String,
    priority: &'static str,
    #[serde(rename = "type")]
    kind: &'static str,
    agent: String,
    url: String,
}

#[derive(Debug, Serialize)]
struct PulseJson {
    open: u64,
    urgent: u64,
    high: u64,
    asks: u64,
    tasks: u64,
    version: String,
    alerts: Vec<AlertJson>,
}

impl From<&Pulse> for PulseJson {
    fn from(p: &Pulse) -> Self {
        let c = &p.counts;
        Self {
            open: c.total,
            urgent: c.priority(Priority::Urgent),
            high: c.priority(Priority::High),
            asks: c.kind(MessageType::Ask),
            tasks: c.kind(MessageType::Task),
            version: p.version.clone(),
            alerts: p
                .alerts
                .iter()
                .map(|a| AlertJson {
                    id: a.id.to_string(),
                    // a notification shows agent text too: bidi controls visible, not obeyed
                    title: ma2h_core::kernel::display::visible_bidi(&a.title).into_owned(),
                    priority: a.priority.as_str(),
                    kind: a.kind.as_str(),
                    agent: ma2h_core::kernel::display::visible_bidi(&a.agent).into_owned(),
                    url: format!("/inbox/{}", a.id),
                })
                .collect(),
        }
    }
}

/// `GET /inbox/live`: one pulse as JSON (for scripts and for clients without `EventSource`).
pub async fn now(State(hub): State<Hub>, session: Session) -> Response {
    match pulse(&hub, &session.principal).await {
        Ok(p) => Json(PulseJson::from(&p)).into_response(),
        Err(e) => {
            tracing::warn!(error = %e, "inbox pulse failed");
            (StatusCode::SERVICE_UNAVAILABLE, Json(serde_json::json!({"error": "pulse unavailable"}))).into_response()
        }
    }
}

struct Feed {
    hub: Hub,
    session: Session,
    last: Option<String>,
    started: Instant,
    read_at: Option<Instant>,
    /// The stream is held (local binary); otherwise one pulse, then the browser polls.
    held: bool,
}

/// `GET /inbox/events`: the pulse stream.
pub async fn events(State(hub): State<Hub>, session: Session) -> Response {
    let held = hub.settings.inter_agent.stream_served;
    // where the stream cannot be held (Lambda), the `retry:` is the poll interval
    let retry = if held { Duration::from_secs(1) } else { hub.settings.live_poll };
    let preamble = Bytes::from(format!("retry: {}\n\n", retry.as_millis()));
    let feed = Feed { hub, session, last: None, started: Instant::now(), read_at: None, held };
    let frames = stream::unfold(Some(feed), |state| async move {
        let mut f = state?;
        let frame = f.next_frame().await;
        let more = f.held && !f.hub.changes.closing() && f.started.elapsed() < HOLD && frame.is_some();
        Some((Ok::<_, std::io::Error>(Bytes::from(frame.unwrap_or_default())), more.then_some(f)))
    });
    let body = Body::from_stream(futures_util::StreamExt::chain(stream::iter([Ok(preamble)]), frames));
    let mut resp = body.into_response();
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    resp
}

impl Feed {
    /// The next frame: a pulse when its version changed, else a keep-alive comment; `None` ends
    /// the stream (the pulse could not be read: the browser retries).
    async fn next_frame(&mut self) -> Option<String> {
        loop {
            // Subscribe before reading: a change committed between the read and the wait still
            // wakes us (no lost update).
            let sub = self.hub.changes.subscribe_account(&self.session.principal.account);
            if let Some(at) = self.read_at
                && at.elapsed() < GAP
            {
                tokio::time::sleep(GAP - at.elapsed()).await;
            }
            self.read_at = Some(Instant::now());
            let p = match pulse(&self.hub, &self.session.principal).await {
                Ok(p) => p,
                Err(e) => {
                    tracing::warn!(error = %e, "inbox pulse failed; the browser reconnects");
                    return None;
                }
            };
            if self.last.as_deref() != Some(p.version.as_str()) {
                self.last = Some(p.version.clone());
                let data = serde_json::to_string(&PulseJson::from(&p)).unwrap_or_default();
                return Some(format!("event: pulse\ndata: {data}\n\n"));
            }
            let left = HOLD.saturating_sub(self.started.elapsed());
            if !self.held || left.is_zero() || self.hub.changes.closing() {
                return Some(": idle\n\n".to_owned());
            }
            let waited = Instant::now();
            sub.wait(IDLE.min(left)).await;
            if waited.elapsed() >= IDLE.min(left) {
                return Some(": idle\n\n".to_owned()); // keep-alive: proxies drop silent streams
            }
        }
    }
}

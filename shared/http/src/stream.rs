//! `GET /v1/inbox/stream?session=sess_…` (§8.7.2) as Server-Sent Events — served by the local
//! binary only (a Lambda behind API Gateway cannot hold a response open).
//!
//! Framing (the spec leaves it open; `docs/design/inter-agent.md` documents it):
//!
//! ```text
//! retry: 1000
//! : hold 25
//!
//! event: message              ← the entry kind: directive | message | response | receipt
//! id: msg_01…                 ← the entry's §8.7.1 ack key (usable as Last-Event-ID)
//! data: {"message": {…}, "signature": "MA2H-Signature: t=…,jti=…,v1=…"}
//!
//! event: close                ← the hold bound: reconnect now (the reconnect renews the lease)
//! data: {"reconnect": true}
//! ```
//!
//! When the session ends or the credential stops working mid-hold, the close frame says so —
//! `data: {"reconnect": false, "code": "session_closed_by_operator"}` — with the §8.5 code a
//! reconnect would be refused with (`gone`, `session_closed_by_operator`, `not_found`,
//! `unauthenticated`), so a client does not try.
//!
//! Each `data` line is exactly one drain item. A pushed entry is provisional: ack it (`POST
//! /v1/inbox/ack?session=…`) or it is redelivered after the visibility window.

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use futures_util::stream;
use ma2h_core::mailbox::drain::Delivery;
use ma2h_core::mailbox::stream::Next;
use ma2h_core::{Hub, HubError};
use ma2h_protocol::wire::StreamClose;

use crate::error::{ApiError, status_and_code};
use crate::extract::{Caller, Params};

pub async fn open(State(hub): State<Hub>, Caller(who): Caller, params: Params) -> Result<Response, ApiError> {
    if !hub.settings.inter_agent.stream_served {
        return Err(HubError::NotFound.into());
    }
    let s = ma2h_core::mailbox::stream::open(&hub, &who, params.get("session")).await?;
    let preamble = Bytes::from(format!("retry: 1000\n: hold {}\n\n", s.hold.as_secs()));
    // States: Some(stream) while holding; None once the close frame was sent.
    let frames = stream::unfold(Some(s), |state| async move {
        let mut s = state?;
        match s.next().await {
            Ok(Next::Entries(batch)) => Some((Ok::<_, std::io::Error>(Bytes::from(frames(&batch))), Some(s))),
            Ok(Next::Reconnect) => Some((Ok(Bytes::from_static(RECONNECT)), None)),
            Ok(Next::Ended(why)) => Some((Ok(Bytes::from(ended_frame(&why))), None)),
            Err(e) => {
                tracing::warn!(error = %e, "stream ended by an error; the client reconnects");
                Some((Ok(Bytes::from_static(RECONNECT)), None))
            }
        }
    });
    let body = Body::from_stream(futures_util::StreamExt::chain(stream::iter([Ok(preamble)]), frames));
    let mut resp = body.into_response();
    let h = resp.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static("text/event-stream"));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(resp)
}

const RECONNECT: &[u8] = b"event: close\ndata: {\"reconnect\":true}\n\n";

/// The close frame of a stream whose session or credential ended: do not reconnect, and why.
fn ended_frame(why: &HubError) -> String {
    let code = status_and_code(why).map_or("internal_error", |(_, code)| code);
    let close = StreamClose { reconnect: false, code: Some(code.to_owned()) };
    format!("event: close\ndata: {}\n\n", serde_json::to_string(&close).unwrap_or_default())
}

/// One SSE event per delivery: `event` = kind, `id` = ack key, `data` = the drain item.
fn frames(batch: &[Delivery]) -> String {
    let mut out = String::new();
    for d in batch {
        let key = d.ack_key().unwrap_or_default().replace(['\n', '\r'], "");
        let data = serde_json::to_string(d).unwrap_or_default();
        out.push_str(&format!("event: {}\nid: {key}\ndata: {data}\n\n", d.kind.as_str()));
    }
    out
}

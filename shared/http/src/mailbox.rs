//! The human→agent leg over HTTP: operator directives (§13), the agent mailbox drain and ack
//! (§8.7), and presence (§15.3). Handlers only translate; the rules live in `ma2h-core`.

use std::time::Duration;

use axum::Json;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use ma2h_core::mailbox::model::{MailboxEntry, Track};
use ma2h_core::mailbox::{directives, drain, presence};
use ma2h_core::messages::receipt;
use ma2h_core::{Hub, HubError};
use ma2h_protocol::ProtocolError;
use ma2h_protocol::error::FieldError;
use ma2h_protocol::wire::{AckEnvelope, DirectiveDelivery, DirectiveTrack, DrainBody, InboxAcked, Presence};
use serde_json::{Map, Value};

use crate::error::ApiError;
use crate::extract::{Body, Caller, Params, Path};

/// Longest entry id an ack may name (ours are 30 bytes).
const MAX_ACK_ID_BYTES: usize = 128;

fn json_body(bytes: &[u8]) -> Result<Value, HubError> {
    serde_json::from_slice(bytes).map_err(|e| HubError::validation(format!("`/`: the body is not valid JSON ({e})")))
}

/// `POST /v1/operator/directives` → 201 with the track and `Location`.
pub async fn send(State(hub): State<Hub>, Caller(who): Caller, Body(body): Body) -> Result<Response, ApiError> {
    let entry = directives::create(&hub, &who, &json_body(&body)?).await?;
    let track = entry.track(hub.clock.now());
    let location = format!("/v1/operator/directives/{}", entry.key);
    let mut resp = (StatusCode::CREATED, Json(track_body(&entry, &track))).into_response();
    if let Ok(v) = HeaderValue::from_str(&location) {
        resp.headers_mut().insert(header::LOCATION, v);
    }
    Ok(resp)
}

/// `GET /v1/operator/directives/{id}`: the directive and its §14.2 delivery track.
pub async fn track(
    State(hub): State<Hub>,
    Caller(who): Caller,
    Path(id): Path<String>,
) -> Result<Json<DirectiveTrack>, ApiError> {
    let (entry, track) = directives::read(&hub, &who, &id).await?;
    Ok(Json(track_body(&entry, &track)))
}

/// The operator's view of one directive. The `note` is untrusted agent text, returned as data.
pub fn track_body(entry: &MailboxEntry, track: &Track) -> DirectiveTrack {
    let mut delivery = DirectiveDelivery {
        state: track.state(),
        delivered_at: None,
        bounced_at: None,
        acknowledged_at: None,
        ack: None,
        // §14.2: stamped once at the bounce; equal to what a receipt would carry.
        prior: track.prior(),
        deliveries: entry.deliveries,
    };
    match track {
        Track::Queued | Track::Expired => {}
        Track::Bounced { delivered_at, at } => {
            (delivery.delivered_at, delivery.bounced_at) = (*delivered_at, Some(*at))
        }
        Track::Delivered { delivered_at } => delivery.delivered_at = Some(*delivered_at),
        Track::Acknowledged { delivered_at, ack } => {
            delivery.delivered_at = *delivered_at;
            delivery.acknowledged_at = Some(ack.acked_at);
            delivery.ack = Some(ack.envelope(&entry.key, None));
        }
    }
    DirectiveTrack {
        id: entry.key.clone(),
        agent_id: entry.mailbox.agent.to_string(),
        directive: entry.payload.clone(),
        delivery,
    }
}

/// `GET /v1/inbox?max=N&wait=S[&session=sess_…]` (agent credential).
pub async fn drain(State(hub): State<Hub>, Caller(who): Caller, params: Params) -> Result<Response, ApiError> {
    let max = params.u32("max")?;
    if max == Some(0) {
        return Err(HubError::validation("query `max` must be at least 1").into());
    }
    let wait = Duration::from_secs(u64::from(params.u32("wait")?.unwrap_or(0)));
    let deliveries = drain::drain(&hub, &who, params.get("session"), max, wait).await?;
    let mut resp = Json(DrainBody { messages: deliveries }).into_response();
    resp.headers_mut().insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    Ok(resp)
}

/// `POST /v1/inbox/ack {"ids": [...], "note"?}` → `{"acked": n}`.
pub async fn ack(
    State(hub): State<Hub>,
    Caller(who): Caller,
    params: Params,
    Body(body): Body,
) -> Result<Json<InboxAcked>, ApiError> {
    let (ids, note) = parse_ack(&json_body(&body)?)?;
    let acked = drain::ack(&hub, &who, params.get("session"), &ids, note).await?;
    Ok(Json(InboxAcked { acked: acked as u64 }))
}

/// The ack body: `ids` (at most 100 strings of at most 128 bytes) and an optional `note`.
fn parse_ack(body: &Value) -> Result<(Vec<String>, Option<String>), HubError> {
    let Some(obj) = body.as_object() else {
        return Err(HubError::validation("`/`: the body must be a JSON object"));
    };
    let mut fields = Vec::new();
    let mut ids = Vec::new();
    match obj.get("ids") {
        Some(Value::Array(items)) if items.len() > drain::MAX_ACK_IDS => {
            fields.push(FieldError::new("/ids", format!("at most {} ids per ack", drain::MAX_ACK_IDS)));
        }
        Some(Value::Array(items)) => {
            for (i, item) in items.iter().enumerate() {
                match item.as_str() {
                    Some(s) if !s.is_empty() && s.len() <= MAX_ACK_ID_BYTES => ids.push(s.to_owned()),
                    _ => fields.push(FieldError::new(
                        format!("/ids/{i}"),
                        format!("must be a non-empty string of at most {MAX_ACK_ID_BYTES} bytes"),
                    )),
                }
            }
        }
        _ => fields.push(FieldError::new("/ids", "is required and must be an array of ids")),
    }
    let note = note(obj, &mut fields);
    if fields.is_empty() { Ok((ids, note)) } else { Err(ProtocolError::validation_at(fields).into()) }
}

/// `POST /v1/messages/{id}/ack {note?, resolution_id?}` (§14.1, §14.3): the submitting agent
/// acknowledges the Response it received → the ack object.
pub async fn ack_response(
    State(hub): State<Hub>,
    Caller(who): Caller,
    Path(id): Path<String>,
    Body(body): Body,
) -> Result<Json<AckEnvelope>, ApiError> {
    let input = if body.iter().all(u8::is_ascii_whitespace) { Value::Object(Map::new()) } else { json_body(&body)? };
    let Some(obj) = input.as_object() else {
        return Err(HubError::validation("`/`: the body must be a JSON object").into());
    };
    let mut fields = Vec::new();
    let note = note(obj, &mut fields);
    let resolution_id = match obj.get("resolution_id") {
        None | Some(Value::Null) => None,
        Some(Value::String(r)) => Some(r.as_str()),
        Some(_) => {
            fields.push(FieldError::new("/resolution_id", "must be a string"));
            None
        }
    };
    if !fields.is_empty() {
        return Err(ProtocolError::validation_at(fields).into());
    }
    let r = receipt::ack(&hub, &who, &id, note, resolution_id).await?;
    Ok(Json(r.ack.envelope(r.in_reply_to.as_str(), r.resolution_id.as_deref())))
}

/// An ack's optional `note`: a string of at most 2,000 characters (untrusted text for the human).
fn note(obj: &Map<String, Value>, fields: &mut Vec<FieldError>) -> Option<String> {
    match obj.get("note") {
        None | Some(Value::Null) => None,
        Some(Value::String(n)) if n.chars().count() <= drain::MAX_NOTE_CHARS => Some(n.clone()),
        Some(_) => {
            let max = drain::MAX_NOTE_CHARS;
            fields.push(FieldError::new("/note", format!("must be a string of at most {max} characters")));
            None
        }
    }
}

/// `GET /v1/agents/{agent_id}/presence`: the agent id may itself contain `/` (raw or `%2F`).
pub async fn presence(
    State(hub): State<Hub>,
    Caller(who): Caller,
    Path(rest): Path<String>,
) -> Result<Json<Presence>, ApiError> {
    let Some(agent_id) = rest.strip_suffix("/presence").filter(|a| !a.is_empty()) else {
        return Err(HubError::NoSuchEndpoint.into());
    };
    Ok(Json(presence::read(&hub, &who, agent_id).await?))
}

//! `GET /.well-known/ma2h` (§8.0): the capability document, built from the running
//! configuration. Only what this Hub implements is advertised.

use axum::Json;
use axum::extract::State;
use ma2h_core::Hub;
use ma2h_core::settings::Settings;
use ma2h_protocol::version::HUB_VERSION;
use serde_json::{Value, json};

pub async fn capability(State(hub): State<Hub>) -> Json<Value> {
    Json(capability_document(&hub))
}

pub fn capability_document(hub: &Hub) -> Value {
    let s: &Settings = &hub.settings;
    let mut doc = json!({
        "ma2h_version": HUB_VERSION,
        "max_body_bytes": s.limits.max_body_bytes,
        "max_part_bytes": s.limits.max_part_bytes,
        "max_context_parts": s.limits.max_context_parts,
        "auth_schemes": ["bearer", "apikey"],
        "callback_auth_schemes": ["hmac", "bearer", "apikey"],
        "signature_algs": ["hmac-sha256", "ed25519"],
        "retention_days": s.retention_days,
        "replay_window_seconds": s.replay_window_seconds,
        // Hub extensions (unknown fields are ignored by conformant agents, §10).
        "long_poll_max_seconds": s.long_poll_max_seconds,
        "idempotency_ttl_hours": s.idempotency_ttl_hours,
        "api_key_header": "X-API-Key",
        // §8.3/§8.6: the advertised caps on push attempts and duration.
        "push": {
            "max_attempts": s.push.max_attempts,
            "max_duration_seconds": s.push.max_duration.as_secs(),
            "requires_callback_binding": true,
        },
        // §9.2: the Hub's Ed25519 public keys (current, plus previous ones during a rotation).
        "signing_keys": hub.keys.published(),
    });
    // §8.0: the human→agent leg; drains accept `?session=` (§8.7.1); no webhook.
    let mb = &s.mailbox;
    doc["inbound"] = json!({
        "enabled": true,
        "poll_url": format!("{}/v1/inbox", s.public_url),
        "ack_url": format!("{}/v1/inbox/ack", s.public_url),
        "max_batch": mb.max_batch,
        "visibility_timeout_seconds": mb.visibility_timeout.as_secs(),
        "retention_days": mb.retention_days,
        "signature_algs": ["hmac-sha256", "ed25519"],
        "webhook_supported": false,
        "session_param": true,
    });
    let ia = &s.inter_agent;
    if ia.stream_served {
        // §8.7.2: only where it is served (the local binary); hold ≤ the presence window.
        doc["inbound"]["stream_url"] = json!(format!("{}/v1/inbox/stream", s.public_url));
        doc["inbound"]["stream_max_hold_seconds"] = json!(s.stream_hold().as_secs().max(1));
    }
    // §8.0: the deployment ceiling — each account still opts in (default off) through its
    // operator. Requires the §14 ack primitive, advertised below.
    doc["inter_agent"] = json!({
        "enabled": ia.enabled,
        "entry_kinds": ["message", "response", "receipt"],
        "sender_allowlists": true,
    });
    // §16: sessions, with the §16.4.1 hard stop (every point of its checklist holds). Agents
    // never hold the account-wide listing grant here.
    let ss = &s.sessions;
    doc["sessions"] = json!({
        "enabled": true,
        "min_ttl_seconds": ss.min_ttl_seconds,
        "max_ttl_seconds": ss.max_ttl_seconds,
        "max_live_per_agent": ss.max_live_per_agent,
        "agent_list_visibility": false,
        "terminal_retention_seconds": ss.terminal_retention_seconds,
        "operator_hard_stop": true,
    });
    // §14: acks of directives (the inbox ack) and of Responses (`POST /v1/messages/{id}/ack`),
    // pulled only — so no `signature_algs` (those name a pushed ack's algorithms).
    doc["ack"] = json!({ "enabled": true });
    doc["presence"] = json!({ "enabled": true, "freshness_seconds": mb.presence_freshness.as_secs() });
    let mut rate = serde_json::Map::new();
    if s.requests_per_minute > 0 {
        rate.insert("requests_per_minute".into(), s.requests_per_minute.into());
    }
    if s.inbox_depth > 0 {
        rate.insert("inbox_depth".into(), s.inbox_depth.into());
    }
    if ia.enabled && ia.requests_per_minute > 0 {
        rate.insert("inter_agent_requests_per_minute".into(), ia.requests_per_minute.into());
    }
    if !rate.is_empty() {
        doc["rate_limit"] = Value::Object(rate);
    }
    doc
}

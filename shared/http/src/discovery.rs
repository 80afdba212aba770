//! `GET /.well-known/ma2h` (§8.0): the capability document, built from the running
//! configuration. Only what this Hub implements is advertised.

use axum::Json;
use axum::extract::State;
use ma2h_core::Hub;
use ma2h_core::kernel::settings::Settings;
use ma2h_protocol::version::HUB_VERSION;
use ma2h_protocol::wire::{
    AckCapability, Capability, InboundCapability, InterAgentCapability, PresenceCapability, PushCapability, RateLimit,
    SessionsCapability,
};

pub async fn capability(State(hub): State<Hub>) -> Json<Capability> {
    Json(capability_document(&hub))
}

pub fn capability_document(hub: &Hub) -> Capability {
    let s: &Settings = &hub.settings;
    let strings = |items: &[&str]| items.iter().map(|i| (*i).to_owned()).collect::<Vec<_>>();
    let (mb, ia, ss) = (&s.mailbox, &s.inter_agent, &s.sessions);
    let on = |n: u32| (n > 0).then_some(n);
    let rate = RateLimit {
        requests_per_minute: on(s.requests_per_minute),
        inbox_depth: on(s.inbox_depth),
        inter_agent_requests_per_minute: on(ia.requests_per_minute).filter(|_| ia.enabled),
    };
    Capability {
        ma2h_version: HUB_VERSION.into(),
        max_body_bytes: s.limits.max_body_bytes,
        max_part_bytes: s.limits.max_part_bytes,
        max_context_parts: s.limits.max_context_parts,
        auth_schemes: strings(&["bearer", "apikey"]),
        callback_auth_schemes: strings(&["hmac", "bearer", "apikey"]),
        signature_algs: strings(&["hmac-sha256", "ed25519"]),
        retention_days: s.retention_days,
        replay_window_seconds: s.replay_window_seconds,
        // Hub extensions (unknown fields are ignored by conformant agents, §10).
        long_poll_max_seconds: s.long_poll_max_seconds,
        idempotency_ttl_hours: s.idempotency_ttl_hours,
        api_key_header: "X-API-Key".into(),
        // §8.3/§8.6: the advertised caps on push attempts and duration.
        push: PushCapability {
            max_attempts: s.push.max_attempts,
            max_duration_seconds: s.push.max_duration.as_secs(),
            requires_callback_binding: true,
        },
        // §9.2: the Hub's Ed25519 public keys (current, plus previous ones during a rotation).
        signing_keys: hub.keys.published(),
        // §8.0: the human→agent leg; drains accept `?session=` (§8.7.1); no webhook. The stream
        // (§8.7.2) only where it is served (the local binary); its hold ≤ the presence window.
        inbound: InboundCapability {
            enabled: true,
            poll_url: format!("{}/v1/inbox", s.public_url),
            ack_url: format!("{}/v1/inbox/ack", s.public_url),
            max_batch: mb.max_batch,
            visibility_timeout_seconds: mb.visibility_timeout.as_secs(),
            retention_days: mb.retention_days,
            signature_algs: strings(&["hmac-sha256", "ed25519"]),
            webhook_supported: false,
            session_param: true,
            stream_url: ia.stream_served.then(|| format!("{}/v1/inbox/stream", s.public_url)),
            stream_max_hold_seconds: ia.stream_served.then(|| s.stream_hold().as_secs().max(1)),
        },
        // §8.0: the deployment ceiling — each account still opts in (default off) through its
        // operator. Requires the §14 ack primitive, advertised below.
        inter_agent: InterAgentCapability {
            enabled: ia.enabled,
            entry_kinds: strings(&["message", "response", "receipt"]),
            sender_allowlists: true,
        },
        // §16: sessions, with the §16.4.1 hard stop (every point of its checklist holds). Agents
        // never hold the account-wide listing grant here.
        sessions: SessionsCapability {
            enabled: true,
            min_ttl_seconds: ss.min_ttl_seconds,
            max_ttl_seconds: ss.max_ttl_seconds,
            max_live_per_agent: ss.max_live_per_agent,
            agent_list_visibility: false,
            terminal_retention_seconds: ss.terminal_retention_seconds,
            operator_hard_stop: true,
        },
        // §14: acks of directives (the inbox ack) and of Responses (`POST /v1/messages/{id}/ack`),
        // pulled only — so no `signature_algs` (those name a pushed ack's algorithms).
        ack: AckCapability { enabled: true },
        presence: PresenceCapability { enabled: true, freshness_seconds: mb.presence_freshness.as_secs() },
        rate_limit: (rate != RateLimit::default()).then_some(rate),
        extensions: Some(ma2h_protocol::wire::HubExtensions {
            decisions: ma2h_protocol::wire::DecisionsExtension {
                version: 1,
                approval_policies: true,
                delegation: true,
                grants: true,
                grant_scopes: ["minutes", "session", "project", "agent"].map(String::from).to_vec(),
                operator_presence: true,
                policy_propagation_seconds: s.channels.config_cache.as_secs_f64().ceil() as u64,
                passkey_step_up: true,
            },
        }),
    }
}

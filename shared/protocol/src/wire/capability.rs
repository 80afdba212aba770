//! §8.0 `GET /.well-known/ma2h`: the capability document. Members after `replay_window_seconds`
//! marked "Hub extension" are this Hub's own (§10: agents ignore what they do not know).

use serde::{Deserialize, Serialize};

/// The capability document, as this Hub writes it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capability {
    pub ma2h_version: String,
    pub max_body_bytes: usize,
    pub max_part_bytes: usize,
    pub max_context_parts: usize,
    pub auth_schemes: Vec<String>,
    pub callback_auth_schemes: Vec<String>,
    pub signature_algs: Vec<String>,
    pub retention_days: u32,
    pub replay_window_seconds: u32,
    /// Hub extension.
    pub long_poll_max_seconds: u32,
    /// Hub extension.
    pub idempotency_ttl_hours: u32,
    /// Hub extension.
    pub api_key_header: String,
    /// Hub extension: §8.3/§8.6 caps on push attempts and duration.
    pub push: PushCapability,
    /// Hub extension: §9.2 Ed25519 public keys, current first.
    pub signing_keys: Vec<SigningKey>,
    pub inbound: InboundCapability,
    pub inter_agent: InterAgentCapability,
    pub sessions: SessionsCapability,
    pub ack: AckCapability,
    pub presence: PresenceCapability,
    /// Absent when no limit is configured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_limit: Option<RateLimit>,
    /// Hub extensions beyond v0.5 (issue 40), by name: a client feature-detects them here and a
    /// v0.5 client ignores the member (§10).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub extensions: Option<HubExtensions>,
}

/// The extensions this Hub offers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct HubExtensions {
    /// Team decisions (docs/decisions.md): approval policies with a quorum, delegation while
    /// away, standing grants.
    #[serde(rename = "ma2h-hub.decisions")]
    pub decisions: DecisionsExtension,
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct DecisionsExtension {
    pub version: u32,
    /// Under an account's approval policy an `answered` value is one approval (answered
    /// `202 {status: open, approval}`) until the quorum; the completing Response lists
    /// `response.approvals`.
    pub approval_policies: bool,
    /// `response.on_behalf_of`: a delegate answered for an away operator.
    pub delegation: bool,
    /// Standing grants: an ask's `request.grant_key`; an answer from a grant carries
    /// `response.grant_id`.
    pub grants: bool,
    /// The scopes a grant may have.
    pub grant_scopes: Vec<String>,
    /// `GET /v1/operator/presence`: each operator's last activity (their own inbox, API and
    /// channel requests); routes may climb an on-call ladder that skips the away and offline.
    #[serde(default)]
    pub operator_presence: bool,
    /// How long an edit of the account's policies, absences or routes may take to apply in
    /// every process of the Hub (each caches the account's policy document for this long; the
    /// process that made the edit applies it at once). A client that edits and then acts waits
    /// this long.
    #[serde(default)]
    pub policy_propagation_seconds: u64,
    /// Issue 41: an approval policy may say `passkey` — an answer to its asks (anything but a
    /// decline) applies only with a passkey assertion made in the Hub's inbox; any other answer is
    /// refused `403 not_authorized` and the ask stays open.
    #[serde(default)]
    pub passkey_step_up: bool,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PushCapability {
    pub max_attempts: u32,
    pub max_duration_seconds: u64,
    pub requires_callback_binding: bool,
}

/// Whether a published key signs now or only verifies what was signed before a rotation.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum KeyStatus {
    Current,
    Previous,
}

/// One published Hub key: `public_key` is base64url without padding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SigningKey {
    pub kid: String,
    pub alg: String,
    pub public_key: String,
    pub status: KeyStatus,
}

/// §8.0 `inbound`: the human→agent leg.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InboundCapability {
    pub enabled: bool,
    pub poll_url: String,
    pub ack_url: String,
    pub max_batch: u32,
    pub visibility_timeout_seconds: u64,
    pub retention_days: u32,
    pub signature_algs: Vec<String>,
    pub webhook_supported: bool,
    pub session_param: bool,
    /// §8.7.2: only where the stream is served.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stream_max_hold_seconds: Option<u64>,
}

/// §8.0 `inter_agent`: the deployment's ceiling (each account still opts in).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct InterAgentCapability {
    pub enabled: bool,
    pub entry_kinds: Vec<String>,
    pub sender_allowlists: bool,
}

/// §8.0 `sessions`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionsCapability {
    pub enabled: bool,
    pub min_ttl_seconds: u32,
    pub max_ttl_seconds: u32,
    pub max_live_per_agent: u32,
    pub agent_list_visibility: bool,
    pub terminal_retention_seconds: u32,
    pub operator_hard_stop: bool,
}

/// §14 `ack`: pulled only, so no `signature_algs` (those name a pushed ack's algorithms).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct AckCapability {
    pub enabled: bool,
}

/// §15 `presence`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PresenceCapability {
    pub enabled: bool,
    pub freshness_seconds: u64,
}

/// §8.6 `rate_limit`: each member only when that limit is on.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RateLimit {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requests_per_minute: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inbox_depth: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inter_agent_requests_per_minute: Option<u32>,
}

//! Small constructors for the records the checks store. Timestamps are whole milliseconds (the
//! precision every adapter keeps) relative to a fixed instant, [`t0`].

use std::sync::atomic::{AtomicU64, Ordering};

use chrono::{DateTime, Duration};
use ma2h_core::kernel::credentials::{CredentialRecord, PrincipalId};
use ma2h_core::messages::records::{IdempotencyRecord, MessageRecord, TerminalWrite};
use ma2h_protocol::envelope::{MessageType, Priority};
use ma2h_protocol::ids::{AccountId, AgentId, HumanId, MessageId, ResolutionId};
use ma2h_protocol::lifecycle::Status;
use ma2h_protocol::time::{self, Timestamp};
use serde_json::{Value, json};

/// How long the fixtures retain a terminal message (§8.2).
pub const RETENTION: Duration = Duration::days(30);

/// The fixed "now" of the checks: 2030-01-01T00:00:00Z.
pub fn t0() -> Timestamp {
    DateTime::from_timestamp_millis(1_893_456_000_000).expect("valid instant")
}

/// `t0` plus `seconds` (negative for the past).
pub fn at(seconds: i64) -> Timestamp {
    t0() + Duration::seconds(seconds)
}

pub fn account(name: &str) -> AccountId {
    AccountId::parse(name).expect("valid account id")
}

pub fn agent(name: &str) -> AgentId {
    AgentId::parse(name).expect("valid agent id")
}

pub fn human(name: &str) -> HumanId {
    HumanId::parse(name).expect("valid human id")
}

static SEQUENCE: AtomicU64 = AtomicU64::new(1);

fn next() -> u64 {
    SEQUENCE.fetch_add(1, Ordering::Relaxed)
}

/// A number unique within the process (for ids the checks mint).
pub fn next_sequence() -> u64 {
    next()
}

/// A fresh, well-formed message id (unique within the process).
pub fn message_id() -> MessageId {
    MessageId::from_parts(t0().timestamp_millis() as u64, u128::from(next()))
}

/// A fresh, well-formed resolution id.
pub fn resolution_id() -> ResolutionId {
    ResolutionId::from_parts(t0().timestamp_millis() as u64, u128::from(next()))
}

/// A realistic envelope whose JSON exercises member order, nesting, unicode, escapes and numbers.
pub fn envelope(kind: MessageType, agent: &AgentId, title: &str) -> Value {
    json!({
        "ma2h_version": "0.5",
        "type": kind.as_str(),
        "agent": { "id": agent.as_str(), "run_id": "run-7", "project": "infra" },
        "title": title,
        "priority": "high",
        "tags": ["deploy", "prod"],
        "idempotency_key": format!("key-{}", next()),
        "request": {
            "mode": "select",
            "options": [ { "value": "yes", "label": "Yes ✓" }, { "value": "no", "label": "No" } ],
            "default_on_expire": null
        },
        "state": { "z": 1, "a": [1, 2.5, -0.125, "tab\t \"quoted\" \\ \u{0} 🚀"], "big": u64::MAX, "empty": {} }
    })
}

/// An open message of `kind` created at `created_at`, no deadline.
pub fn open_message(kind: MessageType, account: &AccountId, agent: &AgentId, created_at: Timestamp) -> MessageRecord {
    let title = format!("{} from {agent} — «{}»", kind.as_str(), next());
    MessageRecord {
        id: message_id(),
        account: account.clone(),
        agent_id: agent.clone(),
        kind,
        status: Status::Open,
        priority: Priority::High,
        envelope: envelope(kind, agent, &title),
        // the verbatim copy a number beyond a double leaves beside the envelope
        state_text: (kind == MessageType::Ask).then(|| r#"{"n":123456789012345678901234567890}"#.to_owned()),
        title,
        created_at,
        expires_at: None,
        updated_at: created_at,
        response: None,
        resolution_id: None,
        retain_until: None,
        push: None,
        delivered_at: None,
        ack: None,
    }
}

/// An open ask.
pub fn ask(account: &AccountId, agent: &AgentId, created_at: Timestamp) -> MessageRecord {
    open_message(MessageType::Ask, account, agent, created_at)
}

/// An open ask that expires at `expires_at`.
pub fn expiring_ask(
    account: &AccountId,
    agent: &AgentId,
    created_at: Timestamp,
    expires_at: Timestamp,
) -> MessageRecord {
    MessageRecord { expires_at: Some(expires_at), ..ask(account, agent, created_at) }
}

/// An open task.
pub fn task(account: &AccountId, agent: &AgentId, created_at: Timestamp) -> MessageRecord {
    open_message(MessageType::Task, account, agent, created_at)
}

/// A human-inbox notify: `delivered` (terminal) on acceptance, retained from creation.
pub fn notify(account: &AccountId, agent: &AgentId, created_at: Timestamp) -> MessageRecord {
    MessageRecord {
        status: Status::Delivered,
        priority: Priority::Low,
        retain_until: Some(created_at + RETENTION),
        ..open_message(MessageType::Notify, account, agent, created_at)
    }
}

/// A §6-shaped Response for `status`.
pub fn response(status: Status, resolution_id: &ResolutionId, resolved_at: Timestamp) -> Value {
    json!({
        "ma2h_version": "0.5",
        "resolution": status.as_str(),
        "resolution_id": resolution_id.as_str(),
        "resolved_at": time::format(resolved_at),
        "response": { "actor": "human:alice", "value": "yes", "comment": "ok — ✓" }
    })
}

/// A terminal write with a fresh resolution id, retained for [`RETENTION`].
pub fn terminal(status: Status, resolved_at: Timestamp) -> TerminalWrite {
    let resolution_id = resolution_id();
    TerminalWrite {
        status,
        response: response(status, &resolution_id, resolved_at),
        resolution_id,
        resolved_at,
        retain_until: resolved_at + RETENTION,
        is_expiry: status == Status::Expired,
        push: false,
        announced: false,
        seen: None,
        entry: None,
    }
}

/// `write`, carrying `seen` as the caller's read of the message (the re-read a store may skip).
pub fn with_seen(mut write: TerminalWrite, seen: &MessageRecord) -> TerminalWrite {
    write.seen = Some(Box::new(seen.clone()));
    write
}

/// What a successful terminal write leaves behind: `message` with `write` applied (§7).
pub fn completed(message: &MessageRecord, write: &TerminalWrite) -> MessageRecord {
    MessageRecord {
        status: write.status,
        response: Some(write.response.clone()),
        resolution_id: Some(write.resolution_id.clone()),
        updated_at: write.resolved_at,
        retain_until: Some(write.retain_until),
        push: write.push.then(|| ma2h_core::messages::records::PushTrack::pending(write.resolved_at)),
        ..message.clone()
    }
}

/// The §8.1 claim for `message` under `key`.
pub fn claim(message: &MessageRecord, key: &str, fingerprint: &str, expires_at: Timestamp) -> IdempotencyRecord {
    IdempotencyRecord {
        account: message.account.clone(),
        agent_id: message.agent_id.clone(),
        key: key.to_owned(),
        message_id: message.id.clone(),
        fingerprint: fingerprint.to_owned(),
        expires_at,
    }
}

/// A credential for `principal` created at `created_at`, no expiry, not revoked.
pub fn credential(account: &AccountId, principal: PrincipalId, created_at: Timestamp) -> CredentialRecord {
    let n = next();
    CredentialRecord {
        id: format!("cred_{n:026}"),
        account: account.clone(),
        principal,
        key_hash: format!("{n:064x}"),
        label: Some(format!("laptop #{n}")),
        created_at,
        expires_at: None,
        revoked_at: None,
    }
}

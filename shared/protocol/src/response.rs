//! The §6 Response envelope, built once at the terminal transition and then stored immutably.

use serde_json::Value;

use crate::envelope::{ChecklistItem, MessageType, Request};
use crate::ids::{Actor, MessageId, ResolutionId};
use crate::lifecycle::Resolution;
use crate::time::{self, Timestamp};
use crate::wire::{self, ResponseAgent, ResponseDetail};

/// Everything about the message a Response needs.
#[derive(Debug, Clone, Copy)]
pub struct Subject<'a> {
    /// The message's own `ma2h_version` (the Hub answers at the version carried, §10).
    pub version: &'a str,
    pub id: &'a MessageId,
    pub kind: MessageType,
    pub agent_id: &'a str,
    pub run_id: &'a str,
    pub state: Option<&'a Value>,
}

/// One terminal transition's content.
#[derive(Debug, Clone, PartialEq)]
pub struct Terminal {
    pub resolution: Resolution,
    pub actor: Actor,
    pub resolved_at: Timestamp,
    pub resolution_id: ResolutionId,
    pub value: Option<Value>,
    pub comment: Option<String>,
    pub checklist: Option<Vec<ChecklistItem>>,
    pub defaulted: bool,
    /// §6 `response.edited`: the human changed the agent's proposed input (the schema's
    /// `default`s) before answering. Only an answered input-mode ask with a proposal sets it.
    pub edited: bool,
    /// The Hub's extensions (issue 40): none by default, so the Response is byte-for-byte v0.5.
    pub ext: Extensions,
}

/// Hub extension members of `response` (issue 40), all absent unless a feature set them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Extensions {
    pub approvals: Vec<wire::Approval>,
    pub on_behalf_of: Option<String>,
    pub grant_id: Option<String>,
}

impl Terminal {
    /// §7 expiry: an ask with a non-null `default_on_expire` resolves `expired` + `defaulted` by
    /// `system:default_on_expire` with the default as value; otherwise (tasks, asks without a
    /// default) it simply expires, attested to `system:expiry`.
    pub fn expiry(request: Option<&Request>, now: Timestamp, resolution_id: ResolutionId) -> Self {
        let default = request.and_then(|r| r.default_on_expire.clone()).filter(|v| !v.is_null());
        let defaulted = default.is_some();
        Self {
            resolution: Resolution::Expired,
            actor: Actor::System(if defaulted { Actor::DEFAULT_ON_EXPIRE } else { Actor::EXPIRY }.to_owned()),
            resolved_at: now,
            resolution_id,
            value: default,
            comment: None,
            checklist: None,
            defaulted,
            edited: false,
            ext: Extensions::default(),
        }
    }

    /// §8.4: the submitter withdrew its ask.
    pub fn cancelled(actor: Actor, now: Timestamp, resolution_id: ResolutionId) -> Self {
        Self {
            resolution: Resolution::Cancelled,
            actor,
            resolved_at: now,
            resolution_id,
            value: None,
            comment: None,
            checklist: None,
            defaulted: false,
            edited: false,
            ext: Extensions::default(),
        }
    }

    /// §7 (v0.5): an addressed ask/task whose delivery track went undeliverable (bounced, or
    /// expired unseen) resolves `cancelled` (ask) / `dismissed` (task), attested to
    /// `system:undeliverable`. The comment keeps a task's Response carrying that actor.
    pub fn undeliverable(kind: MessageType, actor: Actor, at: Timestamp, resolution_id: ResolutionId) -> Self {
        Self {
            resolution: if kind == MessageType::Task { Resolution::Dismissed } else { Resolution::Cancelled },
            actor,
            resolved_at: at,
            resolution_id,
            value: None,
            comment: Some("undeliverable: the addressee can no longer receive this message".into()),
            checklist: None,
            defaulted: false,
            edited: false,
            ext: Extensions::default(),
        }
    }

    /// Build the §6 Response. `response` is always present for an ask; for a task only when it
    /// carries a comment or checklist; `state` is copied verbatim.
    pub fn response(&self, subject: Subject<'_>) -> Value {
        let include_detail = match subject.kind {
            MessageType::Task => self.comment.is_some() || self.checklist.is_some(),
            _ => true,
        };
        let detail = ResponseDetail {
            value: self.value.clone(),
            edited: (self.resolution == Resolution::Answered).then_some(self.edited),
            actor: self.actor.to_string(),
            resolved_at: time::format(self.resolved_at),
            comment: self.comment.clone(),
            checklist: self.checklist.clone(),
            approvals: self.ext.approvals.clone(),
            on_behalf_of: self.ext.on_behalf_of.clone(),
            grant_id: self.ext.grant_id.clone(),
        };
        wire::Response {
            ma2h_version: subject.version.to_owned(),
            in_reply_to: subject.id.to_string(),
            resolution_id: self.resolution_id.to_string(),
            agent: ResponseAgent { id: subject.agent_id.to_owned(), run_id: subject.run_id.to_owned() },
            resolution: self.resolution,
            response: include_detail.then_some(detail),
            defaulted: self.defaulted,
            state: subject.state.cloned(),
        }
        .to_value()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::envelope::{Mode, Permissions};
    use serde_json::json;

    fn subject<'a>(id: &'a MessageId, kind: MessageType, state: Option<&'a Value>) -> Subject<'a> {
        Subject { version: "0.5", id, kind, agent_id: "bot", run_id: "run_1", state }
    }

    fn select_request(default: Option<Value>) -> Request {
        Request {
            mode: Mode::Select,
            options: vec![],
            schema: None,
            permissions: Permissions::default(),
            default_on_expire: default,
            allowed_resolvers: None,
            callback: None,
        }
    }

    #[test]
    fn expiry_with_default_is_defaulted_and_attested_to_the_system() {
        let id = MessageId::from_parts(1, 1);
        let req = select_request(Some(json!("hold")));
        let t = Terminal::expiry(Some(&req), chrono::Utc::now(), ResolutionId::from_parts(2, 2));
        let r = t.response(subject(&id, MessageType::Ask, None));
        assert_eq!(r["resolution"], "expired");
        assert_eq!(r["defaulted"], true);
        assert_eq!(r["response"]["actor"], "system:default_on_expire");
        assert_eq!(r["response"]["value"], "hold");
    }

    #[test]
    fn expiry_with_null_default_is_not_defaulted() {
        let id = MessageId::from_parts(1, 1);
        let req = select_request(Some(Value::Null));
        let t = Terminal::expiry(Some(&req), chrono::Utc::now(), ResolutionId::from_parts(2, 2));
        let r = t.response(subject(&id, MessageType::Ask, None));
        assert_eq!(r["defaulted"], false);
        assert_eq!(r["response"]["actor"], "system:expiry");
        assert!(r["response"].get("value").is_none());
    }

    #[test]
    fn task_expiry_has_no_detail_and_state_is_verbatim() {
        let id = MessageId::from_parts(1, 1);
        let state = json!({"sealed": "blob", "n": 1.5});
        let t = Terminal::expiry(None, chrono::Utc::now(), ResolutionId::from_parts(2, 2));
        let r = t.response(subject(&id, MessageType::Task, Some(&state)));
        assert!(r.get("response").is_none());
        assert_eq!(r["state"], state);
        assert_eq!(r["in_reply_to"], id.as_str());
    }
}

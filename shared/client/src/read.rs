//! A message as its agent reads it back — a §8.2 GET body, a cancel's result or its 409 outcome,
//! or a bare §6 Response — through the Hub's own wire types ([`Response`], [`PushTrackView`],
//! [`MailboxTrack`]). The CLI, its hook and the MCP server all print from this one reading.
//!
//! Each part is read on its own: a part another Hub words differently is left out (its text is
//! still in `--json` output), and the rest still reads.

use ma2h_protocol::wire::{MailboxTrack, PushStatus, PushTrackView, Response};
use serde::Deserialize;
use serde::de::DeserializeOwned;
use serde_json::Value;

/// The parts of a read body the agent side shows.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MessageRead {
    /// The message id (`in_reply_to` of a bare Response).
    pub id: Option<String>,
    /// `status` as sent: a status this client does not know still reads as itself.
    pub status: Option<String>,
    pub title: Option<String>,
    pub review_url: Option<String>,
    /// The §6 Response, once terminal (or the body itself, when it is one).
    pub response: Option<Response>,
    /// §8.3 the push track of a push-mode message.
    pub push: Option<PushTrackView>,
    /// §8.2 an addressed message's outbound track.
    pub mailbox: Option<MailboxTrack>,
    /// A top-level `resolution` (a 409 `already_terminal` outcome carries one).
    resolution: Option<String>,
}

/// Every member as raw JSON, so one malformed part cannot fail the others.
#[derive(Deserialize, Default)]
struct Members {
    id: Option<Value>,
    in_reply_to: Option<Value>,
    status: Option<Value>,
    title: Option<Value>,
    review_url: Option<Value>,
    resolution: Option<Value>,
    response: Option<Value>,
    push: Option<Value>,
    mailbox: Option<Value>,
}

fn part<T: DeserializeOwned>(v: Option<Value>) -> Option<T> {
    v.and_then(|v| serde_json::from_value(v).ok())
}

impl MessageRead {
    pub fn from_json(body: &Value) -> Self {
        let m: Members = serde_json::from_value(body.clone()).unwrap_or_default();
        // A bare §6 Response names its message in `in_reply_to` and is its own Response.
        let bare = m.in_reply_to.is_some() && m.id.is_none();
        let response = if bare { part(Some(body.clone())) } else { part(m.response) };
        MessageRead {
            id: part(if bare { m.in_reply_to } else { m.id }),
            status: part(m.status),
            title: part(m.title),
            review_url: part(m.review_url),
            response,
            push: part(m.push),
            mailbox: part(m.mailbox),
            resolution: part(m.resolution),
        }
    }

    /// The §7 outcome: the Response's resolution, else a top-level `resolution`, else `status`,
    /// else `open`.
    pub fn resolution(&self) -> &str {
        match &self.response {
            Some(r) => r.resolution.as_str(),
            None => self.resolution.as_deref().or(self.status.as_deref()).unwrap_or("open"),
        }
    }

    /// The push track when the push failed for good (§8.2: the Response is still there to pull).
    pub fn failed_push(&self) -> Option<&PushTrackView> {
        self.push.as_ref().filter(|p| p.status == PushStatus::Failed && p.last_error.is_some())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn answered() -> Value {
        json!({"ma2h_version": "0.5", "in_reply_to": "msg_1", "resolution_id": "res_1",
            "agent": {"id": "ci", "run_id": "r1"}, "resolution": "answered", "defaulted": false,
            "response": {"value": "ship", "edited": false, "actor": "human:alice",
                "resolved_at": "2026-06-04T12:00:00Z", "comment": "LGTM"}})
    }

    #[test]
    fn a_get_body_reads_its_response_push_and_mailbox_tracks() {
        let body = json!({"id": "msg_1", "status": "answered", "title": "Ship?", "response": answered(),
            "push": {"status": "failed", "attempts": 5, "last_error": "receiver answered 500",
                "next_attempt_at": null, "delivered_at": null},
            "mailbox": {"state": "bounced", "prior": "delivered"}});
        let m = MessageRead::from_json(&body);
        assert_eq!(m.id.as_deref(), Some("msg_1"));
        assert_eq!(m.resolution(), "answered");
        let detail = m.response.as_ref().unwrap().response.as_ref().unwrap();
        assert_eq!(detail.value, Some(json!("ship")));
        assert_eq!(detail.actor, "human:alice");
        assert_eq!(m.failed_push().unwrap().attempts, 5);
        assert_eq!(m.mailbox.as_ref().unwrap().state.as_str(), "bounced");
        assert_eq!(m.mailbox.as_ref().unwrap().prior.unwrap().as_str(), "delivered");
    }

    #[test]
    fn a_bare_response_and_a_conflict_outcome_read_as_their_resolution() {
        let bare = MessageRead::from_json(&answered());
        assert_eq!((bare.id.as_deref(), bare.resolution()), (Some("msg_1"), "answered"));
        let conflict = MessageRead::from_json(&json!({"id": "msg_2", "status": "expired", "resolution": "expired"}));
        assert_eq!(conflict.resolution(), "expired");
        assert_eq!(MessageRead::from_json(&json!({"id": "msg_3", "status": "open"})).resolution(), "open");
        assert_eq!(MessageRead::from_json(&json!({})).resolution(), "open");
    }

    #[test]
    fn a_part_another_hub_words_differently_is_left_out_and_the_rest_reads() {
        let body = json!({"id": "msg_4", "status": "open", "push": {"status": "warming-up"}, "mailbox": 7,
            "title": "t"});
        let m = MessageRead::from_json(&body);
        assert_eq!((&m.push, &m.mailbox), (&None, &None));
        assert_eq!((m.title.as_deref(), m.resolution()), (Some("t"), "open"));
        // a delivered or pending push is no trouble
        let ok = json!({"id": "m", "status": "answered",
            "push": {"status": "delivered", "attempts": 1, "last_error": null}});
        assert!(MessageRead::from_json(&ok).failed_push().is_none());
    }
}

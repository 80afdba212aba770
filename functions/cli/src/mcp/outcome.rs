//! What a tool tells the model about a message: the §6 outcome of a GET body (or a cancel body)
//! without `state` (§9.3: opaque, never echoed), `client_ref` or anything else the model does
//! not need, plus a `next` line saying what to do. Pure: unit-tested here.

use ma2h_client::MessageRead;
use serde_json::{Map, Value, json};

/// How long an outcome's `next` suggests before calling `wait_for_answer` again.
const POLL_AGAIN: &str = "still open: call wait_for_answer again with the same id (it returns as soon as the human \
                          decides), or do other work and come back; the ask stays open until it is answered, \
                          cancelled or expires";

/// The outcome of a GET body (`status` plus the embedded Response, §6/§8.2) for the model.
pub fn of_body(body: &Value) -> Value {
    of_read(&MessageRead::from_json(body))
}

/// The outcome of a message read for the model: only what it acts on, never `state` (§9.3).
pub fn of_read(read: &MessageRead) -> Value {
    let resolution = read.resolution().to_owned();
    let mut out = Map::new();
    out.insert("id".into(), read.id.clone().unwrap_or_default().into());
    out.insert("outcome".into(), resolution.clone().into());
    if let Some(t) = &read.title {
        out.insert("title".into(), t.as_str().into());
    }
    let mut defaulted = false;
    if let Some(r) = &read.response {
        if let Some(d) = &r.response {
            let mut put = |k: &str, v: Option<Value>| {
                if let Some(v) = v.filter(|v| !v.is_null()) {
                    out.insert(k.into(), v);
                }
            };
            put("value", d.value.clone());
            put("comment", d.comment.clone().map(Value::from));
            put("actor", Some(d.actor.as_str().into()));
            put("resolved_at", Some(d.resolved_at.as_str().into()));
            put("edited", d.edited.map(Value::from));
            put("checklist", d.checklist.as_ref().and_then(|c| serde_json::to_value(c).ok()));
            // issue 40: the answer came from a standing grant / a delegate / a quorum
            put("grant_id", d.grant_id.clone().map(Value::from));
            put("on_behalf_of", d.on_behalf_of.clone().map(Value::from));
            if !d.approvals.is_empty() {
                put("approved_by", Some(d.approvals.iter().map(|a| Value::from(a.actor.as_str())).collect()));
            }
        }
        defaulted = r.defaulted;
        out.insert("defaulted".into(), r.defaulted.into());
        out.insert("resolution_id".into(), r.resolution_id.as_str().into());
    }
    if let Some(u) = &read.review_url {
        out.insert("review_url".into(), u.as_str().into());
    }
    let next = next_step(&resolution, defaulted);
    out.insert("next".into(), next.into());
    Value::Object(out)
}

/// One sentence for the model per §7 outcome. §6: agents SHOULD fail closed on `expired`.
fn next_step(resolution: &str, defaulted: bool) -> &'static str {
    match resolution {
        "open" | "queued" => POLL_AGAIN,
        "answered" => "the human answered: act on `value` (and read `comment`)",
        "completed" => "the human reports the task done: continue (read `comment` and `checklist`)",
        "declined" => "the human declined to decide: do not proceed with the action; ask again differently or stop",
        "dismissed" => "the human dismissed the task: it will not be done; do not assume it was",
        "expired" if defaulted => {
            "nobody answered in time and the ask's default_on_expire applied (actor system:default_on_expire): \
             treat `value` as the default, not as a human decision"
        }
        "expired" => "nobody answered in time and there was no default: do not proceed with a high-impact action",
        "cancelled" => "the ask was withdrawn (by you, or undeliverable): no decision was made",
        _ => "unknown outcome: read it with the Hub's inbox before acting",
    }
}

/// The acknowledgement of a submit for the model: the id, status and review URL — never the
/// idempotency key's secret parts or the API key (there are none in an ack, §8.1).
pub fn of_ack(ack: &ma2h_client::Ack, expects_answer: bool) -> Value {
    let mut v = json!({"id": ack.id, "status": ack.status});
    if let Some(u) = &ack.review_url {
        v["review_url"] = u.as_str().into();
    }
    if let Some(k) = &ack.idempotency_key {
        v["idempotency_key"] = k.as_str().into();
    }
    v["next"] = if expects_answer {
        "filed: call wait_for_answer with this id to get the human's decision (each call waits at most 50 s; \
         call again while it is open)"
    } else {
        "delivered to the human's inbox; no answer will come"
    }
    .into();
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_answered_body_gives_value_actor_and_comment_but_never_state() {
        let body = json!({"id": "msg_1", "status": "answered", "title": "Ship?", "state": {"secret": 1},
            "client_ref": "mine",
            "response": {"ma2h_version": "0.5", "in_reply_to": "msg_1", "resolution": "answered",
                "resolution_id": "res_1", "defaulted": false, "state": {"s": 2},
                "response": {"value": "ship", "actor": "human:alice", "comment": "LGTM", "edited": false,
                    "resolved_at": "2026-06-04T12:00:00Z"}}});
        let o = of_body(&body);
        assert_eq!(o["outcome"], "answered");
        assert_eq!(o["value"], "ship");
        assert_eq!(o["actor"], "human:alice");
        assert_eq!(o["comment"], "LGTM");
        assert_eq!(o["resolution_id"], "res_1");
        let text = o.to_string();
        assert!(!text.contains("secret") && !text.contains("\"s\"") && !text.contains("mine"), "{text}");
    }

    #[test]
    fn an_open_body_says_call_again_and_an_expired_default_is_not_a_human_decision() {
        let o = of_body(&json!({"id": "msg_2", "status": "open"}));
        assert_eq!(o["outcome"], "open");
        assert!(o["next"].as_str().unwrap().contains("call wait_for_answer again"));
        let d = of_body(&json!({"id": "msg_3", "status": "expired", "response": {"ma2h_version": "0.5",
            "in_reply_to": "msg_3", "resolution_id": "res_3", "resolution": "expired", "defaulted": true,
            "response": {"value": "deny", "actor": "system:default_on_expire", "resolved_at": "2026-06-04T12:00:00Z"}}}));
        assert_eq!(d["outcome"], "expired");
        assert_eq!(d["defaulted"], true);
        assert!(d["next"].as_str().unwrap().contains("not as a human decision"));
    }

    #[test]
    fn every_terminal_outcome_has_its_own_next_step() {
        let outcomes = ["answered", "completed", "declined", "dismissed", "expired", "cancelled"];
        let steps: std::collections::HashSet<_> = outcomes.iter().map(|o| next_step(o, false)).collect();
        assert_eq!(steps.len(), outcomes.len());
        assert!(!steps.contains(POLL_AGAIN));
    }
}

//! A message's timeline (issue 39): everything that happened to it, oldest first — submitted,
//! announced per channel (reminders, escalations), each operator's first view, claims, snoozes,
//! the answer, the push, the agent's first read and its acknowledgment. Built from what the
//! Hub already keeps (the record, its notification item, its triage record); nothing is written
//! for it beyond the first view of each operator.

use ma2h_core::channels::outbox::{StepKind, StepStatus};
use ma2h_core::mailbox::inbox::InboxMessage;
use ma2h_core::messages::records::PushStatus;
use ma2h_core::messages::triage::EventKind;
use ma2h_protocol::time::{self, Timestamp};
use maud::{Markup, html};

use super::rows::stamp;

/// One line: when, and what (plain text; the page escapes it).
fn lines(view: &InboxMessage) -> Vec<(Timestamp, String)> {
    let rec = &view.record;
    let mut out = vec![(rec.created_at, format!("submitted by agent {}", rec.agent_id))];
    if let Some(n) = &view.notifications {
        // issue 40: a ladder rung that was skipped, or reached a delegate, says why
        for s in n.steps.iter().filter(|s| s.kind == StepKind::Ladder && s.channel.is_empty()) {
            if let (Some(note), Some(at)) = (&s.last_error, s.done_at) {
                out.push((at, format!("on-call ladder: {note}")));
            }
        }
        for s in n.steps.iter().filter(|s| s.status == StepStatus::Sent && !s.channel.is_empty()) {
            let what = match s.kind {
                StepKind::Created => "announced",
                StepKind::Reminder => "reminder sent",
                StepKind::Escalated => "escalated",
                StepKind::Outcome => "outcome shown",
                StepKind::Ladder => "on call: reached",
            };
            let to = s.recipient.as_deref().map(|r| format!(" to {r}")).unwrap_or_default();
            out.push((s.done_at.unwrap_or(s.due_at), format!("{what} on channel {}{to}", s.channel)));
        }
        for s in n.steps.iter().filter(|s| s.status == StepStatus::Failed && !s.channel.is_empty()) {
            out.push((s.done_at.unwrap_or(s.due_at), format!("channel {} failed", s.channel)));
        }
    }
    if let Some(t) = &view.triage {
        for e in &t.data.events {
            let text = match e.kind {
                EventKind::Viewed => format!("viewed by human:{}", e.by),
                EventKind::Claimed => format!("claimed by human:{}", e.by),
                EventKind::Released => format!("released by human:{}", e.by),
                EventKind::Snoozed => match e.until {
                    Some(u) => format!("snoozed by human:{} until {}", e.by, super::rows::absolute(u)),
                    None => format!("snoozed by human:{}", e.by),
                },
                EventKind::Unsnoozed => format!("woken by human:{}", e.by),
            };
            out.push((e.at, text));
        }
    }
    if let Some(t) = view.triage.as_ref().filter(|_| rec.status.is_open()) {
        for a in &t.data.approvals {
            out.push((a.at, format!("approved by {} (waiting for the quorum)", a.actor)));
        }
    }
    if let Some(resp) = &rec.response {
        let detail = &resp["response"];
        for a in detail["approvals"].as_array().into_iter().flatten() {
            let at = a["approved_at"].as_str().and_then(time::parse);
            if let (Some(at), Some(by)) = (at, a["actor"].as_str()) {
                out.push((at, format!("approved by {by}")));
            }
        }
        let at = detail["resolved_at"].as_str().and_then(time::parse).unwrap_or(rec.updated_at);
        let by = detail["actor"].as_str().unwrap_or("the Hub");
        let how = resp["resolution"].as_str().unwrap_or(rec.status.as_str());
        out.push((at, format!("{how} by {by}")));
    }
    if let Some(p) = &rec.push {
        match (p.status, p.delivered_at) {
            (PushStatus::Delivered, Some(at)) => out.push((at, "pushed to the agent".to_owned())),
            (PushStatus::Failed, _) => {
                out.push((rec.updated_at, "push failed (the agent can still pull it)".to_owned()))
            }
            _ => {}
        }
    }
    if let Some(at) = rec.delivered_at {
        out.push((at, "read by the agent".to_owned()));
    }
    if let Some(ack) = &rec.ack {
        out.push((ack.acked_at, format!("acknowledged by {}", ack.by)));
    }
    out.sort_by_key(|(at, _)| *at);
    out
}

pub fn section(view: &InboxMessage, now: Timestamp) -> Markup {
    html! {
        section.timeline aria-label="Timeline" {
            h2 { "Timeline" }
            ol.timeline {
                @for (at, text) in lines(view) {
                    li { span.when { (stamp(at, now)) } " — " (text) }
                }
            }
        }
    }
}

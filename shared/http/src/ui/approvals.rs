//! The message page's **Approvals** box (issue 40): the policy that gates the ask, how many
//! distinct approvers the same answer needs, and who approved what so far. The answer form
//! stays as it is: each answer is one approval until the last completes the quorum.

use ma2h_core::mailbox::inbox::InboxMessage;
use ma2h_protocol::time::Timestamp;
use maud::{Markup, html};

use super::rows::stamp;

pub fn section(view: &InboxMessage, now: Timestamp) -> Markup {
    let Some(policy) = &view.approval_policy else { return html! {} };
    let pending = view.triage.as_ref().map(|t| t.data.approvals.clone()).unwrap_or_default();
    let label = |v: &serde_json::Value| {
        let raw = v.as_str().map(str::to_owned).unwrap_or_else(|| v.to_string());
        view.envelope.request().map(|r| r.label_of(&raw).to_owned()).unwrap_or(raw)
    };
    html! {
        section.approvals aria-label="Approvals" {
            h2 { "Approvals" }
            p {
                @if policy.approvals > 1 {
                    "Policy " code { (policy.id) } ": the same answer from " strong { (policy.approvals) " different people" }
                    " is needed; each answer is one approval until the last completes it. A decline ends the ask at once."
                } @else {
                    "Policy " code { (policy.id) } " decides who may answer."
                }
                @if let Some(l) = &policy.exclude_label { " The human named in the run's " code { "agent.labels." (l) } " may not answer." }
                @if !policy.exclude.is_empty() { " Never: " (policy.exclude.iter().map(|h| format!("human:{h}")).collect::<Vec<_>>().join(", ")) "." }
            }
            @if !pending.is_empty() {
                ul {
                    @for a in &pending {
                        li { (a.actor) " approved “" (label(&a.value)) "” · " (stamp(a.at, now))
                            @if let Some(c) = &a.comment { " — “" (c) "”" } }
                    }
                }
            }
        }
    }
}

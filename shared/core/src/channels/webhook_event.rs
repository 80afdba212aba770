//! The generic webhook channel (issue 20): a signed JSON event per step — `message.created`,
//! `message.reminder`, `message.escalated`, `message.resolved` — to an operator-configured URL,
//! through the same §9.4 egress guard as pushes, so on-call tooling (PagerDuty, Opsgenie, ntfy…)
//! can be wired without code here.
//!
//! Signature: `MA2H-Signature: t={unix seconds},jti={nonce},v1={base64url HMAC-SHA256}` over the
//! bytes `{t}.{jti}.{raw body}` with the channel's secret — the §9.2 header's shape, so a
//! receiver that verifies pushes verifies events the same way (with another signed string).
//! With a `whsec_` secret (issue 43) each event also carries the Standard Webhooks headers
//! (`webhook-id` = the event id, stable across retries), so an existing verifier library checks it.
//!
//! Never `state`, `client_ref`, the envelope's body, or a sensitive value.

use ma2h_protocol::envelope::Envelope;
use ma2h_protocol::signature::{SigningKey, header_value, sign_canonical};
use ma2h_protocol::standard_webhooks::WebhookSecret;
use ma2h_protocol::time;
use serde_json::{Value, json};

use crate::Hub;
use crate::channels::config::{WebhookChannel, seal_context};
use crate::channels::outbox::{Step, StepKind};
use crate::channels::sender::{Failure, Notifier};
use crate::messages::records::MessageRecord;
use crate::push::queue::PushRequest;

pub(crate) async fn send(
    notifier: &Notifier,
    hub: &Hub,
    hook: &WebhookChannel,
    channel_id: &str,
    step: &Step,
    record: &MessageRecord,
    envelope: &Envelope,
) -> Result<(), Failure> {
    let secret =
        hook.secret.open(&hub.master_key, &seal_context(record.account.as_str(), channel_id, "secret")).ok_or_else(
            || Failure::Permanent("the webhook secret does not open (sealed for another slot or key)".into()),
        )?;
    let body = serde_json::to_vec(&event(hub, step, record, envelope)).unwrap_or_default();
    let now = hub.clock.now().timestamp();
    let t = now.to_string();
    let jti = hub.new_jti();
    let mut signed = format!("{t}.{jti}.").into_bytes();
    signed.extend_from_slice(&body);
    let standard = if hook.standard_webhooks {
        Some(WebhookSecret::parse(&secret).map_err(|e| Failure::Permanent(format!("the webhook secret: {e}")))?)
    } else {
        None
    };
    let v1 = sign_canonical(&signed, &SigningKey::Hmac(secret.into_bytes()));
    let mut headers = vec![("MA2H-Signature".into(), header_value(&t, &jti, &v1))];
    if let Some(standard) = standard {
        let id = event_id(step, record);
        headers.extend(standard.headers(&id, now, &body));
    }
    let request = PushRequest { url: hook.url.clone(), headers, body };
    Failure::from_outcome(notifier.sender.send(&request).await)
}

/// The event's stable id: the same on every retry of one step to one channel.
fn event_id(step: &Step, record: &MessageRecord) -> String {
    // A ladder sends one event per rung to a webhook.
    let step_name = match step.rung.filter(|_| step.kind == StepKind::Ladder) {
        Some(rung) => format!("ladder{rung}"),
        None => step.kind.as_str().to_owned(),
    };
    format!("{}:{step_name}:{}", record.id, step.channel)
}

/// The event body (public: the docs and tests show it).
pub fn event(hub: &Hub, step: &Step, record: &MessageRecord, envelope: &Envelope) -> Value {
    let kind = match step.kind {
        StepKind::Created => "message.created",
        StepKind::Reminder => "message.reminder",
        StepKind::Escalated => "message.escalated",
        StepKind::Outcome => "message.resolved",
        StepKind::Ladder => "message.ladder",
    };
    let mut out = json!({
        "type": kind,
        "event_id": event_id(step, record),
        "occurred_at": time::format(hub.clock.now()),
        "account": record.account.as_str(),
        "message": {
            "id": record.id.as_str(),
            "type": record.kind.as_str(),
            "title": record.title,
            "priority": record.priority.as_str(),
            "agent_id": record.agent_id.as_str(),
            "project": envelope.agent.project,
            "tags": envelope.tags,
            "status": record.status.as_str(),
            "created_at": time::format(record.created_at),
            "expires_at": record.expires_at.map(time::format),
            "review_url": hub.review_url(&record.id),
        },
    });
    if step.kind == StepKind::Ladder {
        // the operator this rung reaches: the receiver pages them (PagerDuty, Opsgenie, …)
        out["ladder"] = json!({
            "rung": step.rung,
            "human": step.recipient.as_deref().map(|h| format!("human:{h}")),
        });
    }
    if step.kind == StepKind::Outcome {
        let response = record.response.as_ref().and_then(|r| r.get("response"));
        let mut outcome = json!({
            "status": record.status.as_str(),
            "actor": response.and_then(|r| r.get("actor")),
            "resolved_at": response.and_then(|r| r.get("resolved_at")),
        });
        if !crate::channels::audience::is_sensitive(envelope)
            && let Some(v) = response.and_then(|r| r.get("value"))
        {
            outcome["value"] = v.clone();
        }
        out["outcome"] = outcome;
    }
    out
}

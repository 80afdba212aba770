//! §14 on the response leg: the submitting agent's read of a terminal Response counts as
//! delivered-to-agent (§14.2), and the agent may then acknowledge it (§14.1) — "got your answer,
//! proceeding". The first ack wins; a repeat returns it.

use ma2h_protocol::envelope::MessageType;
use ma2h_protocol::ids::MessageId;

use crate::kernel::auth::Principal;
use crate::kernel::credentials::PrincipalId;
use crate::mailbox::model::AckRecord;
use crate::messages::lifecycle::load_owned;
use crate::messages::records::MessageRecord;
use crate::{Hub, HubError};

/// A stored Response ack and what it acknowledges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResponseAck {
    pub in_reply_to: MessageId,
    pub resolution_id: Option<String>,
    pub ack: AckRecord,
}

/// Stamp the submitter's first read of a terminal ask/task (one conditional write; later reads,
/// and reads after a 2xx push, write nothing). Returns the record as the reader should see it.
pub async fn stamp_read(hub: &Hub, mut record: MessageRecord) -> Result<MessageRecord, HubError> {
    let stampable =
        !record.status.is_open() && record.kind != MessageType::Notify && record.delivered_to_agent().is_none();
    if stampable {
        record.delivered_at = hub.messages.mark_delivered(&record.account, &record.id, hub.clock.now()).await?;
    }
    Ok(record)
}

/// `POST /v1/messages/{id}/ack` by the submitting agent. Anyone else — an operator, another
/// agent, another account — sees the unknown-id 404. An open message, a notify, or a Response not
/// yet delivered to the agent is 409 `not_acknowledgeable`; a `resolution_id` naming another
/// resolution is 422.
pub async fn ack(
    hub: &Hub,
    principal: &Principal,
    id: &str,
    note: Option<String>,
    resolution_id: Option<&str>,
) -> Result<ResponseAck, HubError> {
    let PrincipalId::Agent(agent) = &principal.id else { return Err(HubError::NotFound) };
    let record = load_owned(hub, &principal.account, agent, id).await?;
    if record.status.is_open() || record.kind == MessageType::Notify {
        return Err(HubError::NotAcknowledgeable(format!("{} has no Response to acknowledge yet", record.id)));
    }
    let stored = record.resolution_id.as_ref().map(|r| r.to_string());
    if let Some(given) = resolution_id
        && stored.as_deref() != Some(given)
    {
        return Err(HubError::invalid_field(format!(
            "`/resolution_id`: {} was resolved as {}",
            record.id,
            stored.unwrap_or_default()
        )));
    }
    let ack = AckRecord { by: format!("agent:{agent}"), acked_at: hub.clock.now(), note };
    match hub.messages.ack_response(&record.account, &record.id, &ack).await? {
        Some(ack) => Ok(ResponseAck { in_reply_to: record.id, resolution_id: stored, ack }),
        None => Err(HubError::NotAcknowledgeable(format!(
            "the Response to {} has not been delivered to the agent yet (read it or receive its push first)",
            record.id
        ))),
    }
}

//! `POST /v1/messages/{id}/cancel` (§8.4): the submitter withdraws an open ask.

use ma2h_protocol::envelope::MessageType;
use ma2h_protocol::lifecycle::Status;
use ma2h_protocol::response::Terminal;

use crate::kernel::auth::Principal;
use crate::kernel::credentials::PrincipalId;
use crate::messages::lifecycle::{already_terminal, apply_terminal, load_owned};
use crate::messages::records::{Completion, MessageRecord};
use crate::{Hub, HubError};

/// 200 `{id, status: "cancelled", response}` — the same body for a repeat cancel.
pub use ma2h_protocol::wire::CancelResult as Cancelled;

pub async fn cancel(hub: &Hub, principal: &Principal, id: &str) -> Result<Cancelled, HubError> {
    // §9.1: only the submitting principal may cancel; anyone else sees the unknown-id 404.
    let PrincipalId::Agent(agent) = &principal.id else {
        return Err(HubError::NotFound);
    };
    // `load_owned` applies lazy expiry first: a cancel strictly after `expires_at` loses to the
    // expiry (§7) and is answered below as a different terminal.
    let record = load_owned(hub, &principal.account, agent, id).await?;
    if record.kind != MessageType::Ask {
        return Err(HubError::validation(format!(
            "only an ask can be cancelled (§8.4); this message is a {}",
            record.kind.as_str()
        )));
    }
    match record.status {
        Status::Cancelled => return Ok(cancelled_body(&record)),
        Status::Open => {}
        _ => return Err(already_terminal(&record)),
    }
    let envelope = record.envelope()?;
    let terminal = Terminal::cancelled(principal.actor(), hub.clock.now(), hub.new_resolution_id());
    match apply_terminal(hub, &record, &envelope, terminal).await? {
        Completion::Applied(rec) => Ok(cancelled_body(&rec)),
        Completion::AlreadyTerminal(rec) if rec.status == Status::Cancelled => Ok(cancelled_body(&rec)),
        Completion::AlreadyTerminal(rec) => Err(already_terminal(&rec)),
        Completion::Missing => Err(HubError::NotFound),
    }
}

fn cancelled_body(rec: &MessageRecord) -> Cancelled {
    Cancelled { id: rec.id.to_string(), status: Status::Cancelled, response: rec.response.clone() }
}

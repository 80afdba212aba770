//! Who a channel may show a message to and who may answer through one: a sensitive message's
//! body never leaves the Hub, and an answer counts only from an operator whose credential is
//! still active.

use ma2h_protocol::envelope::Envelope;
use ma2h_protocol::ids::{AccountId, HumanId};

use crate::kernel::credentials::PrincipalId;
use crate::{Hub, HubError};
use serde_json::Value;

/// Whether anything of the message is marked sensitive (§9.6): then no body and no inline answer.
pub fn is_sensitive(envelope: &Envelope) -> bool {
    envelope.sensitive
        || envelope
            .request()
            .and_then(|r| r.schema.as_ref())
            .and_then(|s| s.get("properties"))
            .and_then(Value::as_object)
            .is_some_and(|props| props.values().any(|p| p.get("x-ma2h-sensitive") == Some(&Value::Bool(true))))
}

/// Whether `human` still holds an active operator credential in `account`: an answer that
/// arrives outside the API (a Slack press, an email link) acts as them only while it does, so
/// revoking their key also revokes their links. Their own credentials only, never a scan of
/// every credential (on DynamoDB a table scan per press, which no function is granted).
pub(crate) async fn operator_active(hub: &Hub, account: &AccountId, human: &HumanId) -> Result<bool, HubError> {
    let now = hub.clock.now();
    let principal = PrincipalId::Operator(human.clone());
    Ok(hub.credentials.credentials_of(account, &principal).await?.iter().any(|c| c.is_active(now)))
}

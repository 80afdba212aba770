//! §9.1 resolver authorization: the one decision both the resolve use case (which enforces it)
//! and the web inbox (which shows the buttons or the reason) read. Sessions will extend it here.

use ma2h_protocol::envelope::{Envelope, MessageType};
use ma2h_protocol::ids::Actor;

use crate::kernel::auth::Principal;
use crate::kernel::credentials::PrincipalId;
use crate::messages::records::MessageRecord;

/// May this principal resolve this message?
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Decision {
    /// Listed in `allowed_resolvers`, or the submitter under the fail-closed default.
    Allowed,
    /// A notify: nothing to resolve.
    NotResolvable,
    /// `allowed_resolvers` does not list the principal.
    NotListed { listed: Vec<String> },
    /// No `allowed_resolvers`: only the submitting agent may (§9.1 fail-closed default).
    SubmitterOnly,
    /// No `allowed_resolvers` on an addressed message: only the addressee may (§9.1 v0.5) — not
    /// the submitter, not the account's human.
    AddresseeOnly,
}

impl Decision {
    /// `actor` is the attested resolving actor — session-qualified when the agent presented a
    /// session (§8.8), which a session-qualified `allowed_resolvers` entry requires (§9.1).
    pub(crate) fn of(record: &MessageRecord, envelope: &Envelope, principal: &Principal, actor: &Actor) -> Self {
        if record.kind == MessageType::Notify {
            return Self::NotResolvable;
        }
        match (envelope.allowed_resolvers(), crate::mailbox::addressed::addressee(envelope)) {
            (Some(list), _) if list.iter().any(|entry| actor.matches_entry(entry)) => Self::Allowed,
            (Some(list), _) => Self::NotListed { listed: list.to_vec() },
            // §9.1: the addressee default behaves like the principal-form entry `agent:<to>`.
            (None, Some(to)) if actor.matches_entry(&format!("agent:{to}")) => Self::Allowed,
            (None, Some(_)) => Self::AddresseeOnly,
            (None, None) if is_submitter(record, principal) => Self::Allowed,
            (None, None) => Self::SubmitterOnly,
        }
    }
}

/// Is the principal the agent that submitted the message?
pub(crate) fn is_submitter(record: &MessageRecord, principal: &Principal) -> bool {
    matches!(&principal.id, PrincipalId::Agent(a) if a == &record.agent_id)
}

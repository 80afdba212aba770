//! What sends a notification step: the HTTP sender (behind the §9.4 egress guard) and the mail
//! sender, and why a step was not sent. The channel adapters ([`crate::channels::email`],
//! [`crate::channels::slack`], [`crate::channels::webhook_event`]) take these; the worker that
//! drives them is [`crate::channels::notify`].

use std::sync::Arc;

use crate::push::queue::{PushOutcome, PushSender};

/// What sends a step: the HTTP sender (behind the §9.4 egress guard) and the channel adapters.
pub struct Notifier {
    pub(crate) sender: Arc<dyn PushSender>,
    pub(crate) mailer: Option<Arc<dyn crate::channels::mailer::MailSender>>,
}

impl Notifier {
    pub fn new(sender: Arc<dyn PushSender>) -> Self {
        Self { sender, mailer: None }
    }

    /// Email channels send through `mailer` (without one, their steps fail visibly).
    pub fn with_mailer(mut self, mailer: Arc<dyn crate::channels::mailer::MailSender>) -> Self {
        self.mailer = Some(mailer);
        self
    }
}

/// Why a step was not sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Failure {
    /// Worth another attempt (5xx, network, rate limited).
    Retry(String),
    /// Never (4xx, refused by the egress guard, a credential that does not open).
    Permanent(String),
}

impl Failure {
    pub(crate) fn from_outcome(outcome: PushOutcome) -> Result<(), Self> {
        match outcome {
            PushOutcome::Delivered { .. } => Ok(()),
            // Slack and most webhook receivers answer 429 when rate limited: retried.
            PushOutcome::Rejected { status: 429 } => Err(Self::Retry("receiver answered 429".into())),
            PushOutcome::Rejected { status } => Err(Self::Permanent(format!("receiver answered {status}"))),
            PushOutcome::Retry { reason } => Err(Self::Retry(reason)),
            PushOutcome::Refused { reason } => Err(Self::Permanent(format!("refused: {reason}"))),
        }
    }
}

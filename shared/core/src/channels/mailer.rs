//! The mail port: one email to send through an SMTP relay.

use async_trait::async_trait;

/// One email to send through an SMTP relay (issue 20's email channel).
#[derive(Clone, PartialEq, Eq)]
pub struct Mail {
    pub host: String,
    pub port: u16,
    pub security: crate::channels::config::SmtpSecurity,
    pub username: Option<String>,
    /// Opened from its sealed form for this send only; never logged.
    pub password: Option<String>,
    pub from: String,
    pub to: String,
    pub subject: String,
    pub text: String,
    pub html: String,
}

impl std::fmt::Debug for Mail {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Mail")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("to", &self.to)
            .finish_non_exhaustive()
    }
}

/// Why a mail was not sent.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum MailError {
    /// Worth another attempt (connection refused, timeout, a 4xx SMTP reply).
    #[error("{0}")]
    Retry(String),
    /// Never (a 5xx SMTP reply, an address that does not parse, TLS refused).
    #[error("{0}")]
    Permanent(String),
}

/// Sends mail (the SMTP adapter; tests record).
#[async_trait]
pub trait MailSender: Send + Sync + 'static {
    async fn send(&self, mail: &Mail) -> Result<(), MailError>;
}

//! # ma2h-delivery-smtp
//!
//! [`SmtpMailer`]: the [`MailSender`] port over SMTP with `lettre` (rustls on `ring`, the
//! project's one TLS stack; webpki trust roots). One connection per mail — notification mails
//! are few — with a bounded timeout; implicit TLS, required STARTTLS, or plain text for a relay on
//! the same host. A 4xx reply or a network failure is retried by the outbox; a 5xx is not.
//! Never logs the password or the body.

use std::time::Duration;

use async_trait::async_trait;
use lettre::message::{Mailbox, MultiPart};
use lettre::transport::smtp::authentication::Credentials;
use lettre::{AsyncSmtpTransport, AsyncTransport, Message, Tokio1Executor};
use ma2h_core::channels::config::SmtpSecurity;
use ma2h_core::ports::{Mail, MailError, MailSender};

/// How long one SMTP exchange may take.
const TIMEOUT: Duration = Duration::from_secs(15);

#[derive(Debug, Default, Clone, Copy)]
pub struct SmtpMailer;

fn build(mail: &Mail) -> Result<Message, MailError> {
    let parse = |what: &str, a: &str| {
        a.parse::<Mailbox>().map_err(|e| MailError::Permanent(format!("{what} address does not parse: {e}")))
    };
    Message::builder()
        .from(parse("from", &mail.from)?)
        .to(parse("to", &mail.to)?)
        .subject(mail.subject.clone())
        .multipart(MultiPart::alternative_plain_html(mail.text.clone(), mail.html.clone()))
        .map_err(|e| MailError::Permanent(format!("the mail could not be built: {e}")))
}

fn transport(mail: &Mail) -> Result<AsyncSmtpTransport<Tokio1Executor>, MailError> {
    let tls = |e: lettre::transport::smtp::Error| MailError::Permanent(format!("smtp tls setup: {e}"));
    let builder = match mail.security {
        SmtpSecurity::Tls => AsyncSmtpTransport::<Tokio1Executor>::relay(&mail.host).map_err(tls)?,
        SmtpSecurity::Starttls => AsyncSmtpTransport::<Tokio1Executor>::starttls_relay(&mail.host).map_err(tls)?,
        SmtpSecurity::None => AsyncSmtpTransport::<Tokio1Executor>::builder_dangerous(&mail.host),
    };
    let mut builder = builder.port(mail.port).timeout(Some(TIMEOUT));
    if let (Some(user), Some(password)) = (&mail.username, &mail.password) {
        builder = builder.credentials(Credentials::new(user.clone(), password.clone()));
    }
    Ok(builder.build())
}

#[async_trait]
impl MailSender for SmtpMailer {
    async fn send(&self, mail: &Mail) -> Result<(), MailError> {
        let message = build(mail)?;
        let result = transport(mail)?.send(message).await;
        match result {
            Ok(response) if response.is_positive() => {
                tracing::info!(host = %mail.host, "notification mail sent");
                Ok(())
            }
            Ok(response) => Err(MailError::Retry(format!("smtp answered {}", response.code()))),
            Err(e) if e.is_permanent() => Err(MailError::Permanent(format!("smtp refused: {}", short(&e)))),
            Err(e) => Err(MailError::Retry(format!("smtp: {}", short(&e)))),
        }
    }
}

/// The error's own words, without the message text it may quote.
fn short(e: &lettre::transport::smtp::Error) -> String {
    let s = e.to_string();
    s.chars().take(160).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mail(to: &str) -> Mail {
        Mail {
            host: "127.0.0.1".into(),
            port: 1,
            security: SmtpSecurity::None,
            username: None,
            password: Some("pw".into()),
            from: "Hub <hub@example.com>".into(),
            to: to.into(),
            subject: "s".into(),
            text: "t".into(),
            html: "<p>h</p>".into(),
        }
    }

    #[test]
    fn an_address_that_does_not_parse_is_permanent_and_a_good_mail_has_both_parts() {
        assert!(matches!(build(&mail("not an address")), Err(MailError::Permanent(_))));
        let built = String::from_utf8(build(&mail("alice@example.com")).unwrap().formatted()).unwrap();
        assert!(built.contains("multipart/alternative") && built.contains("text/html"), "{built}");
        assert!(!format!("{:?}", mail("a@b.c")).contains("pw"), "the password never prints");
    }

    #[tokio::test]
    async fn a_refused_connection_is_retried() {
        assert!(matches!(SmtpMailer.send(&mail("alice@example.com")).await, Err(MailError::Retry(_))));
    }
}

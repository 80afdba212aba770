//! The email channel (issue 20): one mail per recipient operator with, for a confirm/select ask,
//! one answer link per option — and the two steps that link takes.
//!
//! A link is `{public_url}/a/{token}`, a single-use answer token
//! ([`crate::channels::answer_token`]) bound to one message, one option and the operator the mail
//! was for. **`GET` only shows a confirmation page** (corporate link scanners fetch every link in
//! a mail, so a fetch must never answer); **`POST` applies the answer** through the §8.8 resolve
//! use case as that operator and burns the token, so a link answers at most once.

use ma2h_protocol::envelope::{Envelope, Verb};
use ma2h_protocol::time;
use serde_json::Value;

use crate::Hub;
use crate::channels::answer_token::{self, Purpose};
pub use crate::channels::answer_token::{Applied, LinkError, LinkView};
use crate::channels::config::{EmailChannel, seal_context};
use crate::channels::mailer::{Mail, MailError};
use crate::channels::outbox::{Step, StepKind};
use crate::channels::sender::{Failure, Notifier};
use crate::messages::records::MessageRecord;

/// Send one step's mail to its recipient.
pub(crate) async fn send(
    notifier: &Notifier,
    hub: &Hub,
    channel: &EmailChannel,
    channel_id: &str,
    step: &Step,
    record: &MessageRecord,
    envelope: &Envelope,
) -> Result<(), Failure> {
    let Some(mailer) = &notifier.mailer else {
        return Err(Failure::Permanent("this process has no mail sender".into()));
    };
    let human = step.recipient.as_deref().ok_or_else(|| Failure::Permanent("no recipient".into()))?;
    let to = channel
        .recipients
        .get(human)
        .ok_or_else(|| Failure::Permanent(format!("human:{human} is no longer a recipient")))?;
    let password = match &channel.password {
        Some(p) => Some(
            p.open(&hub.master_key, &seal_context(record.account.as_str(), channel_id, "password"))
                .ok_or_else(|| Failure::Permanent("the SMTP password does not open".into()))?,
        ),
        None => None,
    };
    let (subject, text, html) = compose(hub, record, envelope, step.kind, human);
    let mail = Mail {
        host: channel.smtp_host.clone(),
        port: channel.smtp_port,
        security: channel.security,
        username: channel.username.clone(),
        password,
        from: channel.from.clone(),
        to: to.clone(),
        subject,
        text,
        html,
    };
    mailer.send(&mail).await.map_err(|e| match e {
        MailError::Retry(r) => Failure::Retry(r),
        MailError::Permanent(r) => Failure::Permanent(r),
    })
}

/// The answer links of a mail for `human`: `(label, url)` per option, when the ask takes an
/// inline answer (confirm/select, answering allowed, nothing sensitive).
pub fn answer_links(hub: &Hub, record: &MessageRecord, envelope: &Envelope, human: &str) -> Vec<(String, String)> {
    answer_token::mint(hub, Purpose::Mail, record, envelope, human)
        .into_iter()
        .map(|a| (a.label, format!("{}/a/{}", hub.settings.public_url, a.token)))
        .collect()
}

/// "in 2 h 10 min (2026-12-04 10:00 UTC)": relative for deciding, absolute to plan by (issue 39).
fn when(t: time::Timestamp, now: time::Timestamp) -> String {
    let span = crate::kernel::display::human_duration(t - now);
    let rel = if t >= now { format!("in {span}") } else { format!("{span} ago") };
    format!("{rel} ({})", t.format("%Y-%m-%d %H:%M UTC"))
}

fn esc(s: &str) -> String {
    s.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;").replace('"', "&quot;")
}

/// Subject, plain text and HTML of a step's mail (public: the docs' screenshot renders it).
pub fn compose(
    hub: &Hub,
    record: &MessageRecord,
    envelope: &Envelope,
    kind: StepKind,
    human: &str,
) -> (String, String, String) {
    let lead = match kind {
        StepKind::Reminder => "Reminder: ",
        StepKind::Escalated => "Escalated: ",
        StepKind::Ladder => "On call: ",
        _ => "",
    };
    let subject = format!("[{}] {lead}{}", record.priority.as_str(), record.title);
    let body = if crate::channels::audience::is_sensitive(envelope) {
        "(Sensitive content: open it in the inbox.)".to_owned()
    } else {
        let body = envelope.raw.get("body").and_then(Value::as_str).map(str::to_owned);
        let instructions = match &envelope.verb {
            Verb::Task(a) => Some(a.instructions.clone()),
            _ => None,
        };
        body.or(instructions).unwrap_or_default()
    };
    let expires = record.expires_at.map(|e| format!("Expires {}.", when(e, hub.clock.now()))).unwrap_or_default();
    let links = answer_links(hub, record, envelope, human);
    let review = hub.review_url(&record.id);
    let mut text = format!(
        "{lead}{} ({}) from agent {} is waiting for an answer. {expires}\n\n{body}\n\n",
        record.title,
        record.kind.as_str(),
        record.agent_id
    );
    for (label, url) in &links {
        text.push_str(&format!("Answer \"{label}\": {url}\n"));
    }
    text.push_str(&format!(
        "Open in the inbox: {review}\n\nEach answer link asks you to confirm before it answers, and works once.\n"
    ));
    let buttons: String = links
        .iter()
        .map(|(label, url)| {
            format!(
                r#"<a href="{}" style="display:inline-block;margin:0 8px 8px 0;padding:10px 16px;background:#0b5cad;color:#fff;text-decoration:none;border-radius:6px;font-weight:600">{}</a>"#,
                esc(url),
                esc(label)
            )
        })
        .collect();
    let html = format!(
        r#"<!doctype html><html><body style="font-family:system-ui,-apple-system,Segoe UI,sans-serif;color:#1d1d1f;max-width:640px;margin:24px auto;padding:0 16px">
<p style="color:#555;margin:0 0 4px">{lead}<strong>{priority}</strong> · {kind} from <code>{agent}</code>{project}</p>
<h1 style="font-size:22px;margin:0 0 12px">{title}</h1>
<div style="border-left:3px solid #ddd;padding-left:12px;margin:0 0 16px">{body}</div>
<p style="color:#555">{expires}</p>
<p>{buttons}<a href="{review}" style="display:inline-block;padding:10px 16px;border:1px solid #0b5cad;color:#0b5cad;text-decoration:none;border-radius:6px">Open in inbox</a></p>
<p style="color:#777;font-size:13px">Each answer link asks you to confirm before it answers, and works once. It acts as <code>human:{human}</code>.</p>
</body></html>"#,
        lead = esc(lead),
        priority = esc(record.priority.as_str()),
        kind = esc(record.kind.as_str()),
        agent = esc(record.agent_id.as_str()),
        project = envelope
            .agent
            .project
            .as_deref()
            .map(|p| format!(" · project <code>{}</code>", esc(p)))
            .unwrap_or_default(),
        title = esc(&record.title),
        // Issue 39: the body as the inbox renders it (the same sanitized Markdown profile, §9.6),
        // never raw `**Markdown**`; the text part keeps the Markdown source, which reads as text.
        body = ma2h_render::render(&body),
        expires = esc(&expires),
        review = esc(&review),
        human = esc(human),
    );
    // Bidi controls in agent text are shown, not obeyed, in every part (`display`).
    let shown = |s: String| crate::kernel::display::visible_bidi(&s).into_owned();
    (shown(subject), shown(text), shown(html))
}

/// What a link stands for, read without changing anything (the GET page).
/// `GET /a/{token}`: what the link would do. Changes nothing.
pub async fn view_link(hub: &Hub, token: &str) -> Result<LinkView, LinkError> {
    answer_token::view(hub, Purpose::Mail, token).await
}

/// `POST /a/{token}`: burn the link, then resolve as its operator.
pub async fn apply_link(hub: &Hub, token: &str) -> Result<Applied, LinkError> {
    answer_token::apply(hub, Purpose::Mail, token).await
}

#[cfg(test)]
mod tests {
    use ma2h_protocol::time;

    #[test]
    fn html_escaping_covers_attribute_quotes() {
        assert_eq!(super::esc(r#"<a href="x">&"#), "&lt;a href=&quot;x&quot;&gt;&amp;");
    }

    #[test]
    fn a_mail_says_when_in_words_and_in_utc() {
        let now = time::parse("2026-12-04T08:00:00Z").unwrap();
        let at = time::parse("2026-12-04T10:10:00Z").unwrap();
        assert_eq!(super::when(at, now), "in 2 h 10 min (2026-12-04 10:10 UTC)");
        assert_eq!(super::when(now, at), "2 h 10 min ago (2026-12-04 08:00 UTC)");
    }
}

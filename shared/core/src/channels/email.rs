//! The email channel (issue 20): one mail per recipient operator with, for a confirm/select ask,
//! one answer link per option — and the two steps that link takes.
//!
//! A link is `{public_url}/a/{token}`, the token an AEAD-sealed `{account, message, option,
//! human, expiry, nonce}` under the master key: unforgeable, bound to one message, one option and
//! the operator the mail was for. **`GET` only shows a confirmation page** (corporate link
//! scanners fetch every link in a mail, so a fetch must never answer); **`POST` applies the
//! answer** through the §8.8 resolve use case as that operator — §9.1 resolver rules and §7 first
//! terminal wins exactly as in the inbox — and burns the nonce, so a link answers at most once.

use base64::Engine as _;
use ma2h_protocol::envelope::{Envelope, Mode, Verb};
use ma2h_protocol::ids::{AccountId, HumanId, MessageId};
use ma2h_protocol::time;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

use crate::channels::config::{EmailChannel, seal_context};
use crate::channels::mailer::{Mail, MailError};
use crate::channels::outbox::{Step, StepKind};
use crate::channels::sender::{Failure, Notifier};
use crate::kernel::auth::Principal;
use crate::kernel::credentials::PrincipalId;
use crate::messages::records::{Lookup, MessageRecord};
use crate::{Hub, HubError};

/// The sealing context of answer links (a token sealed for anything else does not open).
const CONTEXT: &str = "mail-answer/v1";
/// A link of an ask without `expires_at` stays valid this long.
const DEFAULT_LIFETIME: chrono::Duration = chrono::Duration::days(7);

#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Token {
    a: String,
    m: String,
    o: String,
    h: String,
    /// Expiry, ms since the epoch.
    e: i64,
    n: String,
}

fn seal_token(hub: &Hub, t: &Token) -> String {
    let plain = serde_json::to_vec(t).unwrap_or_default();
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(hub.master_key.seal(hub.random.as_ref(), CONTEXT, &plain))
}

fn open_token(hub: &Hub, token: &str) -> Option<Token> {
    if token.len() > 2048 {
        return None;
    }
    let sealed = base64::engine::general_purpose::URL_SAFE_NO_PAD.decode(token).ok()?;
    serde_json::from_slice(&hub.master_key.open(CONTEXT, &sealed).ok()?).ok()
}

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
    let Some(request) = envelope.request() else { return vec![] };
    if !matches!(request.mode, Mode::Confirm | Mode::Select)
        || !request.permissions.allow_respond
        || crate::channels::audience::is_sensitive(envelope)
    {
        return vec![];
    }
    let expiry = record.expires_at.unwrap_or(record.created_at + DEFAULT_LIFETIME);
    request
        .options
        .iter()
        .take(20)
        .map(|o| {
            let mut nonce = [0u8; 16];
            hub.random.fill(&mut nonce);
            let token = Token {
                a: record.account.to_string(),
                m: record.id.to_string(),
                o: o.value.clone(),
                h: human.to_owned(),
                e: expiry.timestamp_millis(),
                n: hex::encode(nonce),
            };
            (o.label.clone(), format!("{}/a/{}", hub.settings.public_url, seal_token(hub, &token)))
        })
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
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LinkView {
    pub message_id: String,
    pub title: String,
    pub option_label: String,
    pub option_value: String,
    pub human: String,
    /// The message's status now (`open`, or how it ended).
    pub status: String,
    /// This link was already used.
    pub used: bool,
}

/// Why a link cannot be shown or used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LinkError {
    /// Not a token this Hub sealed (or damaged).
    Invalid,
    /// Past its expiry.
    Expired,
    /// The message was purged.
    Gone,
    /// The store could not be read or written: try again.
    Unavailable,
}

async fn read_link(hub: &Hub, token: &str) -> Result<(Token, MessageRecord, LinkView), LinkError> {
    let t = open_token(hub, token).ok_or(LinkError::Invalid)?;
    let now = hub.clock.now();
    if now.timestamp_millis() > t.e {
        return Err(LinkError::Expired);
    }
    let account = AccountId::parse(&t.a).ok_or(LinkError::Invalid)?;
    let id = MessageId::parse(&t.m).ok_or(LinkError::Invalid)?;
    let record = match hub.lookup(&account, &id).await {
        Ok(Lookup::Found(r)) => r,
        Ok(_) => return Err(LinkError::Gone),
        Err(e) => {
            tracing::error!(error = %e, "answer link: the message could not be read");
            return Err(LinkError::Unavailable);
        }
    };
    let label = record
        .envelope()
        .ok()
        .and_then(|e| e.request().map(|r| r.label_of(&t.o).to_owned()))
        .unwrap_or_else(|| t.o.clone());
    let used = hub.messages.read_counter(&nonce_key(&t), now).await.unwrap_or(0) > 0;
    let view = LinkView {
        message_id: t.m.clone(),
        title: record.title.clone(),
        option_label: label,
        option_value: t.o.clone(),
        human: t.h.clone(),
        status: record.status.as_str().to_owned(),
        used,
    };
    Ok((t, record, view))
}

fn nonce_key(t: &Token) -> String {
    format!("mail-link/{}", t.n)
}

/// `GET /a/{token}`: what the link would do. Changes nothing.
pub async fn view_link(hub: &Hub, token: &str) -> Result<LinkView, LinkError> {
    read_link(hub, token).await.map(|(_, _, v)| v)
}

/// What a `POST /a/{token}` came to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Applied {
    Answered(LinkView),
    /// This link already answered (or was already used for an attempt).
    AlreadyUsed(LinkView),
    /// §8.8 refused it (already terminal, not an allowed resolver, …): the reason.
    Refused(LinkView, String),
}

/// `POST /a/{token}`: burn the link, then resolve as its operator.
pub async fn apply_link(hub: &Hub, token: &str) -> Result<Applied, LinkError> {
    let (t, record, view) = read_link(hub, token).await?;
    let now = hub.clock.now();
    let expiry = time::from_millis(t.e) + chrono::Duration::days(1);
    let uses = hub.messages.incr_counter(&nonce_key(&t), expiry, now).await.map_err(|e| {
        tracing::error!(error = %e, "answer link: the nonce could not be burnt");
        LinkError::Unavailable
    })?;
    if uses > 1 {
        return Ok(Applied::AlreadyUsed(LinkView { used: true, ..view }));
    }
    let Some(human) = HumanId::parse(&t.h) else { return Err(LinkError::Invalid) };
    // A link acts as its recipient only while they are still a recipient of one of the account's
    // email channels and still hold an active operator credential: removing either revokes it.
    let still = async {
        let policy = hub.credentials.get_account_policy(&record.account).await?.unwrap_or_default();
        let recipient = policy.channels.channels.values().any(|c| match c {
            crate::channels::config::Channel::Email(m) => m.recipients.contains_key(human.as_str()),
            _ => false,
        });
        Ok::<bool, HubError>(
            recipient && crate::channels::audience::operator_active(hub, &record.account, &human).await?,
        )
    };
    match still.await {
        Ok(true) => {}
        Ok(false) => {
            return Ok(Applied::Refused(
                LinkView { used: true, ..view },
                format!("human:{human} can no longer answer from email"),
            ));
        }
        Err(e) => {
            tracing::error!(error = %e, "answer link: the recipient could not be checked");
            return Err(LinkError::Unavailable);
        }
    }
    crate::decisions::presence::seen(hub, &record.account, &human).await; // issue 40: activity
    let principal = Principal {
        account: record.account.clone(),
        id: PrincipalId::Operator(human.clone()),
        credential_id: "email-link".into(),
    };
    let body = serde_json::to_vec(&json!({"resolution": "answered", "value": t.o})).unwrap_or_default();
    let view = LinkView { used: true, ..view };
    Ok(match crate::messages::resolve::resolve_outcome(hub, &principal, None, record.id.as_str(), &body).await {
        Ok(crate::messages::resolve::Outcome::Pending(p)) => {
            tracing::info!(message_id = %record.id, human = %human, "approval from an email link");
            let status =
                format!("approved ({} of {}; sent when the quorum is complete)", p.approvals.len(), p.required);
            Applied::Answered(LinkView { status, ..view })
        }
        Ok(_) => {
            tracing::info!(message_id = %record.id, human = %human, "answered from an email link");
            Applied::Answered(LinkView { status: "answered".into(), ..view })
        }
        Err(HubError::AlreadyTerminal { status, .. }) => {
            Applied::Refused(view, format!("it is already {}", status.as_str()))
        }
        Err(HubError::NotAuthorized(why)) => Applied::Refused(view, why),
        Err(HubError::Protocol(e)) => Applied::Refused(view, e.to_string()),
        Err(HubError::NotFound | HubError::Gone) => return Err(LinkError::Gone),
        Err(e) => {
            tracing::error!(error = %e, "answer link: resolve failed");
            Applied::Refused(view, "the Hub could not record the answer; try the inbox".into())
        }
    })
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

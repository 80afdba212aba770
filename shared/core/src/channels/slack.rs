//! Slack (issue 20): the Block Kit posts (announcement, reminder, escalation, outcome) sent by
//! the notification worker through Slack's Web API, and the interactions a button press sends
//! back — verified with the app's signing secret and applied through the §8.8 resolve use case as
//! the linked operator (§9.1 resolver rules exactly as in the inbox; §7 first terminal wins).
//!
//! No `state`, no `client_ref`, ever; a `sensitive` message shows no body and no inline answers.

use ma2h_protocol::envelope::{Envelope, Mode, Verb};
use ma2h_protocol::ids::{AccountId, HumanId, MessageId};
use ma2h_protocol::signature::{SigningKey, sign_canonical_raw};
use ma2h_protocol::time::{self, Timestamp};
use serde_json::{Value, json};

use crate::channels::audience::{is_sensitive, operator_active};
use crate::channels::config::{SlackChannel, seal_context};
use crate::channels::outbox::{Step, StepKind};
use crate::channels::sender::{Failure, Notifier};
use crate::kernel::auth::Principal;
use crate::kernel::credentials::PrincipalId;
use crate::messages::records::MessageRecord;
use crate::push::queue::PushRequest;
use crate::{Hub, HubError};

/// The `action_id` prefix of an answer button; its value is `{message id} {option value}`.
pub const ANSWER_ACTION: &str = "ma2h_answer";
/// The "Open in inbox" link button (Slack reports its presses too; nothing to do).
pub const OPEN_ACTION: &str = "ma2h_open";
/// The longest an ephemeral reply may hold the interaction's answer (Slack waits 3 s).
const REPLY_TIMEOUT: std::time::Duration = std::time::Duration::from_millis(1500);
/// Slack's replay window for signed requests.
pub const MAX_SKEW_SECS: i64 = 300;

/// Where a step's post goes beside its channel.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Post<'a> {
    /// The announcement's `{channel} {ts}`: reminders and ladder mentions reply in its thread.
    pub parent: Option<&'a str>,
    /// The Slack user a ladder step mentions.
    pub mention: Option<&'a str>,
}

#[allow(clippy::too_many_arguments)]
/// Send one step to a Slack channel; `Ok(Some("{channel} {ts}"))` for a post to update later.
pub(crate) async fn send(
    notifier: &Notifier,
    hub: &Hub,
    slack: &SlackChannel,
    channel_id: &str,
    step: &Step,
    post: Post<'_>,
    record: &MessageRecord,
    envelope: &Envelope,
) -> Result<Option<String>, Failure> {
    let parent = post.parent;
    let token = slack
        .bot_token
        .open(&hub.master_key, &seal_context(record.account.as_str(), channel_id, "bot_token"))
        .ok_or_else(|| Failure::Permanent("the bot token does not open (sealed for another slot or key)".into()))?;
    let (method, body) = match step.kind {
        StepKind::Created | StepKind::Escalated => {
            let blocks = post_blocks(hub, record, envelope, step.kind == StepKind::Escalated, true);
            (
                "chat.postMessage",
                json!({"channel": slack.channel, "text": fallback(record, step.kind), "blocks": blocks}),
            )
        }
        StepKind::Reminder | StepKind::Ladder => {
            let expires = record.expires_at.map(|e| format!(" — expires {}", slack_date(e))).unwrap_or_default();
            let text = match (step.kind, post.mention) {
                // the user id is ours (an administrator's link), never message text
                (StepKind::Ladder, Some(user)) => format!(
                    ":rotating_light: <@{}>, you are on call for this one: *{}*{expires}",
                    user.chars().filter(char::is_ascii_alphanumeric).collect::<String>(),
                    escape(&record.title)
                ),
                _ => format!(":hourglass: Still waiting for an answer: *{}*{expires}", escape(&record.title)),
            };
            let mut body = json!({"channel": slack.channel, "text": text});
            match parent.and_then(split_ref) {
                Some((_, ts)) => body["thread_ts"] = json!(ts),
                // no announcement to reply to: a post of its own, without answer buttons (it is
                // not updated with the outcome, so it must not keep buttons that go stale)
                None => body["blocks"] = json!(post_blocks(hub, record, envelope, false, false)),
            }
            ("chat.postMessage", body)
        }
        StepKind::Outcome => {
            let Some((channel, ts)) = step.external_ref.as_deref().and_then(split_ref) else {
                return Err(Failure::Permanent("no post to update".into()));
            };
            let blocks = outcome_blocks(hub, record, envelope);
            (
                "chat.update",
                json!({"channel": channel, "ts": ts, "text": fallback(record, step.kind), "blocks": blocks}),
            )
        }
    };
    let request = PushRequest {
        url: format!("{}/{method}", hub.settings.channels.slack_api_url),
        headers: vec![("Authorization".into(), format!("Bearer {token}"))],
        // Plain-text fields (the header, button labels) skip `escape`: bidi controls are made
        // visible over the whole body (`display`; the marker needs no JSON escaping).
        body: crate::kernel::display::visible_bidi(&body.to_string()).into_owned().into_bytes(),
    };
    let (outcome, reply) = notifier.sender.send_reading(&request).await;
    Failure::from_outcome(outcome)?;
    // The Web API answers 200 with `{"ok": false, "error": …}` when it refuses.
    let reply: Value = serde_json::from_slice(&reply).unwrap_or(Value::Null);
    if reply.get("ok") != Some(&Value::Bool(true)) {
        let error = reply.get("error").and_then(Value::as_str).unwrap_or("malformed reply").to_owned();
        let error: String = error.chars().filter(|c| c.is_ascii_graphic()).take(80).collect();
        return Err(if error == "ratelimited" || error == "internal_error" {
            Failure::Retry(format!("slack: {error}"))
        } else {
            Failure::Permanent(format!("slack: {error}"))
        });
    }
    Ok(match (reply.get("channel").and_then(Value::as_str), reply.get("ts").and_then(Value::as_str)) {
        (Some(c), Some(ts)) if step.kind != StepKind::Outcome => Some(format!("{c} {ts}")),
        _ => None,
    })
}

fn split_ref(r: &str) -> Option<(&str, &str)> {
    r.split_once(' ')
}

/// The notification text (also what Slack shows in alerts): escaped like every other text.
fn fallback(record: &MessageRecord, kind: StepKind) -> String {
    let title = escape(&record.title);
    match kind {
        StepKind::Outcome => format!("{title} — {}", record.status.as_str()),
        StepKind::Escalated => format!("Escalated: {title}"),
        _ => format!("{} is waiting: {title}", escape(record.agent_id.as_str())),
    }
}

/// Escape Slack's control characters (`&`, `<`, `>`), so a title or body can neither mention
/// `@channel` nor forge a link.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;").replace('<', "&lt;").replace('>', "&gt;")
}

fn clip(text: &str, max: usize) -> String {
    if text.chars().count() <= max {
        return text.to_owned();
    }
    let mut out: String = text.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

fn slack_date(t: Timestamp) -> String {
    format!("<!date^{}^{{date_short_pretty}} {{time}}|{}>", t.timestamp(), time::format(t))
}

/// The text shown for the message: the `body`, or a task's instructions.
fn body_text(envelope: &Envelope) -> Option<String> {
    if is_sensitive(envelope) {
        return Some("_Sensitive content — open it in the inbox._".into());
    }
    let body = envelope.raw.get("body").and_then(Value::as_str).map(str::to_owned);
    let instructions = match &envelope.verb {
        Verb::Task(a) => Some(a.instructions.clone()),
        _ => None,
    };
    body.or(instructions).filter(|t| !t.trim().is_empty()).map(|t| clip(&escape(&t), 2900))
}

fn header(record: &MessageRecord, envelope: &Envelope, escalated: bool) -> Vec<Value> {
    let title = if escalated { format!("⏰ {}", record.title) } else { record.title.clone() };
    let mut context = format!(
        "*{}* · {} from `{}`",
        record.priority.as_str(),
        record.kind.as_str(),
        escape(record.agent_id.as_str())
    );
    if let Some(project) = &envelope.agent.project {
        context.push_str(&format!(" · project `{}`", escape(project)));
    }
    if let Some(e) = record.expires_at {
        context.push_str(&format!(" · expires {}", slack_date(e)));
    }
    if escalated {
        context.push_str(" · *escalated*: little time is left");
    }
    let mut blocks = vec![
        json!({"type": "header", "text": {"type": "plain_text", "text": clip(&title, 150)}}),
        json!({"type": "context", "elements": [{"type": "mrkdwn", "text": context}]}),
    ];
    if let Some(text) = body_text(envelope) {
        blocks.push(json!({"type": "section", "text": {"type": "mrkdwn", "text": text}}));
    }
    blocks
}

/// The announcement: header, context, body, and the answer buttons (confirm/select asks that
/// allow an answer and carry nothing sensitive) beside an "Open in inbox" link.
pub fn post_blocks(
    hub: &Hub,
    record: &MessageRecord,
    envelope: &Envelope,
    escalated: bool,
    answers: bool,
) -> Vec<Value> {
    let mut blocks = header(record, envelope, escalated);
    let mut buttons = Vec::new();
    if let Some(request) = envelope.request().filter(|_| answers)
        && matches!(request.mode, Mode::Confirm | Mode::Select)
        && request.permissions.allow_respond
        && !is_sensitive(envelope)
    {
        for (i, option) in request.options.iter().take(20).enumerate() {
            let mut b = json!({
                "type": "button",
                "action_id": format!("{ANSWER_ACTION}_{i}"),
                "text": {"type": "plain_text", "text": clip(&option.label, 75)},
                "value": format!("{} {}", record.id, option.value),
            });
            if i == 0 {
                b["style"] = json!("primary");
            }
            buttons.push(b);
        }
    }
    buttons.push(json!({
        "type": "button",
        "action_id": OPEN_ACTION,
        "text": {"type": "plain_text", "text": "Open in inbox"},
        "url": hub.review_url(&record.id),
    }));
    blocks.push(json!({"type": "actions", "block_id": "ma2h_actions", "elements": buttons}));
    blocks
}

/// The outcome: the same header and body, the buttons replaced by who decided what, and when.
pub fn outcome_blocks(hub: &Hub, record: &MessageRecord, envelope: &Envelope) -> Vec<Value> {
    let mut blocks = header(record, envelope, false);
    let response = record.response.as_ref().and_then(|r| r.get("response"));
    let actor = response.and_then(|r| r.get("actor")).and_then(Value::as_str).unwrap_or("the Hub");
    let value = response.and_then(|r| r.get("value")).filter(|_| !is_sensitive(envelope)).map(|v| {
        match (v, envelope.request()) {
            (Value::String(s), Some(req)) => format!(" `{}`", escape(req.label_of(s))),
            (other, _) => format!(" `{}`", clip(&escape(&other.to_string()), 200)),
        }
    });
    let mark = match record.status.as_str() {
        "answered" | "completed" => ":white_check_mark:",
        "expired" => ":hourglass:",
        _ => ":no_entry_sign:",
    };
    let when = record.updated_at;
    let text = format!(
        "{mark} *{}*{} by `{}` at {}",
        record.status.as_str(),
        value.unwrap_or_default(),
        escape(actor),
        slack_date(when)
    );
    blocks.push(json!({"type": "section", "text": {"type": "mrkdwn", "text": text}}));
    blocks.push(json!({"type": "context", "elements": [{"type": "mrkdwn", "text": format!("<{}|Open in inbox>", hub.review_url(&record.id))}]}));
    blocks
}

/// What an interaction came to (the route answers 200 for every verified request, as Slack
/// expects; the person learns the rest from an ephemeral reply).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Interaction {
    /// Not an answer button (the inbox link, another app's action): nothing to do.
    Ignored,
    /// The Slack user has no link to an operator: nothing was resolved.
    Unlinked,
    /// Resolved through §8.8 as this operator.
    Resolved { id: String, by: String },
    /// Refused by §8.8 (already terminal, not an allowed resolver, an invalid value…).
    Refused { id: String, reason: String },
    /// Issue 40: recorded as one approval of a quorum; `have` of `need` so far.
    Approved { id: String, have: usize, need: u8 },
}

impl Interaction {
    /// The ephemeral text the pressing user sees, if any.
    pub fn reply(&self) -> Option<String> {
        match self {
            Self::Ignored => None,
            Self::Unlinked => Some(
                "Your Slack account is not linked to a Hub operator, so nothing was answered. Ask an \
                 administrator to run `ma2h-hub admin channels link-slack`."
                    .into(),
            ),
            Self::Resolved { by, .. } => Some(format!("Answered as `{by}`.")),
            Self::Refused { reason, .. } => Some(format!("Not answered: {reason}")),
            Self::Approved { have, need, .. } => Some(format!(
                "Your approval is recorded ({have} of {need}); the answer is sent when the quorum is complete."
            )),
        }
    }
}

/// A Slack interaction request, verified: the interaction's JSON payload.
///
/// Verification (Slack's request signing): `X-Slack-Signature` = `v0=` hex HMAC-SHA256 over
/// `v0:{X-Slack-Request-Timestamp}:{raw body}` with the signing secret of one of the account's
/// Slack channels, compared in constant time; the timestamp within [`MAX_SKEW_SECS`] of the Hub
/// clock; and each signature accepted once (a replay is refused).
pub async fn verify(
    hub: &Hub,
    account: &AccountId,
    timestamp: Option<&str>,
    signature: Option<&str>,
    body: &[u8],
) -> Result<Value, HubError> {
    let (Some(timestamp), Some(signature)) = (timestamp, signature) else { return Err(HubError::Unauthenticated) };
    let now = hub.clock.now();
    let ts: i64 = timestamp.parse().map_err(|_| HubError::Unauthenticated)?;
    if now.timestamp().abs_diff(ts) > MAX_SKEW_SECS.unsigned_abs() {
        return Err(HubError::Unauthenticated);
    }
    // Read, not cached: an unauthenticated caller chooses `account`, and must not fill (or
    // flush) the cache the submit path relies on.
    let policy = hub.credentials.get_account_policy(account).await?.unwrap_or_default();
    let mut signed = format!("v0:{timestamp}:").into_bytes();
    signed.extend_from_slice(body);
    let verified = policy.channels.channels.iter().any(|(id, channel)| match channel {
        crate::channels::config::Channel::Slack(s) => s
            .signing_secret
            .open(&hub.master_key, &seal_context(account.as_str(), id, "signing_secret"))
            .is_some_and(|secret| signature_matches(&secret, &signed, signature)),
        _ => false,
    });
    if !verified {
        return Err(HubError::Unauthenticated);
    }
    // Each signed request once: a captured request replayed within the window is refused. The
    // key is the MAC itself (hex case or spelling cannot make a replay look new).
    let mac = signature.strip_prefix("v0=").and_then(|h| hex::decode(h).ok()).unwrap_or_default();
    let expiry = ma2h_protocol::time::from_millis((ts.saturating_add(MAX_SKEW_SECS + 60)).saturating_mul(1000));
    if hub.messages.incr_counter(&format!("slack-seen/{}", hex::encode(mac)), expiry, now).await? > 1 {
        return Err(HubError::Unauthenticated);
    }
    let payload = url::form_urlencoded::parse(body).find(|(k, _)| k == "payload").map(|(_, v)| v.into_owned());
    payload
        .and_then(|p| serde_json::from_str(&p).ok())
        .filter(Value::is_object)
        .ok_or_else(|| HubError::validation("`payload`: missing or not a JSON object"))
}

/// Apply a verified interaction's payload: what it came to, and where to reply (`response_url`).
pub async fn apply_payload(
    hub: &Hub,
    account: &AccountId,
    payload: &Value,
) -> Result<(Interaction, Option<String>), HubError> {
    let policy = crate::channels::schedule::config(hub, account).await?;
    let response_url = payload.get("response_url").and_then(Value::as_str).map(str::to_owned);
    let outcome = apply(hub, account, &policy.channels, payload).await?;
    Ok((outcome, response_url))
}

/// A Slack interaction request: verify it, then apply it here or hand it to the queue.
/// `Ok(None)`: the queue took it (its consumer applies it and replies).
pub async fn interaction(
    hub: &Hub,
    account: &AccountId,
    timestamp: Option<&str>,
    signature: Option<&str>,
    body: &[u8],
) -> Result<Option<(Interaction, Option<String>)>, HubError> {
    let payload = verify(hub, account, timestamp, signature, body).await?;
    match hub.push_queue.defer_interaction(account, &payload.to_string()).await {
        Ok(true) => return Ok(None),
        Ok(false) => {}
        Err(e) => tracing::warn!(error = %e, "slack interaction not queued; applied inline"),
    }
    apply_payload(hub, account, &payload).await.map(Some)
}

fn signature_matches(secret: &str, signed: &[u8], presented: &str) -> bool {
    use subtle::ConstantTimeEq as _;
    let Some(hex_sig) = presented.strip_prefix("v0=") else { return false };
    let Ok(presented) = hex::decode(hex_sig) else { return false };
    let expected = sign_canonical_raw(signed, &SigningKey::Hmac(secret.as_bytes().to_vec()));
    expected.ct_eq(&presented).into()
}

async fn apply(
    hub: &Hub,
    account: &AccountId,
    config: &crate::channels::config::ChannelsConfig,
    payload: &Value,
) -> Result<Interaction, HubError> {
    let str_at = |ptr: &str| payload.pointer(ptr).and_then(Value::as_str);
    let Some(action) = payload.pointer("/actions/0") else { return Ok(Interaction::Ignored) };
    let action_id = action.get("action_id").and_then(Value::as_str).unwrap_or_default();
    if !action_id.starts_with(ANSWER_ACTION) {
        return Ok(Interaction::Ignored);
    }
    let Some((id, value)) = action.get("value").and_then(Value::as_str).and_then(|v| v.split_once(' ')) else {
        return Ok(Interaction::Ignored);
    };
    let team = str_at("/team/id").or_else(|| str_at("/user/team_id")).unwrap_or_default();
    let user = str_at("/user/id").unwrap_or_default();
    // The actor comes from the link, never from the payload (§9.1: Hub-attested).
    let Some(human) = config.slack_links.get(&format!("{team}:{user}")).and_then(|h| HumanId::parse(h)) else {
        return Ok(Interaction::Unlinked);
    };
    // The link carries the operator's rights only while they still hold them.
    if !operator_active(hub, account, &human).await? {
        return Ok(Interaction::Refused {
            id: id.to_owned(),
            reason: format!("human:{human} has no active Hub credential"),
        });
    }
    // issue 40: a press is activity (presence for on-call ladders)
    crate::decisions::presence::seen(hub, account, &human).await;
    let principal = Principal {
        account: account.clone(),
        id: PrincipalId::Operator(human.clone()),
        credential_id: format!("slack:{team}:{user}"),
    };
    let body = serde_json::to_vec(&json!({"resolution": "answered", "value": value})).unwrap_or_default();
    let Some(message) = MessageId::parse(id) else { return Ok(Interaction::Ignored) };
    Ok(match crate::messages::resolve::resolve_outcome(hub, &principal, None, message.as_str(), &body).await {
        Ok(crate::messages::resolve::Outcome::Pending(p)) => {
            Interaction::Approved { id: id.to_owned(), have: p.approvals.len(), need: p.required }
        }
        Ok(_) => Interaction::Resolved { id: id.to_owned(), by: format!("human:{human}") },
        Err(HubError::AlreadyTerminal { status, .. }) => {
            Interaction::Refused { id: id.to_owned(), reason: format!("it is already {}", status.as_str()) }
        }
        Err(HubError::NotAuthorized(why)) => Interaction::Refused { id: id.to_owned(), reason: why },
        Err(e @ HubError::PasskeyRequired { .. }) => Interaction::Refused { id: id.to_owned(), reason: e.to_string() },
        Err(HubError::NotFound | HubError::Gone) => {
            Interaction::Refused { id: id.to_owned(), reason: "the message no longer exists".into() }
        }
        Err(HubError::Protocol(e)) => Interaction::Refused { id: id.to_owned(), reason: e.to_string() },
        Err(e) => return Err(e),
    })
}

/// Tell the pressing user what happened (Slack's `response_url`, ephemeral). Best effort.
pub async fn reply(hub: &Hub, response_url: &str, text: &str) {
    match hub.outbound.clone() {
        Some(sender) => reply_via(sender.as_ref(), response_url, text).await,
        None => tracing::info!("no outbound sender in this process; the Slack reply is not sent"),
    }
}

/// [`reply`] through `sender` (the `deliver` function's, for a queued interaction).
pub async fn reply_via(sender: &dyn crate::push::queue::PushSender, response_url: &str, text: &str) {
    let body = json!({"response_type": "ephemeral", "replace_original": false, "text": text});
    let request = PushRequest {
        url: response_url.to_owned(),
        headers: Vec::new(),
        body: crate::kernel::display::visible_bidi(&body.to_string()).into_owned().into_bytes(),
    };
    match tokio::time::timeout(REPLY_TIMEOUT, sender.send_reading(&request)).await {
        Ok((outcome, _)) => {
            if let Err(e) = Failure::from_outcome(outcome) {
                tracing::warn!(error = ?e, "slack ephemeral reply not delivered");
            }
        }
        Err(_) => tracing::warn!("slack ephemeral reply timed out"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaping_defuses_mentions_and_links() {
        assert_eq!(escape("<!channel> & <http://x|y>"), "&lt;!channel&gt; &amp; &lt;http://x|y&gt;");
    }

    #[test]
    fn a_signature_matches_only_its_secret_and_bytes() {
        let signed = b"v0:1531420618:token=xyz";
        let mac = sign_canonical_raw(signed, &SigningKey::Hmac(b"s3cret".to_vec()));
        let header = format!("v0={}", hex::encode(mac));
        assert!(signature_matches("s3cret", signed, &header));
        assert!(!signature_matches("other", signed, &header));
        assert!(!signature_matches("s3cret", b"v0:1531420618:token=xyZ", &header));
        assert!(!signature_matches("s3cret", signed, header.trim_start_matches("v0=")));
        assert!(!signature_matches("s3cret", signed, "v0=zz"));
    }
}

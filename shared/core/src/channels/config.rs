//! Channels: where the Hub tells a human that an agent is waiting (issue 20) — a Slack channel or
//! a generic signed webhook — and the per-account routes that pick them.
//!
//! Configuration is data: one [`ChannelsConfig`] per account, kept inside the account's
//! versioned policy document (every edit a compare-and-set, as `inter_agent`). Credentials (a
//! Slack bot token and signing secret, a webhook's HMAC secret) are stored sealed under the
//! master key, bound to their slot, and never shown back.
//!
//! Nothing on the wire changes (spec §2: a human is never assumed online): an answer given in
//! Slack goes through the §8.8 resolve use case as the linked operator, first terminal wins (§7).

use std::collections::BTreeMap;

use ma2h_protocol::envelope::{Envelope, MessageType, Priority};
use serde::{Deserialize, Serialize};

use crate::kernel::secrets::MasterKey;

/// Most channels and routes per account.
pub const MAX_CHANNELS: usize = 50;
pub const MAX_ROUTES: usize = 100;
/// Most targets on one route (each is one outbox step per message).
pub const MAX_TARGETS: usize = 5;
/// Most rungs on one route's ladder.
pub const MAX_RUNGS: usize = 5;

/// The account's channels, routes and Slack user links.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ChannelsConfig {
    /// Channel id (`[a-z0-9-]`, chosen by the operator) → channel.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub channels: BTreeMap<String, Channel>,
    /// Tried in order: the first route that matches a message decides where it is announced.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub routes: Vec<Route>,
    /// `{team id}:{user id}` → the operator (`human:<id>` without the prefix) that Slack user acts
    /// as. Written by an administrator; an unlinked Slack user can answer nothing.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub slack_links: BTreeMap<String, String>,
}

impl ChannelsConfig {
    pub fn is_empty(&self) -> bool {
        self.channels.is_empty() && self.routes.is_empty() && self.slack_links.is_empty()
    }

    /// The first route matching an ask/task (notifies are never announced: nothing waits on them).
    pub fn route_for(&self, envelope: &Envelope) -> Option<&Route> {
        if envelope.kind() == MessageType::Notify {
            return None;
        }
        self.routes.iter().find(|r| r.matches(envelope))
    }

    /// The Slack channel whose workspace is `team`, if any (interactions are verified with its
    /// signing secret).
    pub fn slack_channels<'a>(&'a self, team: &'a str) -> impl Iterator<Item = (&'a String, &'a SlackChannel)> + 'a {
        self.channels.iter().filter_map(move |(id, c)| match c {
            Channel::Slack(s) if s.team_id == team => Some((id, s)),
            _ => None,
        })
    }
}

/// One channel.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum Channel {
    Slack(SlackChannel),
    Webhook(WebhookChannel),
    Email(EmailChannel),
    Webpush(WebpushChannel),
}

impl Channel {
    pub fn kind(&self) -> &'static str {
        match self {
            Self::Slack(_) => "slack",
            Self::Webhook(_) => "webhook",
            Self::Email(_) => "email",
            Self::Webpush(_) => "webpush",
        }
    }
}

/// Email through an SMTP relay: one mail per recipient operator, with one single-use answer link
/// per option (bound to that operator) for confirm/select asks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct EmailChannel {
    pub smtp_host: String,
    pub smtp_port: u16,
    pub security: SmtpSecurity,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub username: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub password: Option<Sealed>,
    /// The sender address (`Hub <hub@example.com>`).
    pub from: String,
    /// Operator (human id without `human:`) → their address. Links in a mail act as that operator.
    pub recipients: BTreeMap<String, String>,
}

/// Web Push (issue 41): a notification on every device each recipient operator subscribed from
/// the inbox ([`crate::channels::webpush`]).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebpushChannel {
    /// The operators (ids without `human:`) notified.
    pub recipients: Vec<String>,
}

/// How the SMTP connection is secured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SmtpSecurity {
    /// Implicit TLS (port 465).
    Tls,
    /// STARTTLS required (port 587).
    Starttls,
    /// Plain text: only for a relay on the same host or network (and tests).
    None,
}

impl SmtpSecurity {
    pub fn parse(s: &str) -> Option<Self> {
        match s {
            "tls" => Some(Self::Tls),
            "starttls" => Some(Self::Starttls),
            "none" => Some(Self::None),
            _ => None,
        }
    }
}

/// A Slack channel posted to by a Slack app's bot.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SlackChannel {
    /// The workspace (`T…`): interactions from it are verified with this channel's signing secret.
    pub team_id: String,
    /// The conversation id (`C…`) the bot posts to.
    pub channel: String,
    pub bot_token: Sealed,
    pub signing_secret: Sealed,
}

/// A generic signed webhook (PagerDuty, Opsgenie, ntfy, … wired by the operator).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct WebhookChannel {
    pub url: String,
    /// The HMAC-SHA256 key of the `MA2H-Signature` header on every event.
    pub secret: Sealed,
    /// The secret is a Standard Webhooks one (`whsec_…`, issue 43): every event also carries
    /// `webhook-id`, `webhook-timestamp` and `webhook-signature`.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub standard_webhooks: bool,
}

/// A value sealed under the master key (base64 of nonce ‖ ciphertext). Never printed.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Sealed(String);

impl std::fmt::Debug for Sealed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Sealed(…)")
    }
}

impl Sealed {
    /// Seal `plaintext` for the slot `context` (`channel/{account}/{channel id}/{field}`).
    pub fn seal(key: &MasterKey, random: &dyn crate::kernel::clock::Random, context: &str, plaintext: &str) -> Self {
        use base64::Engine as _;
        Self(base64::engine::general_purpose::STANDARD.encode(key.seal(random, context, plaintext.as_bytes())))
    }

    /// The plaintext, or `None` if this value was not sealed for `context` under `key`.
    pub fn open(&self, key: &MasterKey, context: &str) -> Option<String> {
        use base64::Engine as _;
        let bytes = base64::engine::general_purpose::STANDARD.decode(&self.0).ok()?;
        String::from_utf8(key.open(context, &bytes).ok()?).ok()
    }
}

/// The slot a channel credential is sealed for: a sealed value moved to another account,
/// channel or field does not open.
pub fn seal_context(account: &str, channel: &str, field: &str) -> String {
    format!("channel/{account}/{channel}/{field}")
}

/// Which messages a route announces, where, and when it reminds and escalates.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Route {
    pub id: String,
    /// Which messages it announces (stored as the route's own members).
    #[serde(flatten)]
    pub filter: MessageFilter,
    /// Channel ids announced to when the message arrives.
    pub targets: Vec<String>,
    /// Post a reminder to the targets after this many minutes unanswered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remind_after_minutes: Option<u32>,
    /// Channel ids told when the message is near its `expires_at` (escalation).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub escalate: Vec<String>,
    /// Escalate when this percentage of the message's lifetime is left (default 20).
    #[serde(default = "default_escalate_percent")]
    pub escalate_percent_left: u8,
    /// An on-call ladder (issue 40): operators (ids without `human:`) reached one after another
    /// while the message stays open — see [`crate::channels::ladder`].
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ladder: Vec<String>,
    /// Minutes each rung is given before the next is reached (default 15).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ladder_minutes: Option<u32>,
    /// An operator not active in the inbox or a channel for this many minutes is offline, and
    /// skipped (default 60).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub offline_minutes: Option<u32>,
}

fn default_escalate_percent() -> u8 {
    20
}

impl Route {
    /// Minutes a rung is given before the next.
    pub fn rung_minutes(&self) -> u32 {
        self.ladder_minutes.unwrap_or(15)
    }

    /// Minutes without activity after which an operator is offline.
    pub fn offline_after(&self) -> u32 {
        self.offline_minutes.unwrap_or(60)
    }

    pub fn matches(&self, envelope: &Envelope) -> bool {
        self.filter.matches(envelope)
    }
}

/// Which messages a route or an approval policy is for: this agent, this `agent.project`, this
/// tag, this priority or a more urgent one, only sensitive ones — each unset matches any. The one rule both match by.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct MessageFilter {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub project: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub min_priority: Option<Priority>,
    /// Issue 41: only sensitive messages (§9.6).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub sensitive: bool,
}

impl MessageFilter {
    pub fn matches(&self, envelope: &Envelope) -> bool {
        self.agent.as_deref().is_none_or(|a| a == envelope.agent.id.as_str())
            && self.project.as_deref().is_none_or(|p| envelope.agent.project.as_deref() == Some(p))
            && self.tag.as_deref().is_none_or(|t| envelope.tags.iter().any(|x| x == t))
            && self.min_priority.is_none_or(|p| envelope.priority >= p)
            && (!self.sensitive || envelope.sensitive)
    }

    /// In words, as the inbox lists it: "agent ci, #prod, high or above" (or "everything").
    pub fn describe(&self) -> String {
        let parts: Vec<String> = [
            self.agent.as_ref().map(|a| format!("agent {a}")),
            self.project.as_ref().map(|p| format!("project {p}")),
            self.tag.as_ref().map(|t| format!("#{t}")),
            self.min_priority.map(|p| format!("{} or above", p.as_str())),
            self.sensitive.then(|| "sensitive".to_owned()),
        ]
        .into_iter()
        .flatten()
        .collect();
        if parts.is_empty() { "everything".to_owned() } else { parts.join(", ") }
    }
}

/// A channel or route id: 1–64 of `[a-z0-9-]`.
pub fn valid_id(id: &str) -> bool {
    !id.is_empty() && id.len() <= 64 && id.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn ask(extra: serde_json::Value) -> Envelope {
        let mut v = json!({"ma2h_version":"0.5","type":"ask","title":"Deploy?","agent":{"id":"ci","run_id":"r1","project":"web","runtime":"cli"},"created_at":"2026-06-04T12:00:00Z","idempotency_key":"k",
            "request":{"mode":"confirm"},"expires_at":"2099-01-01T00:00:00Z"});
        for (k, x) in extra.as_object().unwrap() {
            v[k] = x.clone();
        }
        Envelope::from_value(v).unwrap()
    }

    fn route(id: &str) -> Route {
        serde_json::from_value(json!({"id": id, "targets": ["ops"]})).unwrap()
    }

    #[test]
    fn the_first_matching_route_wins_and_notifies_are_never_routed() {
        let mut only_high = route("high");
        only_high.filter.min_priority = Some(Priority::High);
        let mut tagged = route("tagged");
        tagged.filter.tag = Some("prod".into());
        let config = ChannelsConfig { routes: vec![only_high, tagged, route("rest")], ..Default::default() };
        assert_eq!(config.route_for(&ask(json!({"priority":"urgent"}))).unwrap().id, "high");
        assert_eq!(config.route_for(&ask(json!({"tags":["prod"]}))).unwrap().id, "tagged");
        assert_eq!(config.route_for(&ask(json!({}))).unwrap().id, "rest");
        let notify = Envelope::from_value(json!({"ma2h_version":"0.5","type":"notify","title":"t","agent":{"id":"ci","run_id":"r","runtime":"cli"},"created_at":"2026-06-04T12:00:00Z"}))
            .unwrap();
        assert!(config.route_for(&notify).is_none());
        assert_eq!(route("x").escalate_percent_left, 20);
    }

    #[test]
    fn agent_and_project_filters_compare_exactly() {
        let mut r = route("r");
        r.filter.agent = Some("ci".into());
        r.filter.project = Some("web".into());
        assert!(r.matches(&ask(json!({}))));
        r.filter.project = Some("api".into());
        assert!(!r.matches(&ask(json!({}))));
    }

    #[test]
    fn a_sealed_value_opens_only_in_its_own_slot_and_never_prints() {
        let key = MasterKey::from_bytes([7; 32]);
        let sealed =
            Sealed::seal(&key, &crate::kernel::clock::OsRandom, &seal_context("acme", "ops", "bot_token"), "xoxb-1");
        assert_eq!(sealed.open(&key, &seal_context("acme", "ops", "bot_token")).as_deref(), Some("xoxb-1"));
        assert_eq!(sealed.open(&key, &seal_context("acme", "ops", "signing_secret")), None);
        assert_eq!(sealed.open(&key, &seal_context("other", "ops", "bot_token")), None);
        assert!(!format!("{sealed:?}").contains(&sealed.0));
    }

    #[test]
    fn ids_are_short_lowercase_slugs() {
        assert!(valid_id("ops-alerts-2"));
        assert!(!valid_id(""));
        assert!(!valid_id("Ops"));
        assert!(!valid_id("a/b"));
        assert!(!valid_id(&"a".repeat(65)));
    }
}

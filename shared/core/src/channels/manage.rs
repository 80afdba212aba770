//! Administration of an account's channels, routes and Slack links (issue 20): `ma2h-hub admin
//! channels …` and the `admin` Lambda call these. Each edit is a compare-and-set on the account's
//! policy document (as the inter-agent policy), so concurrent edits never lose one; credentials
//! are sealed before they are stored and never returned.

use ma2h_protocol::envelope::Priority;
use ma2h_protocol::ids::{AccountId, HumanId};
use serde_json::{Value, json};

use crate::channels::config::{
    Channel, ChannelsConfig, EmailChannel, MAX_CHANNELS, MAX_ROUTES, MAX_TARGETS, Route, Sealed, SlackChannel,
    SmtpSecurity, WebhookChannel, seal_context, valid_id,
};
use crate::kernel::settings::Mode;
use crate::{Hub, HubError};

fn account_id(account: &str) -> Result<AccountId, HubError> {
    AccountId::parse(account).ok_or_else(|| HubError::validation("not a valid account id"))
}

fn check_id(what: &str, id: &str) -> Result<(), HubError> {
    if valid_id(id) {
        Ok(())
    } else {
        Err(HubError::validation(format!("{what} `{id}`: use 1–64 of a-z, 0-9 and -")))
    }
}

/// Apply `edit` to the account's channels configuration under the policy's compare-and-set
/// (the one account-policy edit: `decisions::manage::edit_policy`).
async fn edit(
    hub: &Hub,
    account: &AccountId,
    event: crate::audit::Event,
    mut edit: impl FnMut(&mut ChannelsConfig) -> Result<(), HubError>,
) -> Result<ChannelsConfig, HubError> {
    let policy = crate::decisions::manage::edit_policy(hub, account, event, |p| edit(&mut p.channels)).await?;
    Ok(policy.channels)
}

fn seal(hub: &Hub, account: &AccountId, channel: &str, field: &str, value: &str) -> Result<Sealed, HubError> {
    if value.trim().is_empty() {
        return Err(HubError::validation(format!("`{field}` must not be empty")));
    }
    Ok(Sealed::seal(&hub.master_key, hub.random.as_ref(), &seal_context(account.as_str(), channel, field), value))
}

fn insert_channel(config: &mut ChannelsConfig, id: &str, channel: Channel) -> Result<(), HubError> {
    if !config.channels.contains_key(id) && config.channels.len() >= MAX_CHANNELS {
        return Err(HubError::validation(format!("at most {MAX_CHANNELS} channels per account")));
    }
    config.channels.insert(id.to_owned(), channel);
    Ok(())
}

/// Add (or replace) a Slack channel: the workspace, the conversation, the app's bot token and
/// its signing secret.
// (the acting principal, the account and the channel's six fields: each a distinct string)
#[allow(clippy::too_many_arguments)]
pub async fn put_slack(
    hub: &Hub,
    by: &str,
    account: &str,
    id: &str,
    team_id: &str,
    channel: &str,
    bot_token: &str,
    signing_secret: &str,
) -> Result<Value, HubError> {
    let account = account_id(account)?;
    check_id("channel", id)?;
    let slack_id = |what: &str, v: &str| {
        if !v.is_empty() && v.len() <= 32 && v.bytes().all(|b| b.is_ascii_alphanumeric()) {
            Ok(())
        } else {
            Err(HubError::validation(format!("`{what}`: a Slack id such as T0123ABCD / C0123ABCD")))
        }
    };
    slack_id("team", team_id)?;
    slack_id("channel", channel)?;
    let slack = SlackChannel {
        team_id: team_id.to_owned(),
        channel: channel.to_owned(),
        bot_token: seal(hub, &account, id, "bot_token", bot_token)?,
        signing_secret: seal(hub, &account, id, "signing_secret", signing_secret)?,
    };
    let config = edit(
        hub,
        &account,
        crate::audit::Event::new("channel.changed", by).target(format!("channel:{id}")).detail("action", "put"),
        |c| insert_channel(c, id, Channel::Slack(slack.clone())),
    )
    .await?;
    Ok(show_config(&config))
}

/// Add (or replace) a generic webhook channel. Its URL is checked like a push callback's (§9.4:
/// https outside dev mode, no credentials in it); the egress guard checks it again at every send.
/// A `whsec_` secret (issue 43) must be a valid Standard Webhooks one: its events then also carry
/// the Standard Webhooks headers.
pub async fn put_webhook(
    hub: &Hub,
    by: &str,
    account: &str,
    id: &str,
    url: &str,
    secret: &str,
) -> Result<Value, HubError> {
    let account = account_id(account)?;
    check_id("channel", id)?;
    let parsed = url::Url::parse(url).map_err(|_| HubError::validation("`url`: not a URL"))?;
    let https = parsed.scheme() == "https";
    if !(https || (parsed.scheme() == "http" && hub.settings.mode == Mode::Dev)) {
        return Err(HubError::validation("`url`: must be https (http only in dev mode)"));
    }
    if !parsed.username().is_empty() || parsed.password().is_some() || parsed.host_str().is_none() {
        return Err(HubError::validation("`url`: needs a host and no credentials"));
    }
    let standard_webhooks = secret.starts_with(ma2h_protocol::standard_webhooks::PREFIX);
    if standard_webhooks {
        ma2h_protocol::standard_webhooks::WebhookSecret::parse(secret)
            .map_err(|e| HubError::validation(format!("`secret`: {e}")))?;
    } else if secret.is_empty() {
        return Err(HubError::validation("`secret`: must not be empty"));
    }
    let secret = seal(hub, &account, id, "secret", secret)?;
    let hook = WebhookChannel { url: parsed.to_string(), secret, standard_webhooks };
    let config = edit(
        hub,
        &account,
        crate::audit::Event::new("channel.changed", by).target(format!("channel:{id}")).detail("action", "put"),
        |c| insert_channel(c, id, Channel::Webhook(hook.clone())),
    )
    .await?;
    Ok(show_config(&config))
}

/// What an email channel is given from the command line.
#[derive(Debug, Clone, Default)]
pub struct EmailSpec {
    pub id: String,
    pub smtp_host: String,
    pub smtp_port: u16,
    /// `tls`, `starttls` or `none`.
    pub security: String,
    pub username: Option<String>,
    pub password: Option<String>,
    pub from: String,
    /// `(human id, address)`: each recipient's mails act as that operator.
    pub recipients: Vec<(String, String)>,
}

fn plausible_address(a: &str) -> bool {
    let bare = a.rsplit_once('<').map_or(a, |(_, rest)| rest.trim_end_matches('>'));
    let Some((local, domain)) = bare.trim().split_once('@') else { return false };
    !local.is_empty() && domain.contains('.') || domain == "localhost" && !local.is_empty()
}

/// Add (or replace) an email channel: an SMTP relay and the operators it mails.
pub async fn put_email(hub: &Hub, by: &str, account: &str, spec: EmailSpec) -> Result<Value, HubError> {
    let account = account_id(account)?;
    check_id("channel", &spec.id)?;
    let security =
        SmtpSecurity::parse(&spec.security).ok_or_else(|| HubError::validation("`security`: tls, starttls or none"))?;
    if security == SmtpSecurity::None
        && hub.settings.mode != Mode::Dev
        && !matches!(spec.smtp_host.as_str(), "localhost" | "127.0.0.1" | "::1")
    {
        return Err(HubError::validation("`security`: none is only for a relay on this host (or dev mode)"));
    }
    if spec.smtp_host.is_empty() || spec.smtp_host.contains(['/', ' ', '@']) || spec.smtp_port == 0 {
        return Err(HubError::validation("`smtp_host`/`smtp_port`: a host name and a port"));
    }
    if !plausible_address(&spec.from) {
        return Err(HubError::validation("`from`: an address such as `Hub <hub@example.com>`"));
    }
    if spec.recipients.is_empty() || spec.recipients.len() > 50 {
        return Err(HubError::validation("an email channel needs 1–50 recipients (`human=address`)"));
    }
    let mut recipients = std::collections::BTreeMap::new();
    for (human, address) in &spec.recipients {
        let human = HumanId::parse(human.strip_prefix("human:").unwrap_or(human))
            .ok_or_else(|| HubError::validation(format!("`{human}`: not a human id")))?;
        if !plausible_address(address) || address.contains(['\r', '\n', ',']) {
            return Err(HubError::validation(format!("`{address}`: not an email address")));
        }
        recipients.insert(human.to_string(), address.clone());
    }
    let password = match spec.password.as_deref().filter(|p| !p.is_empty()) {
        Some(p) => Some(seal(hub, &account, &spec.id, "password", p)?),
        None => None,
    };
    let channel = EmailChannel {
        smtp_host: spec.smtp_host.clone(),
        smtp_port: spec.smtp_port,
        security,
        username: spec.username.clone().filter(|u| !u.is_empty()),
        password,
        from: spec.from.clone(),
        recipients,
    };
    let event =
        crate::audit::Event::new("channel.changed", by).target(format!("channel:{}", spec.id)).detail("action", "put");
    let config = edit(hub, &account, event, |c| insert_channel(c, &spec.id, Channel::Email(channel.clone()))).await?;
    Ok(show_config(&config))
}

/// Add (or replace) a Web Push channel (issue 41): the operators notified on their subscribed
/// devices.
pub async fn put_webpush(
    hub: &Hub,
    by: &str,
    account: &str,
    id: &str,
    recipients: &[String],
) -> Result<Value, HubError> {
    let account = account_id(account)?;
    check_id("channel", id)?;
    if recipients.is_empty() || recipients.len() > 50 {
        return Err(HubError::validation("a Web Push channel needs 1–50 recipients (operator ids)"));
    }
    let mut humans: Vec<String> = Vec::new();
    for r in recipients {
        let r = r.trim();
        let human = HumanId::parse(r.strip_prefix("human:").unwrap_or(r))
            .ok_or_else(|| HubError::validation(format!("`{r}`: not a human id")))?;
        if !humans.contains(&human.to_string()) {
            humans.push(human.to_string());
        }
    }
    let channel = crate::channels::config::WebpushChannel { recipients: humans };
    let config = edit(
        hub,
        &account,
        crate::audit::Event::new("channel.changed", by).target(format!("channel:{id}")).detail("action", "put"),
        |c| insert_channel(c, id, Channel::Webpush(channel.clone())),
    )
    .await?;
    Ok(show_config(&config))
}

/// Remove a channel (refused while a route names it).
pub async fn remove_channel(hub: &Hub, by: &str, account: &str, id: &str) -> Result<Value, HubError> {
    let account = account_id(account)?;
    let config = edit(
        hub,
        &account,
        crate::audit::Event::new("channel.changed", by).target(format!("channel:{id}")).detail("action", "removed"),
        |c| {
            if let Some(r) = c.routes.iter().find(|r| r.targets.iter().chain(&r.escalate).any(|t| t == id)) {
                return Err(HubError::validation(format!("route `{}` uses channel `{id}`: remove it first", r.id)));
            }
            c.channels.remove(id).map(|_| ()).ok_or(HubError::NotFound)
        },
    )
    .await?;
    Ok(show_config(&config))
}

/// What a route is given from the command line or the API.
#[derive(Debug, Clone, Default)]
pub struct RouteSpec {
    pub id: String,
    pub agent: Option<String>,
    pub project: Option<String>,
    pub tag: Option<String>,
    pub min_priority: Option<String>,
    pub targets: Vec<String>,
    pub remind_after_minutes: Option<u32>,
    pub escalate: Vec<String>,
    pub escalate_percent_left: Option<u8>,
    /// Operators (`alice` or `human:alice`) reached one after another (issue 40).
    pub ladder: Vec<String>,
    pub ladder_minutes: Option<u32>,
    pub offline_minutes: Option<u32>,
}

/// A ladder's operators as stored (ids without `human:`), checked.
fn ladder_of(spec: &RouteSpec) -> Result<Vec<String>, HubError> {
    let mut out: Vec<String> = Vec::new();
    for entry in &spec.ladder {
        let entry = entry.trim();
        let id = ma2h_protocol::ids::HumanId::parse(entry.strip_prefix("human:").unwrap_or(entry))
            .ok_or_else(|| HubError::validation(format!("`ladder`: `{entry}` is not an operator id")))?;
        if out.iter().any(|h| h == id.as_str()) {
            return Err(HubError::validation(format!("`ladder`: human:{id} is listed twice")));
        }
        out.push(id.to_string());
    }
    if out.len() > crate::channels::config::MAX_RUNGS {
        return Err(HubError::validation(format!(
            "`ladder`: at most {} operators",
            crate::channels::config::MAX_RUNGS
        )));
    }
    if spec.ladder_minutes.is_some_and(|m| !(1..=1440).contains(&m)) {
        return Err(HubError::validation("`ladder_minutes`: 1–1440"));
    }
    if spec.offline_minutes.is_some_and(|m| !(1..=10_080).contains(&m)) {
        return Err(HubError::validation("`offline_minutes`: 1–10080 (a week)"));
    }
    Ok(out)
}

/// Add (or replace, keeping its place) a route; new routes go last (routes are tried in order).
pub async fn put_route(hub: &Hub, by: &str, account: &str, spec: RouteSpec) -> Result<Value, HubError> {
    let account = account_id(account)?;
    check_id("route", &spec.id)?;
    if spec.targets.is_empty() || spec.targets.len() > MAX_TARGETS || spec.escalate.len() > MAX_TARGETS {
        return Err(HubError::validation(format!(
            "a route needs 1–{MAX_TARGETS} targets and at most {MAX_TARGETS} escalation channels"
        )));
    }
    let min_priority = match spec.min_priority.as_deref() {
        None => None,
        Some(p) => Some(
            Priority::parse(p).ok_or_else(|| HubError::validation("`min_priority`: low, normal, high or urgent"))?,
        ),
    };
    let percent = spec.escalate_percent_left.unwrap_or(20);
    if !(1..=99).contains(&percent) {
        return Err(HubError::validation("`escalate_percent_left`: 1–99"));
    }
    let ladder = ladder_of(&spec)?;
    let on_ladder = !ladder.is_empty();
    let route = Route {
        ladder,
        ladder_minutes: spec.ladder_minutes.filter(|_| on_ladder),
        offline_minutes: spec.offline_minutes.filter(|_| on_ladder),
        id: spec.id.clone(),
        filter: crate::channels::config::MessageFilter {
            agent: spec.agent,
            project: spec.project,
            tag: spec.tag,
            min_priority,
            sensitive: false,
        },
        targets: spec.targets,
        remind_after_minutes: spec.remind_after_minutes.filter(|m| *m > 0),
        escalate: spec.escalate,
        escalate_percent_left: percent,
    };
    let event =
        crate::audit::Event::new("route.changed", by).target(format!("route:{}", spec.id)).detail("action", "put");
    let config = edit(hub, &account, event, |c| {
        if let Some(missing) = route.targets.iter().chain(&route.escalate).find(|t| !c.channels.contains_key(*t)) {
            return Err(HubError::validation(format!("no channel `{missing}` in this account")));
        }
        let full = c.routes.len() >= MAX_ROUTES;
        match c.routes.iter_mut().find(|r| r.id == route.id) {
            Some(existing) => *existing = route.clone(),
            None if full => return Err(HubError::validation(format!("at most {MAX_ROUTES} routes per account"))),
            None => c.routes.push(route.clone()),
        }
        Ok(())
    })
    .await?;
    Ok(show_config(&config))
}

pub async fn remove_route(hub: &Hub, by: &str, account: &str, id: &str) -> Result<Value, HubError> {
    let account = account_id(account)?;
    let config = edit(
        hub,
        &account,
        crate::audit::Event::new("route.changed", by).target(format!("route:{id}")).detail("action", "removed"),
        |c| {
            let before = c.routes.len();
            c.routes.retain(|r| r.id != id);
            if c.routes.len() == before { Err(HubError::NotFound) } else { Ok(()) }
        },
    )
    .await?;
    Ok(show_config(&config))
}

/// Link a Slack user (`team`, `user`) to the operator `human:<id>` — whose §9.1 rights the
/// user's button presses then carry. `human = None` removes the link.
pub async fn link_slack(
    hub: &Hub,
    by: &str,
    account: &str,
    team: &str,
    user: &str,
    human: Option<&str>,
) -> Result<Value, HubError> {
    let account = account_id(account)?;
    let ok = |v: &str| !v.is_empty() && v.len() <= 32 && v.bytes().all(|b| b.is_ascii_alphanumeric());
    if !ok(team) || !ok(user) {
        return Err(HubError::validation("`team` and `user` are Slack ids (T…, U…)"));
    }
    let human = match human {
        Some(h) => Some(
            HumanId::parse(h.strip_prefix("human:").unwrap_or(h))
                .ok_or_else(|| HubError::validation("`human`: not a human id"))?
                .to_string(),
        ),
        None => None,
    };
    let link = format!("{team}:{user}");
    let config = edit(
        hub,
        &account,
        crate::audit::Event::new("channel.linked", by)
            .target(format!("slack:{link}"))
            .detail("action", if human.is_some() { "linked" } else { "unlinked" }),
        |c| {
            match &human {
                Some(h) => {
                    c.slack_links.insert(link.clone(), h.clone());
                }
                None => {
                    c.slack_links.remove(&link).ok_or(HubError::NotFound)?;
                }
            }
            Ok(())
        },
    )
    .await?;
    Ok(show_config(&config))
}

/// An operator links (`link`) or unlinks a Slack member to themself only: never taking over a
/// member another operator has linked, never removing another operator's link (checked inside
/// the compare-and-set, so two racing operators cannot both win). `NotAuthorized` otherwise.
pub async fn link_own_slack(
    hub: &Hub,
    account: &str,
    team: &str,
    user: &str,
    me: &HumanId,
    link: bool,
) -> Result<Value, HubError> {
    let account_id = account_id(account)?;
    let key = format!("{team}:{user}");
    let me = me.to_string();
    // validate the ids first (the same rules as the admin command)
    if link {
        let ok = |v: &str| !v.is_empty() && v.len() <= 32 && v.bytes().all(|b| b.is_ascii_alphanumeric());
        if !ok(team) || !ok(user) {
            return Err(HubError::validation("`team` and `user` are Slack ids (T…, U…)"));
        }
    }
    let event = crate::audit::Event::new("channel.linked", format!("human:{me}"))
        .target(format!("slack:{key}"))
        .detail("action", if link { "linked" } else { "unlinked" });
    let config = edit(hub, &account_id, event, |c| {
        match (link, c.slack_links.get(&key)) {
            (true, Some(other)) if other != &me => {
                return Err(HubError::NotAuthorized(
                    "that Slack member is linked to another operator; an administrator can change it".into(),
                ));
            }
            (true, _) => {
                c.slack_links.insert(key.clone(), me.clone());
            }
            (false, Some(owner)) if owner == &me => {
                c.slack_links.remove(&key);
            }
            (false, _) => return Err(HubError::NotAuthorized("you can only unlink your own Slack member".into())),
        }
        Ok(())
    })
    .await?;
    Ok(show_config(&config))
}

/// The account's channels configuration as shown to administrators: never a credential.
pub async fn show(hub: &Hub, account: &str) -> Result<Value, HubError> {
    let account = account_id(account)?;
    let policy = hub.credentials.get_account_policy(&account).await?.unwrap_or_default();
    Ok(show_config(&policy.channels))
}

pub fn show_config(c: &ChannelsConfig) -> Value {
    let channels: serde_json::Map<String, Value> = c
        .channels
        .iter()
        .map(|(id, ch)| {
            let v = match ch {
                Channel::Slack(s) => json!({"kind": "slack", "team_id": s.team_id, "channel": s.channel}),
                Channel::Webhook(w) => {
                    json!({"kind": "webhook", "url": redact_url(&w.url), "standard_webhooks": w.standard_webhooks})
                }
                Channel::Webpush(w) => json!({
                    "kind": "webpush",
                    "recipients": w.recipients.iter().map(|h| format!("human:{h}")).collect::<Vec<_>>(),
                }),
                Channel::Email(m) => json!({
                    "kind": "email", "smtp_host": m.smtp_host, "smtp_port": m.smtp_port, "security": m.security,
                    "username": m.username, "password_set": m.password.is_some(), "from": m.from,
                    "recipients": m.recipients.iter().map(|(h, a)| json!({"human": format!("human:{h}"), "address": a})).collect::<Vec<_>>(),
                }),
            };
            (id.clone(), v)
        })
        .collect();
    json!({
        "channels": channels,
        "routes": c.routes,
        "slack_links": c.slack_links.iter().map(|(k, h)| json!({"slack": k, "human": format!("human:{h}")})).collect::<Vec<_>>(),
    })
}

/// A webhook URL as shown: scheme, host and port only — paths and queries often carry the
/// receiver's secret (Slack incoming webhooks, Discord, ntfy topics).
pub fn redact_url(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(u) => {
            let port = u.port().map(|p| format!(":{p}")).unwrap_or_default();
            let path = if u.path().len() > 1 || u.query().is_some() { "/…" } else { "" };
            format!("{}://{}{port}{path}", u.scheme(), u.host_str().unwrap_or(""))
        }
        Err(_) => "(invalid)".into(),
    }
}

//! Administering an account's SSO (issue 42): `admin sso set|show|remove|link|unlink` on both
//! deployments come here. Every change is one compare-and-set of the account policy document
//! with its `policy.changed` ledger entry (`target: sso`) — never the client secret.

use ma2h_protocol::ids::{AccountId, HumanId};
use serde_json::{Value, json};

use super::{MAX_DOMAINS, MAX_GROUPS, MAX_LINKS, SsoConfig, secret_context};
use crate::channels::config::Sealed;
use crate::decisions::manage::edit_policy;
use crate::{Hub, HubError};

/// What `admin sso set` changes; `None` keeps the current value (all but `key_login` are needed
/// the first time).
#[derive(Debug, Clone, Default)]
pub struct SsoSpec {
    pub issuer: Option<String>,
    pub client_id: Option<String>,
    pub client_secret: Option<String>,
    pub scopes: Option<String>,
    /// Replaces the allowed email domains (an empty list allows none).
    pub email_domains: Option<Vec<String>>,
    pub key_login: Option<bool>,
    /// Log out of the provider too on logout (RP-Initiated Logout).
    pub provider_logout: Option<bool>,
    /// Replaces the required groups (an empty list requires none).
    pub required_groups: Option<Vec<String>>,
    /// The ID token claim groups are read from (blank: back to `groups`).
    pub groups_claim: Option<String>,
}

fn event(by: &str, what: &str) -> crate::audit::Event {
    crate::audit::Event::new("policy.changed", by).target("sso").detail("change", what)
}

fn nonblank(v: Option<String>) -> Option<String> {
    v.map(|s| s.trim().to_owned()).filter(|s| !s.is_empty())
}

/// An issuer is an `https` URL (plain `http` only in dev mode, for a provider on this machine),
/// without a query, fragment or user; kept exactly as typed (discovery must echo it byte for
/// byte).
fn check_issuer(hub: &Hub, issuer: &str) -> Result<String, HubError> {
    let url = url::Url::parse(issuer).map_err(|_| HubError::validation("`issuer`: not a URL"))?;
    let dev = hub.settings.mode == crate::settings::Mode::Dev;
    if url.scheme() != "https" && !(dev && url.scheme() == "http") {
        return Err(HubError::validation("`issuer`: an https:// URL (http:// only in dev mode)"));
    }
    if url.host_str().is_none() || url.query().is_some() || url.fragment().is_some() || !url.username().is_empty() {
        return Err(HubError::validation("`issuer`: a host, and no query, fragment or user"));
    }
    Ok(issuer.to_owned())
}

/// Mail domains anyone can sign up for: allowing one would make every stranger with an address
/// there an operator (an explicit subject link is the way to admit one such person).
const PUBLIC_MAIL: &[&str] = &[
    "gmail.com",
    "googlemail.com",
    "outlook.com",
    "hotmail.com",
    "live.com",
    "msn.com",
    "yahoo.com",
    "icloud.com",
    "me.com",
    "aol.com",
    "proton.me",
    "protonmail.com",
    "gmx.com",
    "gmx.de",
    "mail.com",
    "yandex.com",
    "zoho.com",
    "fastmail.com",
];

fn check_domain(d: &str) -> Result<String, HubError> {
    let d = d.trim().trim_start_matches('@').to_ascii_lowercase();
    let ok = d.contains('.')
        && d.len() <= 253
        && d.split('.').all(|l| !l.is_empty() && l.chars().all(|c| c.is_ascii_alphanumeric() || c == '-'));
    if !ok {
        return Err(HubError::validation(format!("`email_domains`: `{d}` is not a domain name")));
    }
    if PUBLIC_MAIL.contains(&d.as_str()) {
        return Err(HubError::validation(format!(
            "`email_domains`: `{d}` is a public mail service — anyone could sign in; link people by subject instead"
        )));
    }
    Ok(d)
}

/// A group as the provider names it (an Okta/Keycloak group name, an Entra ID object id or app
/// role): printable, no surrounding space.
fn check_group(g: &str) -> Result<String, HubError> {
    let g = g.trim();
    if g.len() > 255 || g.chars().any(char::is_control) {
        return Err(HubError::validation(format!("`required_groups`: `{g}` is not a group name (1–255 characters)")));
    }
    Ok(g.to_owned())
}

/// A claim name: a JSON member name as providers use them (`groups`, `roles`, a namespaced
/// `https://example.com/groups`).
fn check_claim(c: &str) -> Result<String, HubError> {
    let ok = c.len() <= 255 && !c.chars().any(|ch| ch.is_control() || ch.is_whitespace());
    if !ok {
        return Err(HubError::validation("`groups_claim`: a claim name, no spaces"));
    }
    Ok(c.to_owned())
}

/// A replacement list (`None`: keep the current one): at most `max` entries, blanks dropped,
/// each checked.
fn checked_list(
    list: Option<Vec<String>>,
    max: usize,
    name: &str,
    check: impl Fn(&str) -> Result<String, HubError>,
) -> Result<Option<Vec<String>>, HubError> {
    let Some(list) = list else { return Ok(None) };
    if list.len() > max {
        return Err(HubError::validation(format!("`{name}`: at most {max}")));
    }
    list.iter().filter(|v| !v.trim().is_empty()).map(|v| check(v)).collect::<Result<Vec<_>, _>>().map(Some)
}

/// Set or change the account's SSO configuration.
pub async fn set(hub: &Hub, by: &str, account: &AccountId, spec: SsoSpec) -> Result<Value, HubError> {
    let issuer = nonblank(spec.issuer).map(|i| check_issuer(hub, &i)).transpose()?;
    let domains = checked_list(spec.email_domains, MAX_DOMAINS, "email_domains", check_domain)?;
    let groups = checked_list(spec.required_groups, MAX_GROUPS, "required_groups", check_group)?;
    // `Some(None)`: set back to the default claim
    let claim = spec.groups_claim.map(|c| nonblank(Some(c)).map(|c| check_claim(&c)).transpose()).transpose()?;
    let secret = nonblank(spec.client_secret)
        .map(|s| Sealed::seal(&hub.master_key, hub.random.as_ref(), &secret_context(account.as_str()), &s));
    let client_id = nonblank(spec.client_id);
    let scopes = nonblank(spec.scopes);
    let what = if spec.key_login == Some(false) { "set, key login off" } else { "set" };
    let policy = edit_policy(hub, account, event(by, what), |p| {
        let current = p.sso.take();
        let need = |v: Option<String>, old: Option<&String>, name: &str| {
            v.or_else(|| old.cloned()).ok_or_else(|| HubError::validation(format!("`{name}` is required")))
        };
        let next = SsoConfig {
            issuer: need(issuer.clone(), current.as_ref().map(|c| &c.issuer), "issuer")?,
            client_id: need(client_id.clone(), current.as_ref().map(|c| &c.client_id), "client_id")?,
            client_secret: secret
                .clone()
                .or_else(|| current.as_ref().map(|c| c.client_secret.clone()))
                .ok_or_else(|| HubError::validation("`client_secret` is required"))?,
            scopes: scopes
                .clone()
                .or_else(|| current.as_ref().map(|c| c.scopes.clone()))
                .unwrap_or_else(super::default_scopes),
            links: current.as_ref().map(|c| c.links.clone()).unwrap_or_default(),
            email_domains: domains
                .clone()
                .or_else(|| current.as_ref().map(|c| c.email_domains.clone()))
                .unwrap_or_default(),
            key_login: spec.key_login.or(current.as_ref().map(|c| c.key_login)).unwrap_or(true),
            provider_logout: spec.provider_logout.or(current.as_ref().map(|c| c.provider_logout)).unwrap_or(false),
            required_groups: groups
                .clone()
                .or_else(|| current.as_ref().map(|c| c.required_groups.clone()))
                .unwrap_or_default(),
            groups_claim: claim.clone().unwrap_or_else(|| current.as_ref().and_then(|c| c.groups_claim.clone())),
        };
        p.sso = Some(next);
        Ok(())
    })
    .await?;
    Ok(show_config(policy.sso.as_ref()))
}

/// The configuration as the admin sees it (never the secret).
pub fn show_config(sso: Option<&SsoConfig>) -> Value {
    match sso {
        None => json!({ "sso": null }),
        Some(c) => json!({ "sso": {
            "issuer": c.issuer,
            "client_id": c.client_id,
            "client_secret": "(set)",
            "scopes": c.scopes,
            "email_domains": c.email_domains,
            "links": c.links.iter().map(|(sub, h)| json!({ "subject": sub, "human": format!("human:{h}") })).collect::<Vec<_>>(),
            "key_login": c.key_login,
            "provider_logout": c.provider_logout,
            "required_groups": c.required_groups,
            "groups_claim": c.groups_claim(),
        }}),
    }
}

/// `admin sso show`.
pub async fn show(hub: &Hub, account: &AccountId) -> Result<Value, HubError> {
    let policy = hub.credentials.get_account_policy(account).await?.unwrap_or_default();
    Ok(show_config(policy.sso.as_ref()))
}

/// Remove SSO from the account: its SSO sessions end at their next request, key login is back.
pub async fn remove(hub: &Hub, by: &str, account: &AccountId) -> Result<Value, HubError> {
    let policy = edit_policy(hub, account, event(by, "removed"), |p| {
        p.sso = None;
        Ok(())
    })
    .await?;
    Ok(show_config(policy.sso.as_ref()))
}

/// Link a provider subject to an operator (`human = None`: remove the link, which ends the
/// sessions it made).
pub async fn link(
    hub: &Hub,
    by: &str,
    account: &AccountId,
    subject: &str,
    human: Option<&str>,
) -> Result<Value, HubError> {
    let subject = subject.trim();
    if subject.is_empty() || subject.len() > 255 || subject.chars().any(char::is_control) {
        return Err(HubError::validation("`subject`: the provider's `sub`, 1–255 characters"));
    }
    let human = human
        .map(|h| {
            let h = h.trim();
            HumanId::parse(h.strip_prefix("human:").unwrap_or(h))
                .ok_or_else(|| HubError::validation("`human`: not an operator id"))
        })
        .transpose()?;
    let what = if human.is_some() { "linked" } else { "unlinked" };
    let policy =
        edit_policy(hub, account, event(by, what).detail("subject", crate::audit::short_digest(subject)), |p| {
            let sso =
                p.sso.as_mut().ok_or_else(|| HubError::validation("this account has no SSO: `admin sso set` first"))?;
            match &human {
                Some(h) => {
                    if !sso.links.contains_key(subject) && sso.links.len() >= MAX_LINKS {
                        return Err(HubError::validation(format!("at most {MAX_LINKS} links per account")));
                    }
                    sso.links.insert(subject.to_owned(), h.to_string());
                }
                None => {
                    sso.links.remove(subject);
                }
            }
            Ok(())
        })
        .await?;
    Ok(show_config(policy.sso.as_ref()))
}

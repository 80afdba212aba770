//! Single sign-on for the inbox (issue 42): OpenID Connect's authorization code flow with PKCE
//! against the account's identity provider, and the mapping of its identities to operators.
//!
//! The configuration lives in the account policy document ([`SsoConfig`], edited by
//! compare-and-set like every account setting, each change a `policy.changed` ledger entry with
//! `target: sso`); [`flow`] runs the two legs of a login; [`manage`] is what the admin commands
//! call. The spec leaves "human SSO mechanics" to Hubs (§10): nothing here touches the wire
//! protocol, and operator API keys keep working for the API and the CLI whatever is set here.

pub mod flow;
pub mod manage;

use std::collections::BTreeMap;

use ma2h_protocol::ids::HumanId;
use serde::{Deserialize, Serialize};

use crate::channels::config::Sealed;

/// The scopes asked for when none are set: the ID token then carries `email` and
/// `email_verified` at the providers that have them.
pub const DEFAULT_SCOPES: &str = "openid email profile";
/// The `credential_id` of a principal an SSO session vouches for (`sso:{subject digest}`): it
/// names no stored credential.
pub const SESSION_PREFIX: &str = "sso:";
/// At most this many explicit subject links per account (the policy document is bounded).
pub const MAX_LINKS: usize = 200;
/// At most this many allowed email domains per account.
pub const MAX_DOMAINS: usize = 20;

/// An account's identity provider and who of its users are which operator.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SsoConfig {
    /// The issuer identifier (`https://accounts.google.com`): discovery is fetched from
    /// `{issuer}/.well-known/openid-configuration`, and the document's own `issuer` must equal it.
    pub issuer: String,
    pub client_id: String,
    /// Sealed under the master key for the slot [`secret_context`]; never shown.
    pub client_secret: Sealed,
    /// Space-separated scopes; `openid` is always included.
    #[serde(default = "default_scopes")]
    pub scopes: String,
    /// Explicit links made by an admin: the provider's `sub` → operator id. Checked first.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub links: BTreeMap<String, String>,
    /// A **verified** email in one of these domains maps to its local part (`alice@acme.com` →
    /// `human:alice`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub email_domains: Vec<String>,
    /// May the account's operators still log in to the inbox with their API key? (`false`: SSO
    /// or a passkey only; the API and CLI keep their keys. Break-glass: set it back to `true`.)
    #[serde(default = "yes")]
    pub key_login: bool,
    /// Does logging out of the inbox also end the provider's session (OpenID Connect
    /// RP-Initiated Logout 1.0, when the provider advertises an `end_session_endpoint`)? Off by
    /// default: the provider must know the Hub's post-logout address first.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub provider_logout: bool,
}

fn default_scopes() -> String {
    DEFAULT_SCOPES.to_owned()
}

fn yes() -> bool {
    true
}

/// The slot an account's client secret is sealed for (it does not open anywhere else).
pub fn secret_context(account: &str) -> String {
    format!("sso/{account}/client_secret")
}

/// How an identity was mapped to its operator — kept in the session so every request can check
/// the mapping still holds (an admin removing the link or the domain ends the session at once).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "by", content = "value", rename_all = "snake_case")]
pub enum Via {
    /// An explicit link of this subject.
    Subject(String),
    /// A verified email in an allowed domain (the address, lowercased).
    Email(String),
}

/// What the provider vouched for, from a validated ID token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub subject: String,
    pub email: Option<String>,
    pub email_verified: bool,
}

impl SsoConfig {
    /// The operator `identity` is, first match wins: an explicit subject link, then a verified
    /// email in an allowed domain. `None`: not an operator of this account.
    pub fn map(&self, identity: &Identity) -> Option<(HumanId, Via)> {
        if let Some(human) = self.links.get(&identity.subject) {
            return Some((HumanId::parse(human)?, Via::Subject(identity.subject.clone())));
        }
        // An unverified email proves nothing about who holds it.
        let email = identity.email.as_deref().filter(|_| identity.email_verified)?.to_ascii_lowercase();
        let human = self.human_for_email(&email)?;
        Some((human, Via::Email(email)))
    }

    fn human_for_email(&self, email: &str) -> Option<HumanId> {
        let (local, domain) = email.rsplit_once('@')?;
        if !self.email_domains.iter().any(|d| d == domain) {
            return None;
        }
        let valid = !local.is_empty() && local.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c));
        valid.then(|| HumanId::parse(local)).flatten()
    }

    /// Does a session made through `via` still belong to `human`?
    pub fn still_maps(&self, human: &HumanId, via: &Via) -> bool {
        match via {
            Via::Subject(sub) => self.links.get(sub).is_some_and(|h| h == human.as_str()),
            Via::Email(email) => {
                // A link of the same person elsewhere does not matter: the domain rule must hold.
                self.human_for_email(email).is_some_and(|h| &h == human)
            }
        }
    }

    /// The scopes asked for, `openid` first and once.
    pub fn scope_list(&self) -> Vec<String> {
        let mut out = vec!["openid".to_owned()];
        for s in self.scopes.split_whitespace() {
            if !out.iter().any(|o| o == s) {
                out.push(s.to_owned());
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> SsoConfig {
        SsoConfig {
            issuer: "https://idp.example".into(),
            client_id: "hub".into(),
            client_secret: serde_json::from_str("\"x\"").unwrap(),
            scopes: default_scopes(),
            links: [("00u1".to_owned(), "root".to_owned())].into(),
            email_domains: vec!["acme.com".into()],
            key_login: true,
            provider_logout: false,
        }
    }

    fn who(sub: &str, email: Option<&str>, verified: bool) -> Identity {
        Identity { subject: sub.into(), email: email.map(Into::into), email_verified: verified }
    }

    #[test]
    fn an_explicit_link_wins_over_the_email_rule() {
        let (h, via) = config().map(&who("00u1", Some("alice@acme.com"), true)).unwrap();
        assert_eq!(h.as_str(), "root");
        assert_eq!(via, Via::Subject("00u1".into()));
    }

    #[test]
    fn a_verified_email_in_an_allowed_domain_maps_to_its_local_part() {
        let (h, via) = config().map(&who("x", Some("Alice@ACME.com"), true)).unwrap();
        assert_eq!(h.as_str(), "alice");
        assert_eq!(via, Via::Email("alice@acme.com".into()));
    }

    #[test]
    fn unverified_emails_other_domains_and_odd_local_parts_map_to_nobody() {
        let c = config();
        assert_eq!(c.map(&who("x", Some("alice@acme.com"), false)), None);
        assert_eq!(c.map(&who("x", Some("alice@evil.com"), true)), None);
        assert_eq!(c.map(&who("x", Some("alice@sub.acme.com"), true)), None);
        assert_eq!(c.map(&who("x", Some("a:b@acme.com"), true)), None);
        assert_eq!(c.map(&who("x", Some("@acme.com"), true)), None);
        assert_eq!(c.map(&who("x", None, true)), None);
    }

    #[test]
    fn a_session_stops_mapping_when_its_link_or_domain_goes() {
        let mut c = config();
        let root = HumanId::parse("root").unwrap();
        let alice = HumanId::parse("alice").unwrap();
        assert!(c.still_maps(&root, &Via::Subject("00u1".into())));
        assert!(c.still_maps(&alice, &Via::Email("alice@acme.com".into())));
        assert!(!c.still_maps(&alice, &Via::Subject("00u1".into())));
        c.links.clear();
        c.email_domains.clear();
        assert!(!c.still_maps(&root, &Via::Subject("00u1".into())));
        assert!(!c.still_maps(&alice, &Via::Email("alice@acme.com".into())));
    }

    #[test]
    fn openid_is_always_asked_for_once() {
        let mut c = config();
        c.scopes = "email openid groups".into();
        assert_eq!(c.scope_list(), ["openid", "email", "groups"]);
    }
}

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
/// At most this many required groups per account.
pub const MAX_GROUPS: usize = 20;
/// The ID token claim groups are read from when none is set (Okta, Keycloak, Entra ID).
pub const DEFAULT_GROUPS_CLAIM: &str = "groups";

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
    /// When not empty, the email rule admits only an identity whose ID token lists one of these
    /// in [`Self::groups_claim`] (explicit subject links are admin decisions and are not gated).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub required_groups: Vec<String>,
    /// The ID token claim holding the identity's groups (default `groups`; `roles` for Entra ID
    /// app roles).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub groups_claim: Option<String>,
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
    /// A verified email in an allowed domain, admitted as a member of one of the required
    /// groups (the one that admitted it: the session ends when it is no longer required).
    EmailInGroup { email: String, group: String },
}

/// What the provider vouched for, from a validated ID token.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Identity {
    pub subject: String,
    pub email: Option<String>,
    pub email_verified: bool,
    /// The groups the token listed in the configured claim (empty when it has none).
    pub groups: Vec<String>,
}

/// Why an identity is not an operator of the account (the ledger's `login.refused` reason).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// No link, and no verified email in an allowed domain.
    Unmapped,
    /// A verified email in an allowed domain, in none of the required groups.
    NotInGroup,
}

impl Refusal {
    pub fn as_str(self) -> &'static str {
        match self {
            Refusal::Unmapped => "unmapped",
            Refusal::NotInGroup => "not_in_group",
        }
    }
}

impl SsoConfig {
    /// The operator `identity` is, first match wins: an explicit subject link, then a verified
    /// email in an allowed domain (and, when groups are required, in one of them).
    pub fn map(&self, identity: &Identity) -> Result<(HumanId, Via), Refusal> {
        if let Some(human) = self.links.get(&identity.subject) {
            let human = HumanId::parse(human).ok_or(Refusal::Unmapped)?;
            return Ok((human, Via::Subject(identity.subject.clone())));
        }
        // An unverified email proves nothing about who holds it.
        let email = identity
            .email
            .as_deref()
            .filter(|_| identity.email_verified)
            .ok_or(Refusal::Unmapped)?
            .to_ascii_lowercase();
        let human = self.human_for_email(&email).ok_or(Refusal::Unmapped)?;
        if self.required_groups.is_empty() {
            return Ok((human, Via::Email(email)));
        }
        // the first required group the identity is in (exact, case-sensitive: group names and
        // Entra's object ids are compared as the provider spells them)
        let group = self.required_groups.iter().find(|g| identity.groups.contains(g)).ok_or(Refusal::NotInGroup)?;
        Ok((human, Via::EmailInGroup { email, group: group.clone() }))
    }

    /// The claim groups are read from.
    pub fn groups_claim(&self) -> &str {
        self.groups_claim.as_deref().unwrap_or(DEFAULT_GROUPS_CLAIM)
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
                // A link of the same person elsewhere does not matter: the domain rule must hold
                // (and, once groups are required, a session made without one no longer does).
                self.required_groups.is_empty() && self.human_for_email(email).is_some_and(|h| &h == human)
            }
            Via::EmailInGroup { email, group } => {
                // groups no longer required at all: the domain rule alone admits it
                (self.required_groups.is_empty() || self.required_groups.contains(group))
                    && self.human_for_email(email).is_some_and(|h| &h == human)
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
            required_groups: vec![],
            groups_claim: None,
        }
    }

    fn who(sub: &str, email: Option<&str>, verified: bool) -> Identity {
        Identity { subject: sub.into(), email: email.map(Into::into), email_verified: verified, groups: vec![] }
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
        let no = Err(Refusal::Unmapped);
        assert_eq!(c.map(&who("x", Some("alice@acme.com"), false)), no);
        assert_eq!(c.map(&who("x", Some("alice@evil.com"), true)), no);
        assert_eq!(c.map(&who("x", Some("alice@sub.acme.com"), true)), no);
        assert_eq!(c.map(&who("x", Some("a:b@acme.com"), true)), no);
        assert_eq!(c.map(&who("x", Some("@acme.com"), true)), no);
        assert_eq!(c.map(&who("x", None, true)), no);
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
    fn required_groups_gate_the_email_rule_not_the_links_and_sessions_follow_them() {
        let mut c = config();
        c.required_groups = vec!["ma2h-reviewers".into(), "sre".into()];
        let mut alice = who("x", Some("alice@acme.com"), true);
        assert_eq!(c.map(&alice), Err(Refusal::NotInGroup));
        alice.groups = vec!["everyone".into(), "Sre".into()];
        assert_eq!(c.map(&alice), Err(Refusal::NotInGroup), "compared exactly");
        alice.groups.push("sre".into());
        let (h, via) = c.map(&alice).unwrap();
        let group_via = Via::EmailInGroup { email: "alice@acme.com".into(), group: "sre".into() };
        assert_eq!((h.as_str(), &via), ("alice", &group_via));
        // a link is not gated
        assert_eq!(c.map(&who("00u1", None, false)).unwrap().0.as_str(), "root");
        // sessions: one made without a group ends once groups are required; one made through a
        // group ends when that group is no longer required, and holds when none are
        let human = HumanId::parse("alice").unwrap();
        assert!(!c.still_maps(&human, &Via::Email("alice@acme.com".into())));
        assert!(c.still_maps(&human, &group_via));
        c.required_groups = vec!["ma2h-reviewers".into()];
        assert!(!c.still_maps(&human, &group_via));
        c.required_groups.clear();
        assert!(c.still_maps(&human, &group_via));
        assert_eq!(c.groups_claim(), "groups");
    }

    #[test]
    fn openid_is_always_asked_for_once() {
        let mut c = config();
        c.scopes = "email openid groups".into();
        assert_eq!(c.scope_list(), ["openid", "email", "groups"]);
    }
}

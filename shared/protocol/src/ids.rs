//! Identifiers parsed at the edge: types over strings, so an id is checked once, where it enters.
//!
//! Hub-minted ids are `msg_`/`res_` + a ULID: the 48-bit millisecond prefix makes them sortable,
//! the 80 random bits make them unguessable (§8.7.1 pins the `msg_`/`res_` namespaces for v0.5).

use std::fmt;

use serde::{Deserialize, Serialize};
use ulid::Ulid;

macro_rules! minted_id {
    ($(#[$doc:meta])* $name:ident, $prefix:literal) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            pub const PREFIX: &'static str = $prefix;

            /// Mint from a Hub-clock millisecond timestamp and 80 bits of randomness.
            pub fn from_parts(unix_ms: u64, random: u128) -> Self {
                Self(format!("{}{}", $prefix, Ulid::from_parts(unix_ms, random)))
            }

            /// Parse an id received on the wire. Anything not shaped like one of ours is `None`
            /// (callers treat it exactly like an unknown id).
            pub fn parse(s: &str) -> Option<Self> {
                let rest = s.strip_prefix($prefix)?;
                Ulid::from_string(rest).ok()?;
                Some(Self(s.to_owned()))
            }

            /// Re-wrap a value that came out of our own store.
            pub fn from_trusted(s: String) -> Self {
                Self(s)
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

minted_id!(
    /// A Hub-assigned message id (`msg_…`).
    MessageId,
    "msg_"
);
minted_id!(
    /// A Hub-assigned resolution id (`res_…`), identical on every channel and retry (§6).
    ResolutionId,
    "res_"
);

minted_id!(
    /// A Hub-assigned directive id (`dir_…`, §13.1): the agent's at-most-once dedup key.
    DirectiveId,
    "dir_"
);

minted_id!(
    /// A Hub-minted receipt id (`rcpt_…`, §8.7.1): the ack key of a `receipt` entry.
    ReceiptId,
    "rcpt_"
);

minted_id!(
    /// A Hub-minted session id (`sess_…`, §16.1): an address, never a secret or a credential.
    SessionId,
    "sess_"
);

macro_rules! name_id {
    ($(#[$doc:meta])* $name:ident $(, forbid $forbidden:literal)?) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
        #[serde(transparent)]
        pub struct $name(String);

        impl $name {
            /// Non-empty, at most 200 bytes, no control characters (nor the kind's reserved
            /// separator, where it has one).
            pub fn parse(s: &str) -> Option<Self> {
                if s.is_empty() || s.len() > 200 || s.chars().any(char::is_control) {
                    return None;
                }
                $(if s.contains($forbidden) {
                    return None;
                })?
                Some(Self(s.to_owned()))
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str(&self.0)
            }
        }
    };
}

name_id!(
    /// The stable logical identity of an agent (`agent.id`, §4.1); credentials are scoped to one.
    /// §4: `#` separates an agent from its session (`agent:<id>#sess_…`), so an id containing it
    /// would be read as a session of another agent — this Hub never admits one as a principal.
    AgentId, forbid '#'
);
name_id!(
    /// The tenant every principal belongs to; another account's ids behave as unknown.
    AccountId
);
name_id!(
    /// A human operator's id (the `<id>` of `human:<id>`).
    HumanId
);

/// One component of a composed storage or counter key, escaped so that joining components with
/// `#` or `/` is unambiguous whatever the ids contain (`a`/`b/c` and `a/b`/`c` never meet): `%`,
/// `#` and `/` are percent-encoded, everything else is kept. Ordinary ids come back unchanged, so
/// keys written before this encoding keep their meaning.
pub fn key_part(s: &str) -> std::borrow::Cow<'_, str> {
    if !s.contains(['%', '#', '/']) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '%' => out.push_str("%25"),
            '#' => out.push_str("%23"),
            '/' => out.push_str("%2F"),
            c => out.push(c),
        }
    }
    std::borrow::Cow::Owned(out)
}

/// The inverse of [`key_part`]; `None` for text `key_part` cannot have produced.
pub fn key_part_decode(s: &str) -> Option<String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(i) = rest.find('%') {
        out.push_str(&rest[..i]);
        let c = match rest.get(i..i + 3)? {
            "%25" => '%',
            "%23" => '#',
            "%2F" => '/',
            _ => return None,
        };
        out.push(c);
        rest = &rest[i + 3..];
    }
    out.push_str(rest);
    Some(out)
}

/// A Hub-attested actor, `<type>:<id>` (§9.1). Never taken from a request body.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Actor {
    Human(String),
    Agent(String),
    System(String),
}

impl Actor {
    pub const DEFAULT_ON_EXPIRE: &'static str = "default_on_expire";
    pub const EXPIRY: &'static str = "expiry";

    pub fn parse(s: &str) -> Option<Self> {
        let (kind, id) = s.split_once(':')?;
        if id.is_empty() {
            return None;
        }
        match kind {
            "human" => Some(Self::Human(id.to_owned())),
            "agent" => Some(Self::Agent(id.to_owned())),
            "system" => Some(Self::System(id.to_owned())),
            _ => None,
        }
    }

    pub fn agent(id: &AgentId) -> Self {
        Self::Agent(id.as_str().to_owned())
    }

    pub fn human(id: &HumanId) -> Self {
        Self::Human(id.as_str().to_owned())
    }

    /// §9.1 matching of one `allowed_resolvers` entry against this attested actor. A principal-form
    /// `agent:<id>` entry matches that principal under any session (`agent:<id>#sess_…`); every
    /// other form matches exactly. §4 grammar: the first `#` ends the agent id and what follows
    /// must be a `sess_` id — anything else is no session of that principal (an agent named
    /// `bot#evil` is not `bot`).
    pub fn matches_entry(&self, entry: &str) -> bool {
        let me = self.to_string();
        if me == entry {
            return true;
        }
        match (self, entry.strip_prefix("agent:")) {
            (Self::Agent(id), Some(entry_id)) if !entry_id.contains('#') => id
                .split_once('#')
                .is_some_and(|(principal, session)| principal == entry_id && Self::is_session_segment(session)),
            _ => false,
        }
    }

    /// The session segment of an agent address: `sess_` + at least one more character, no `#`.
    fn is_session_segment(s: &str) -> bool {
        s.strip_prefix("sess_").is_some_and(|rest| !rest.is_empty() && !rest.contains('#'))
    }
}

impl fmt::Display for Actor {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Human(id) => write!(f, "human:{id}"),
            Self::Agent(id) => write!(f, "agent:{id}"),
            Self::System(id) => write!(f, "system:{id}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn minted_ids_are_prefixed_sortable_and_parse_back() {
        let a = MessageId::from_parts(1_000, 7);
        let b = MessageId::from_parts(2_000, 1);
        assert!(a.as_str().starts_with("msg_"));
        assert!(a < b, "later timestamp sorts later");
        assert_eq!(MessageId::parse(a.as_str()), Some(a.clone()));
        assert_eq!(MessageId::parse("res_01HZX"), None);
        assert_eq!(MessageId::parse("msg_not-a-ulid"), None);
        assert_eq!(ResolutionId::parse(a.as_str()), None, "namespaces are disjoint");
    }

    #[test]
    fn actor_round_trips_and_rejects_unknown_types() {
        assert_eq!(Actor::parse("human:alice").unwrap().to_string(), "human:alice");
        assert_eq!(Actor::parse("robot:x"), None);
        assert_eq!(Actor::parse("human:"), None);
    }

    #[test]
    fn principal_entry_matches_any_session_but_session_entry_matches_exactly() {
        let bare = Actor::Agent("bot".into());
        let in_session = Actor::Agent("bot#sess_1".into());
        assert!(bare.matches_entry("agent:bot"));
        assert!(in_session.matches_entry("agent:bot"));
        assert!(in_session.matches_entry("agent:bot#sess_1"));
        assert!(!bare.matches_entry("agent:bot#sess_1"));
        assert!(!bare.matches_entry("agent:bo"));
        assert!(!Actor::Human("bot".into()).matches_entry("agent:bot"));
    }

    #[test]
    fn an_agent_named_with_a_hash_is_no_session_of_the_prefix_agent() {
        // issue 13 item 5: `botB#evil` must not inherit `agent:botB`'s resolver rights
        assert!(!Actor::Agent("botB#evil".into()).matches_entry("agent:botB"));
        assert!(!Actor::Agent("botB#sess_".into()).matches_entry("agent:botB"));
        assert!(!Actor::Agent("botB#sess_1#x".into()).matches_entry("agent:botB"));
        assert!(AgentId::parse("botB#evil").is_none(), "§4: `#` is the session separator");
        assert!(AccountId::parse("acme#1").is_some(), "only agent ids reserve `#`");
    }

    #[test]
    fn key_parts_keep_joined_keys_apart() {
        let join = |a: &str, b: &str| format!("{}/{}", key_part(a), key_part(b));
        assert_ne!(join("a", "b/c"), join("a/b", "c"));
        assert_ne!(join("a#", "b"), join("a", "#b"));
        assert_ne!(join("a%2Fb", "c"), join("a/b", "c"), "the escape character is escaped too");
        assert_eq!(key_part("deploybot"), "deploybot", "ordinary ids are unchanged");
        for id in ["a/b#c%d", "plain", "%%", "#/"] {
            assert_eq!(key_part_decode(&key_part(id)).as_deref(), Some(id));
        }
        assert_eq!(key_part_decode("a%2"), None);
    }

    #[test]
    fn names_reject_empty_and_control_characters() {
        assert!(AgentId::parse("deploybot/dev-team").is_some());
        assert!(AgentId::parse("").is_none());
        assert!(AgentId::parse("a\nb").is_none());
    }
}

//! The inter-agent leg (§13.5): the account's policy document (opt-in, sender allowlists) and
//! the rules a message between agents must pass.

pub mod policy;
pub mod rules;

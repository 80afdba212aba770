//! Channels (issue 20): where the Hub tells a human an agent is waiting — Slack, email or a
//! signed webhook — their per-account configuration, the durable outbox, and the answers that
//! come back through them.

pub mod answer_token;
pub mod audience;
pub mod config;
pub mod devices;
pub mod email;
pub mod ladder;
pub mod mailer;
pub mod manage;
pub mod notify;
pub mod outbox;
pub mod schedule;
pub mod sender;
pub mod slack;
pub(crate) mod webhook_event;
pub mod webpush;

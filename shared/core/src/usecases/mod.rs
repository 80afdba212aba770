//! One module per use case. Shared lifecycle plumbing (lazy expiry, the terminal CAS) lives in
//! [`lifecycle`].

pub mod addressed;
pub mod admin;
pub mod cancel;
pub mod channels;
pub mod directives;
pub mod drain;
pub mod email;
pub mod get;
pub mod inbox;
pub mod inter_agent;
mod lifecycle;
pub mod list;
pub mod notify;
pub mod presence;
pub mod push;
mod push_worker;
pub mod receipt;
pub mod resolve;
mod resolvers;
pub mod sessions;
pub mod slack;
pub mod stream;
pub mod submit;
pub mod sweep;
mod webhook_event;

//! # ma2h-client
//!
//! A first-class client for MA2H agents (spec v0.5) — shell steps in CI and short CLI runs:
//!
//! - [`builder`]: typed builders for `notify` / `ask` / `task` (§4–§5), checked against the
//!   message schema before anything is sent;
//! - [`client`]: discovery (§8.0), submit with an automatic `idempotency_key` and the §8.1
//!   lost-ack retry recipe, `429` handling that honours `Retry-After` (§8.6), long-poll reads
//!   (§8.2) and cancel (§8.4);
//! - [`verify`]: §9.2 Response verification for a callback receiver, backed by the persistent
//!   [`replay`] cache (`jti` replay + `(in_reply_to, resolution_id)` dedup, §6);
//! - [`inbox`]: the agent mailbox (§8.7): drain, §9.7 entry verification (with the replay
//!   cache deduplicating directive ids, §13.4) and ack — with a session presented (§8.7.1), also
//!   §9.8 `response` entries, and ([`inter_agent`]) other agents' `message` entries and bounce
//!   `receipt`s;
//! - [`session`]: §16 sessions — register, list, read, close, and [`SessionLease`], renewed by
//!   use, re-registered when it ends, stopped for good when the operator says so (§16.4.1);
//! - [`resolve`]: an agent resolver's answer (§8.8), optionally as a session;
//! - [`seal`]: §9.3 state sealing with XChaCha20-Poly1305 under a per-agent key that never
//!   enters `state` or the Hub.
//!
//! Configuration comes from the environment ([`config`]).

pub mod builder;
pub mod client;
pub mod config;
pub mod error;
pub mod inbox;
pub mod inter_agent;
pub mod read;
pub mod replay;
pub mod resolve;
pub mod seal;
pub mod session;
pub mod verify;

pub use builder::MessageBuilder;
pub use client::{Ack, CancelOutcome, Client, RetryPolicy};
pub use config::Config;
pub use error::{ClientError, HubErrorBody};
pub use inbox::{
    AckOptions, DrainOptions, DrainVerdict, EntryRejection, EntryVerdict, EntryVerifier, VerifiedDirective,
    VerifiedEntry,
};
pub use read::MessageRead;
pub use replay::ReplayCache;
pub use resolve::ResolveOutcome;
pub use seal::StateKey;
pub use session::{
    Drained, RegisterSession, STOPPED_BY_OPERATOR, Session, SessionError, SessionLease, SessionList, SessionScope,
    SessionState,
};
pub use verify::{Rejection, Verdict, VerifiedResponse, Verifier};

/// Current unix time in seconds.
pub fn now_unix() -> i64 {
    chrono::Utc::now().timestamp()
}

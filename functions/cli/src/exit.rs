//! Exit codes (documented in `ma2h --help` and docs/cli.md) and the mapping from outcomes and
//! errors to them.

use ma2h_client::{ClientError, MessageRead, SessionError};
use serde_json::Value;

pub const OK: u8 = 0;
pub const FAILURE: u8 = 1;
pub const USAGE: u8 = 2;
pub const UNREACHABLE: u8 = 3;
pub const HUB_ERROR: u8 = 4;
pub const REJECTED: u8 = 5;
pub const DUPLICATE: u8 = 6;
pub const STATE_REJECTED: u8 = 7;
pub const DECLINED: u8 = 10;
pub const EXPIRED: u8 = 11;
pub const CANCELLED: u8 = 12;
pub const STILL_OPEN: u8 = 13;
pub const EMPTY: u8 = 14;
/// The presented session ended (expired, closed by its owner, or purged): register a new one.
pub const SESSION_ENDED: u8 = 15;
/// `session_closed_by_operator`: the account's human stopped this agent — never retry (§16.4.1).
pub const STOPPED: u8 = 16;

pub const TABLE: &str = "\
EXIT CODES:
   0  answered / completed (or: submitted, accepted, sealed, opened)
   1  unexpected failure
   2  usage or configuration error (missing MA2H_* variable, bad flag)
   3  hub unreachable
   4  hub error (§8.5 code printed on stderr)
   5  verify: Response rejected / inbox: an entry rejected (signature, window, replayed jti, not for me)
      / audit verify: the export does not verify (the first bad line is named)
   6  verify / get --once: duplicate resolution, already acted on / ack: not every id acknowledged
   7  open-state: state rejected (tampered, wrong key, other agent)
  10  declined / dismissed
  11  expired (default_on_expire may have applied)
  12  cancelled (an addressed notify: bounced)
  13  still open (no --wait, or --wait N elapsed)
  14  inbox: the mailbox is empty (or --wait elapsed)
  15  session ended or unknown (expired, closed, or purged): run `ma2h session start` and continue
  16  stopped by the operator (session_closed_by_operator): do not retry or re-register; tell a human";

/// A failure that carries its exit code.
#[derive(Debug)]
pub struct Exit {
    pub code: u8,
    pub message: String,
}

impl std::fmt::Display for Exit {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Exit {}

pub fn fail(code: u8, message: impl Into<String>) -> anyhow::Error {
    Exit { code, message: message.into() }.into()
}

pub fn usage(message: impl Into<String>) -> anyhow::Error {
    fail(USAGE, message)
}

/// A client error as an exit.
pub fn client(e: ClientError) -> anyhow::Error {
    let code = match &e {
        _ if e.is_stopped_by_operator() => STOPPED,
        ClientError::Config(_) => USAGE,
        ClientError::Unreachable { .. } => UNREACHABLE,
        ClientError::Hub(_) | ClientError::Protocol(_) => HUB_ERROR,
    };
    fail(code, e.to_string())
}

/// A session error as an exit: 16 for the operator's stop, 15 when a new session is the remedy.
pub fn session(e: SessionError) -> anyhow::Error {
    match e {
        SessionError::Client(c) => client(c),
        SessionError::StoppedByOperator { .. } => fail(STOPPED, e.to_string()),
        SessionError::Ended { .. } | SessionError::Unknown { .. } => fail(SESSION_ENDED, e.to_string()),
        SessionError::RateLimited { .. } => fail(HUB_ERROR, e.to_string()),
        SessionError::LeaseClosed => fail(FAILURE, e.to_string()),
    }
}

/// The resolution a GET body (or a Response, or a cancel body) reports: the embedded
/// `response.resolution` when present, else `status` ([`MessageRead::resolution`]).
pub fn resolution_of(body: &Value) -> String {
    MessageRead::from_json(body).resolution().to_owned()
}

/// §7 outcome → exit code.
pub fn for_resolution(resolution: &str) -> u8 {
    match resolution {
        // an addressed notify's track (§14.2): acknowledged by its addressee
        "answered" | "completed" | "delivered" | "acknowledged" => OK,
        "declined" | "dismissed" => DECLINED,
        "expired" => EXPIRED,
        // a bounced addressed notify: its addressee's session ended before it was acknowledged
        "cancelled" | "bounced" => CANCELLED,
        "open" | "queued" => STILL_OPEN,
        _ => FAILURE,
    }
}

//! The one typed settings struct: defaults, then `MA2H_*` variables, validated at
//! start-up. Secrets are wrapped so `Debug` never prints them.

use std::collections::HashMap;
use std::fmt;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use ma2h_protocol::rules::SizeLimits;

mod audit;
mod env;
mod telemetry;
pub use audit::AuditSettings;
pub use env::Env;
pub use telemetry::TelemetrySettings;

/// `dev` relaxes what production forbids (plain-http public URL, dev credentials); production is
/// the default.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Dev,
    Production,
}

/// A value that must never be printed.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(pub String);

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(<redacted>)")
    }
}

/// The networks a dev-mode Hub may push to when `MA2H_DEV_EGRESS_ALLOW` is unset: this machine.
pub const DEV_LOOPBACK: [&str; 2] = ["127.0.0.0/8", "::1/128"];

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    pub mode: Mode,
    /// Where the local server listens (`MA2H_BIND`).
    pub bind: SocketAddr,
    /// Base of `poll_url`/`review_url` in acks (`MA2H_PUBLIC_URL`), without a trailing slash.
    pub public_url: String,
    /// The account the inbox's single sign-on signs in to when the login names none
    /// (`MA2H_SSO_ACCOUNT`): a Hub serving one team hides the login page's account field.
    pub sso_account: Option<ma2h_protocol::ids::AccountId>,
    /// Local data directory (`MA2H_DATA_DIR`): the SQLite file and, if generated, the master key.
    pub data_dir: PathBuf,
    /// 32-byte key sealing stored secrets, base64 (`MA2H_MASTER_KEY`); generated into the data
    /// directory when unset.
    pub master_key: Option<Secret>,
    pub limits: SizeLimits,
    /// §8.6 per-agent submits per minute; 0 disables (`MA2H_REQUESTS_PER_MINUTE`).
    pub requests_per_minute: u32,
    /// Failed authentications per client address per minute before they answer 429; 0 disables
    /// (`MA2H_AUTH_FAILURES_PER_MINUTE`).
    pub auth_failures_per_minute: u32,
    /// How long a verified API key is kept in memory (`MA2H_CREDENTIAL_CACHE_MS`; 0 reads the
    /// store on every request): the longest a revoke made by another process goes unseen.
    pub credential_cache: Duration,
    /// §8.6 max open asks/tasks per agent; 0 disables (`MA2H_INBOX_DEPTH`).
    pub inbox_depth: u32,
    /// §8.2 retention after resolution (`MA2H_RETENTION_DAYS`).
    pub retention_days: u32,
    /// §8.1 idempotency window (`MA2H_IDEMPOTENCY_TTL_HOURS`, at least 24).
    pub idempotency_ttl_hours: u32,
    /// §9.2 replay window advertised to agents (`MA2H_REPLAY_WINDOW_SECONDS`).
    pub replay_window_seconds: u32,
    /// §8.2 long-poll maximum (`MA2H_LONG_POLL_MAX_SECONDS`, at most 60).
    pub long_poll_max_seconds: u32,
    /// How often the background sweeper runs (`MA2H_SWEEP_INTERVAL_MS`).
    pub sweep_interval: Duration,
    /// How long one sweep keeps expiring while due messages remain (`MA2H_SWEEP_BUDGET_SECONDS`,
    /// default 30: inside the sweep function's 60 s timeout).
    pub sweep_budget: Duration,
    /// Due expiries one sweep settles at once (`MA2H_SWEEP_CONCURRENCY`, default 16, 1–256):
    /// each is a few store requests, so a sweep's throughput grows with it (issue 38).
    pub sweep_concurrency: usize,
    /// Where the live inbox's stream cannot be held open (Lambda behind API Gateway), how often
    /// an open inbox tab reads its pulse (`MA2H_LIVE_POLL_SECONDS`, 2–3600; issue 39).
    pub live_poll: Duration,
    /// Log as JSON lines instead of human-readable text (`MA2H_LOG_JSON`).
    pub log_json: bool,
    /// §8.3 push retries: the caps on attempts and on total duration, and the backoff.
    pub push: PushSettings,
    /// Hub Ed25519 signing seed, base64 (`MA2H_ED25519_SEED`); generated into the data directory
    /// when unset.
    pub ed25519_seed: Option<Secret>,
    /// Public keys (base64url) of previous Hub Ed25519 keys still published during a rotation
    /// overlap (`MA2H_ED25519_PREVIOUS`, comma-separated).
    pub ed25519_previous: Vec<String>,
    /// Dev mode only: networks push egress may reach despite §9.4 (`MA2H_DEV_EGRESS_ALLOW`,
    /// comma-separated CIDRs; `none` = nothing; unset = nothing, except on the local binary,
    /// which defaults to [`DEV_LOOPBACK`]). Ignored — fails closed — in production.
    pub dev_egress_allow: Vec<String>,
    /// The local server's connection limits (the Lambda deployment has API Gateway's).
    pub server: ServerSettings,
    /// The §8.7 agent mailbox and §15 presence (advertised as `inbound` / `presence`).
    pub mailbox: MailboxSettings,
    /// §16 agent sessions (advertised as `sessions`).
    pub sessions: SessionSettings,
    /// The inter-agent leg and the live stream (§8.0 `inter_agent`, §8.7.2).
    pub inter_agent: InterAgentSettings,
    /// Channel notifications (issue 20): Slack's API base and the configuration cache.
    pub channels: ChannelSettings,
    /// OpenTelemetry trace export (issue 43; off by default).
    pub telemetry: TelemetrySettings,
    /// The audit ledger (issue 42).
    pub audit: AuditSettings,
}

/// Channel notifications (issue 20).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChannelSettings {
    /// Slack's Web API base, without a trailing slash (`MA2H_SLACK_API_URL`; tests point it at a
    /// stand-in on loopback).
    pub slack_api_url: String,
    /// How long an account's channels and routes are kept in memory for the submit path
    /// (`MA2H_CHANNELS_CACHE_MS`; 0 reads them on every routed submit): the longest an edit made
    /// by another process goes unseen.
    pub config_cache: Duration,
}

impl Default for ChannelSettings {
    fn default() -> Self {
        Self { slack_api_url: "https://slack.com/api".into(), config_cache: Duration::from_millis(5000) }
    }
}

/// The inter-agent leg's deployment bounds (§8.0 `inter_agent`, `rate_limit`) and the optional
/// SSE stream (§8.7.2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InterAgentSettings {
    /// The deployment ceiling (`MA2H_INTER_AGENT`, default on): when off, no account may opt in
    /// and the capability document says `enabled: false`. Each account still opts in itself.
    pub enabled: bool,
    /// Addressed submits one sender may make per minute (`MA2H_INTER_AGENT_REQUESTS_PER_MINUTE`).
    pub requests_per_minute: u32,
    /// Longest stream hold (`MA2H_STREAM_MAX_HOLD_SECONDS`); at most the presence window.
    pub stream_max_hold: Duration,
    /// Whether this process serves `inbound.stream_url` (the local binary does; a Lambda
    /// function behind API Gateway cannot hold a response open, so it never advertises one).
    pub stream_served: bool,
}

impl Default for InterAgentSettings {
    fn default() -> Self {
        Self { enabled: true, requests_per_minute: 120, stream_max_hold: Duration::from_secs(25), stream_served: false }
    }
}

/// The session primitive's bounds (§8.0 `sessions`, §16).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionSettings {
    /// Shortest lease; a shorter request is clamped up (`MA2H_SESSION_MIN_TTL_SECONDS`).
    pub min_ttl_seconds: u32,
    /// Longest lease; a longer request is clamped down (`MA2H_SESSION_MAX_TTL_SECONDS`).
    pub max_ttl_seconds: u32,
    /// The lease when the registration names none (`MA2H_SESSION_DEFAULT_TTL_SECONDS`).
    pub default_ttl_seconds: u32,
    /// Live sessions one principal may hold; one more answers 429 (`MA2H_SESSION_MAX_LIVE`).
    pub max_live_per_agent: u32,
    /// Terminal sessions stay readable this long, then are purged
    /// (`MA2H_SESSION_RETENTION_SECONDS`).
    pub terminal_retention_seconds: u32,
}

impl Default for SessionSettings {
    fn default() -> Self {
        Self {
            min_ttl_seconds: 60,
            max_ttl_seconds: 3600,
            default_ttl_seconds: 900,
            max_live_per_agent: 16,
            terminal_retention_seconds: 86_400,
        }
    }
}

impl SessionSettings {
    /// §16.1: the requested TTL clamped into `[min, max]` (the default when none was asked).
    pub fn clamp_ttl(&self, requested: Option<u64>) -> u32 {
        let asked = requested.unwrap_or(u64::from(self.default_ttl_seconds));
        u32::try_from(asked.clamp(u64::from(self.min_ttl_seconds), u64::from(self.max_ttl_seconds)))
            .unwrap_or(self.max_ttl_seconds)
    }

    pub fn terminal_retention(&self) -> chrono::Duration {
        chrono::Duration::seconds(i64::from(self.terminal_retention_seconds))
    }
}

/// The human→agent leg's bounds (§8.0 `inbound`, `presence`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MailboxSettings {
    /// Most entries one drain returns (`MA2H_INBOX_MAX_BATCH`, 1..=100).
    pub max_batch: u32,
    /// How long a drained, un-acked entry stays hidden before redelivery
    /// (`MA2H_VISIBILITY_TIMEOUT_SECONDS`).
    pub visibility_timeout: Duration,
    /// An un-acked directive without `expires_at` is dropped after this (§13.3,
    /// `MA2H_INBOUND_RETENTION_DAYS`); closed entries stay readable to operators as long again.
    pub retention_days: u32,
    /// §15.2 window `W`: seen within it reads `online` (`MA2H_PRESENCE_FRESHNESS_SECONDS`).
    pub presence_freshness: Duration,
    /// Most live entries one mailbox holds; a directive beyond it answers 429
    /// (`MA2H_MAILBOX_DEPTH`).
    pub depth: u32,
    /// Most bytes of entries one drain returns (`MA2H_DRAIN_MAX_BYTES`; at least one entry of
    /// the largest size, `MA2H_MAX_ENVELOPE_BYTES`): what is left stays queued for the next
    /// drain, so one response can never pin more than this much memory (issue 36).
    pub drain_max_bytes: usize,
}

impl Default for MailboxSettings {
    fn default() -> Self {
        Self {
            max_batch: 32,
            visibility_timeout: Duration::from_secs(60),
            retention_days: 30,
            presence_freshness: Duration::from_secs(90),
            depth: 1000,
            drain_max_bytes: 8 << 20,
        }
    }
}

impl MailboxSettings {
    /// How often presence is written at most per agent: `max(1 s, W / 6)`. A stored `last_seen`
    /// lags real activity by less than this, so presence may read `offline` early but never
    /// `online` without activity (§15.1).
    pub fn presence_granularity(&self) -> Duration {
        (self.presence_freshness / 6).max(Duration::from_secs(1))
    }
}

/// Connection hygiene for the local server: no client may hold a connection (or a share of the
/// file descriptors) without sending a request at a reasonable pace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServerSettings {
    /// Time to send a request's headers — and how long an idle keep-alive connection waits for
    /// the next request (`MA2H_HEADER_TIMEOUT_SECONDS`).
    pub header_timeout: Duration,
    /// Time to send a whole request body once the headers are in (`MA2H_BODY_TIMEOUT_SECONDS`).
    pub body_timeout: Duration,
    /// Open connections at once; more wait in the kernel's backlog (`MA2H_MAX_CONNECTIONS`;
    /// lowered at start-up to fit the process's file-descriptor limit).
    pub max_connections: usize,
    /// Open connections from one client address (`MA2H_MAX_CONNECTIONS_PER_IP`); more are closed
    /// at once.
    pub max_connections_per_ip: usize,
    /// Threads running HTTP requests (`MA2H_WORKER_THREADS`; `0`, the default, = the machine's
    /// cores less one, at least one): the SQLite writer is a thread of its own and busy under
    /// load, so one core is left to it. On a 2-core machine one request thread instead of two
    /// made durable submits 15–30 % faster (docs/BENCHMARKS.md): fewer wake-ups between threads.
    pub worker_threads: usize,
    /// How long a response write may stay blocked on a reader that takes nothing
    /// (`MA2H_WRITE_STALL_SECONDS`): then the connection is dropped and what it held is freed. A
    /// slow reader that keeps taking bytes is never cut off (issue 36).
    pub write_stall: Duration,
}

impl ServerSettings {
    /// The request threads to start: [`Self::worker_threads`], or when `0`, `cores` less one
    /// (at least one).
    pub fn request_threads(&self, cores: usize) -> usize {
        if self.worker_threads > 0 { self.worker_threads } else { cores.saturating_sub(1).max(1) }
    }
}

impl Default for ServerSettings {
    fn default() -> Self {
        Self {
            header_timeout: Duration::from_secs(10),
            body_timeout: Duration::from_secs(30),
            max_connections: 4096,
            max_connections_per_ip: 256,
            worker_threads: 0,
            write_stall: Duration::from_secs(20),
        }
    }
}

/// §8.3 delivery policy (advertised in the capability document).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PushSettings {
    /// At least 5 (§8.3) (`MA2H_PUSH_MAX_ATTEMPTS`).
    pub max_attempts: u32,
    /// Give up after this long since the resolution (`MA2H_PUSH_MAX_DURATION_SECONDS`).
    pub max_duration: Duration,
    /// First retry delay; doubles per attempt, with jitter (`MA2H_PUSH_BACKOFF_MS`).
    pub backoff_base: Duration,
    /// Cap on one retry delay (`MA2H_PUSH_BACKOFF_MAX_MS`).
    pub backoff_max: Duration,
    /// Per-attempt connect and total timeouts (`MA2H_PUSH_CONNECT_TIMEOUT_MS`, `MA2H_PUSH_TIMEOUT_MS`).
    pub connect_timeout: Duration,
    pub total_timeout: Duration,
    /// Attempts in flight at once in the local worker (`MA2H_PUSH_MAX_IN_FLIGHT`).
    pub max_in_flight: usize,
    /// Attempts in flight at once to one callback host over every account
    /// (`MA2H_PUSH_PER_HOST`), so one slow receiver never holds every slot.
    pub per_host: usize,
    /// Attempts in flight at once of one account to one host (`MA2H_PUSH_PER_ACCOUNT_HOST`): an
    /// account's tarpit leaves other accounts the rest of that host's slots.
    pub per_account_host: usize,
    /// Attempts in flight at once of one account over every host (`MA2H_PUSH_PER_ACCOUNT`): an
    /// account's tarpits spread over many hosts leave other accounts the rest of the worker.
    pub per_account: usize,
}

impl Default for PushSettings {
    fn default() -> Self {
        Self {
            max_attempts: 8,
            max_duration: Duration::from_secs(3600),
            backoff_base: Duration::from_secs(2),
            backoff_max: Duration::from_secs(300),
            connect_timeout: Duration::from_secs(5),
            total_timeout: Duration::from_secs(10),
            max_in_flight: 64,
            per_host: 16,
            per_account_host: 4,
            per_account: 16,
        }
    }
}

impl Default for Settings {
    fn default() -> Self {
        Self {
            mode: Mode::Production,
            bind: SocketAddr::from(([127, 0, 0, 1], 8080)),
            public_url: "http://127.0.0.1:8080".into(),
            sso_account: None,
            data_dir: PathBuf::from("data"),
            master_key: None,
            limits: SizeLimits::default(),
            requests_per_minute: 600,
            auth_failures_per_minute: 20,
            credential_cache: Duration::from_millis(1000),
            inbox_depth: 1000,
            retention_days: 30,
            idempotency_ttl_hours: 48,
            replay_window_seconds: 120,
            long_poll_max_seconds: 30,
            sweep_interval: Duration::from_millis(1000),
            sweep_budget: Duration::from_secs(30),
            sweep_concurrency: 16,
            live_poll: Duration::from_secs(20),
            log_json: false,
            push: PushSettings::default(),
            ed25519_seed: None,
            ed25519_previous: Vec::new(),
            dev_egress_allow: Vec::new(),
            server: ServerSettings::default(),
            mailbox: MailboxSettings::default(),
            sessions: SessionSettings::default(),
            inter_agent: InterAgentSettings::default(),
            channels: ChannelSettings::default(),
            telemetry: TelemetrySettings::default(),
            audit: AuditSettings::default(),
        }
    }
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("invalid configuration: {0}")]
pub struct SettingsError(pub String);

impl Settings {
    /// Defaults overridden by the process environment.
    pub fn from_env() -> Result<Self, SettingsError> {
        Self::from_vars(std::env::vars())
    }

    /// Defaults overridden by `MA2H_*` variables from `vars`, then validated. Every bad
    /// variable is named in the one error, not only the first.
    pub fn from_vars(vars: impl IntoIterator<Item = (String, String)>) -> Result<Self, SettingsError> {
        // the Lambda function's name is the default `service.name` of its traces
        let vars: HashMap<String, String> =
            vars.into_iter().filter(|(k, _)| k.starts_with("MA2H_") || k == "AWS_LAMBDA_FUNCTION_NAME").collect();
        let mut e = Env::new(|k| vars.get(k).cloned());
        let mut s = Self::default();
        s.read(&mut e);
        s.check(&mut e);
        e.finish()?;
        Ok(s)
    }

    /// Each variable, named once.
    fn read(&mut self, e: &mut Env<'_>) {
        let s = self;
        e.parse("MA2H_MODE", &mut s.mode, |m| match m {
            "dev" => Ok(Mode::Dev),
            "production" | "prod" => Ok(Mode::Production),
            _ => Err("must be `dev` or `production`".into()),
        });
        e.parse("MA2H_BIND", &mut s.bind, |b| b.parse().map_err(|_| "must be HOST:PORT".into()));
        e.parse("MA2H_PUBLIC_URL", &mut s.public_url, |u| Ok(u.trim_end_matches('/').to_owned()));
        e.parse("MA2H_SSO_ACCOUNT", &mut s.sso_account, |a| match a.trim() {
            "" => Ok(None),
            a => ma2h_protocol::ids::AccountId::parse(a).map(Some).ok_or_else(|| "must be an account id".into()),
        });
        e.parse("MA2H_DATA_DIR", &mut s.data_dir, |d| Ok(PathBuf::from(d)));
        s.master_key = e.secret("MA2H_MASTER_KEY");
        e.size("MA2H_MAX_BODY_BYTES", &mut s.limits.max_body_bytes);
        e.size("MA2H_MAX_PART_BYTES", &mut s.limits.max_part_bytes);
        e.int("MA2H_MAX_CONTEXT_PARTS", &mut s.limits.max_context_parts);
        e.size("MA2H_MAX_STATE_BYTES", &mut s.limits.max_state_bytes);
        e.size("MA2H_MAX_ENVELOPE_BYTES", &mut s.limits.max_envelope_bytes);
        e.int("MA2H_REQUESTS_PER_MINUTE", &mut s.requests_per_minute);
        e.int("MA2H_INBOX_DEPTH", &mut s.inbox_depth);
        e.int("MA2H_AUTH_FAILURES_PER_MINUTE", &mut s.auth_failures_per_minute);
        e.duration("MA2H_CREDENTIAL_CACHE_MS", &mut s.credential_cache);
        e.parse("MA2H_SLACK_API_URL", &mut s.channels.slack_api_url, |u| {
            let u = u.trim_end_matches('/');
            match u.starts_with("https://") || u.starts_with("http://") {
                true => Ok(u.to_owned()),
                false => Err("must be an http(s) URL".into()),
            }
        });
        e.duration("MA2H_CHANNELS_CACHE_MS", &mut s.channels.config_cache);
        e.int("MA2H_RETENTION_DAYS", &mut s.retention_days);
        e.int("MA2H_IDEMPOTENCY_TTL_HOURS", &mut s.idempotency_ttl_hours);
        e.int("MA2H_REPLAY_WINDOW_SECONDS", &mut s.replay_window_seconds);
        e.int("MA2H_LONG_POLL_MAX_SECONDS", &mut s.long_poll_max_seconds);
        e.duration("MA2H_SWEEP_INTERVAL_MS", &mut s.sweep_interval);
        e.duration("MA2H_SWEEP_BUDGET_SECONDS", &mut s.sweep_budget);
        e.int("MA2H_SWEEP_CONCURRENCY", &mut s.sweep_concurrency);
        e.duration("MA2H_LIVE_POLL_SECONDS", &mut s.live_poll);
        let p = &mut s.push;
        e.int("MA2H_PUSH_MAX_ATTEMPTS", &mut p.max_attempts);
        e.duration("MA2H_PUSH_MAX_DURATION_SECONDS", &mut p.max_duration);
        e.duration("MA2H_PUSH_BACKOFF_MS", &mut p.backoff_base);
        e.duration("MA2H_PUSH_BACKOFF_MAX_MS", &mut p.backoff_max);
        e.duration("MA2H_PUSH_CONNECT_TIMEOUT_MS", &mut p.connect_timeout);
        e.duration("MA2H_PUSH_TIMEOUT_MS", &mut p.total_timeout);
        e.int("MA2H_PUSH_MAX_IN_FLIGHT", &mut p.max_in_flight);
        e.int("MA2H_PUSH_PER_HOST", &mut p.per_host);
        e.int("MA2H_PUSH_PER_ACCOUNT_HOST", &mut p.per_account_host);
        e.int("MA2H_PUSH_PER_ACCOUNT", &mut p.per_account);
        let srv = &mut s.server;
        e.duration("MA2H_HEADER_TIMEOUT_SECONDS", &mut srv.header_timeout);
        e.duration("MA2H_BODY_TIMEOUT_SECONDS", &mut srv.body_timeout);
        e.duration("MA2H_WRITE_STALL_SECONDS", &mut srv.write_stall);
        e.int("MA2H_MAX_CONNECTIONS", &mut srv.max_connections);
        e.int("MA2H_MAX_CONNECTIONS_PER_IP", &mut srv.max_connections_per_ip);
        e.int("MA2H_WORKER_THREADS", &mut srv.worker_threads);
        let mb = &mut s.mailbox;
        e.int("MA2H_INBOX_MAX_BATCH", &mut mb.max_batch);
        e.duration("MA2H_VISIBILITY_TIMEOUT_SECONDS", &mut mb.visibility_timeout);
        e.int("MA2H_INBOUND_RETENTION_DAYS", &mut mb.retention_days);
        e.duration("MA2H_PRESENCE_FRESHNESS_SECONDS", &mut mb.presence_freshness);
        e.int("MA2H_MAILBOX_DEPTH", &mut mb.depth);
        e.size("MA2H_DRAIN_MAX_BYTES", &mut mb.drain_max_bytes);
        let ss = &mut s.sessions;
        e.int("MA2H_SESSION_MIN_TTL_SECONDS", &mut ss.min_ttl_seconds);
        e.int("MA2H_SESSION_MAX_TTL_SECONDS", &mut ss.max_ttl_seconds);
        e.int("MA2H_SESSION_DEFAULT_TTL_SECONDS", &mut ss.default_ttl_seconds);
        e.int("MA2H_SESSION_MAX_LIVE", &mut ss.max_live_per_agent);
        e.int("MA2H_SESSION_RETENTION_SECONDS", &mut ss.terminal_retention_seconds);
        let ia = &mut s.inter_agent;
        e.bool("MA2H_INTER_AGENT", &mut ia.enabled);
        e.int("MA2H_INTER_AGENT_REQUESTS_PER_MINUTE", &mut ia.requests_per_minute);
        e.duration("MA2H_STREAM_MAX_HOLD_SECONDS", &mut ia.stream_max_hold);
        s.ed25519_seed = e.secret("MA2H_ED25519_SEED");
        s.ed25519_previous = e.list("MA2H_ED25519_PREVIOUS").unwrap_or_default();
        // `none` says "nothing" explicitly (the local binary's dev default is loopback, see
        // [`Settings::local_dev_egress`]). Production ignores the list (§9.4 fails closed).
        s.dev_egress_allow = e.list("MA2H_DEV_EGRESS_ALLOW").filter(|l| l != &["none"]).unwrap_or_default();
        e.bool("MA2H_LOG_JSON", &mut s.log_json);
        s.telemetry.read(e);
        s.audit.read(e);
    }

    /// The local binary in dev mode reaches a receiver on this machine out of the box (`ma2h
    /// listen`, the push example) unless `MA2H_DEV_EGRESS_ALLOW` was given (`none` included).
    /// Not for Lambda: there loopback is the runtime API.
    pub fn local_dev_egress(&mut self, configured: bool) {
        if self.mode == Mode::Dev && !configured {
            self.dev_egress_allow = DEV_LOOPBACK.iter().map(|n| (*n).to_owned()).collect();
        }
    }

    /// Start-up checks: refuse a configuration that would misbehave later.
    pub fn validate(&self) -> Result<(), SettingsError> {
        let mut e = Env::new(|_| None);
        self.check(&mut e);
        e.finish()
    }

    /// Every start-up check, each failure recorded (not only the first).
    fn check(&self, e: &mut Env<'_>) {
        let mut err = |m: &str| e.refuse(m);
        if !(self.public_url.starts_with("https://") || self.public_url.starts_with("http://")) {
            err("MA2H_PUBLIC_URL must be an http(s) URL");
        }
        if self.mode == Mode::Production && !self.public_url.starts_with("https://") {
            err(
                "MA2H_PUBLIC_URL must be https:// in production mode (§8: plaintext MUST NOT be offered); set MA2H_MODE=dev for local use",
            );
        }
        let l = &self.limits;
        if l.max_body_bytes == 0 || l.max_part_bytes == 0 || l.max_state_bytes == 0 {
            err("MA2H_MAX_BODY_BYTES, MA2H_MAX_PART_BYTES and MA2H_MAX_STATE_BYTES must be at least 1");
        }
        if l.max_envelope_bytes < 4096 {
            err("MA2H_MAX_ENVELOPE_BYTES must be at least 4096");
        }
        if self.retention_days == 0 {
            err("MA2H_RETENTION_DAYS must be at least 1");
        }
        if self.idempotency_ttl_hours < 24 {
            err("MA2H_IDEMPOTENCY_TTL_HOURS must be at least 24 (§8.1)");
        }
        if self.replay_window_seconds == 0 {
            err("MA2H_REPLAY_WINDOW_SECONDS must be at least 1");
        }
        if self.long_poll_max_seconds > 60 {
            err("MA2H_LONG_POLL_MAX_SECONDS must be at most 60 (§8.2)");
        }
        if self.push.max_attempts < 5 {
            err("MA2H_PUSH_MAX_ATTEMPTS must be at least 5 (§8.3)");
        }
        if self.push.backoff_base.is_zero() || self.push.total_timeout.is_zero() || self.push.connect_timeout.is_zero()
        {
            err("MA2H_PUSH_BACKOFF_MS, MA2H_PUSH_TIMEOUT_MS and MA2H_PUSH_CONNECT_TIMEOUT_MS must be at least 1");
        }
        let p = &self.push;
        if [p.max_in_flight, p.per_host, p.per_account_host, p.per_account].contains(&0) {
            err(
                "MA2H_PUSH_MAX_IN_FLIGHT, MA2H_PUSH_PER_HOST, MA2H_PUSH_PER_ACCOUNT_HOST and MA2H_PUSH_PER_ACCOUNT must be at least 1",
            );
        }
        if self.push.max_duration.is_zero() {
            err("MA2H_PUSH_MAX_DURATION_SECONDS must be at least 1");
        }
        let srv = &self.server;
        if srv.header_timeout.is_zero() || srv.body_timeout.is_zero() || srv.write_stall.is_zero() {
            err(
                "MA2H_HEADER_TIMEOUT_SECONDS, MA2H_BODY_TIMEOUT_SECONDS and MA2H_WRITE_STALL_SECONDS must be at least 1",
            );
        }
        if self.mailbox.drain_max_bytes < self.limits.max_envelope_bytes {
            err("MA2H_DRAIN_MAX_BYTES must be at least MA2H_MAX_ENVELOPE_BYTES (one entry always fits)");
        }
        if srv.max_connections == 0 || srv.max_connections_per_ip == 0 {
            err("MA2H_MAX_CONNECTIONS and MA2H_MAX_CONNECTIONS_PER_IP must be at least 1");
        }
        if srv.worker_threads > 1024 {
            err("MA2H_WORKER_THREADS must be at most 1024 (0 = the cores less one)");
        }
        let ss = &self.sessions;
        if ss.min_ttl_seconds == 0 || ss.min_ttl_seconds > ss.max_ttl_seconds {
            err("MA2H_SESSION_MIN_TTL_SECONDS must be at least 1 and at most MA2H_SESSION_MAX_TTL_SECONDS");
        }
        if ss.max_live_per_agent == 0 {
            err("MA2H_SESSION_MAX_LIVE must be at least 1");
        }
        let mb = &self.mailbox;
        if !(1..=100).contains(&mb.max_batch) {
            err("MA2H_INBOX_MAX_BATCH must be between 1 and 100");
        }
        if mb.visibility_timeout.is_zero() || mb.retention_days == 0 || mb.depth == 0 {
            err(
                "MA2H_VISIBILITY_TIMEOUT_SECONDS, MA2H_INBOUND_RETENTION_DAYS and MA2H_MAILBOX_DEPTH must be at least 1",
            );
        }
        // A steady long-poller must never flap to offline between two polls (§15.2).
        if mb.presence_freshness
            <= Duration::from_secs(u64::from(self.long_poll_max_seconds)) + mb.presence_granularity()
        {
            err(
                "MA2H_PRESENCE_FRESHNESS_SECONDS must exceed MA2H_LONG_POLL_MAX_SECONDS by more than its sixth (at least 1 s)",
            );
        }
        if self.sweep_budget > Duration::from_secs(600) {
            err("MA2H_SWEEP_BUDGET_SECONDS must be at most 600");
        }
        if !(1..=256).contains(&self.sweep_concurrency) {
            err("MA2H_SWEEP_CONCURRENCY must be 1–256");
        }
        if !(2..=3600).contains(&self.live_poll.as_secs()) {
            err("MA2H_LIVE_POLL_SECONDS must be 2–3600");
        }
        if self.sweep_interval.is_zero() {
            err("MA2H_SWEEP_INTERVAL_MS must be at least 1");
        }
        if self.inter_agent.stream_max_hold.is_zero() {
            err("MA2H_STREAM_MAX_HOLD_SECONDS must be at least 1");
        }
    }

    /// §8.0/§8.7.2: the stream hold in force — never longer than the presence window, or a
    /// healthy held stream would read offline mid-hold.
    pub fn stream_hold(&self) -> Duration {
        self.inter_agent.stream_max_hold.min(self.mailbox.presence_freshness)
    }

    /// The largest request body the HTTP layer buffers: the envelope cap and one byte, so an
    /// over-size envelope is read no further than needed and still answered with the §8.6 422.
    pub fn max_request_bytes(&self) -> usize {
        self.limits.max_envelope_bytes + 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn the_sso_account_is_an_account_id_and_blank_means_none() {
        let s = Settings::from_vars(vars(&[("MA2H_MODE", "dev"), ("MA2H_SSO_ACCOUNT", "acme")])).unwrap();
        assert_eq!(s.sso_account.as_ref().map(|a| a.as_str()), Some("acme"));
        assert_eq!(
            Settings::from_vars(vars(&[("MA2H_MODE", "dev"), ("MA2H_SSO_ACCOUNT", " ")])).unwrap().sso_account,
            None
        );
        let long = "a".repeat(201);
        let e = Settings::from_vars(vars(&[("MA2H_MODE", "dev"), ("MA2H_SSO_ACCOUNT", &long)])).unwrap_err();
        assert!(e.0.contains("MA2H_SSO_ACCOUNT"), "{}", e.0);
    }

    #[test]
    fn production_is_the_default_and_refuses_a_plain_http_public_url() {
        let e = Settings::from_vars(vars(&[])).unwrap_err();
        assert!(e.0.contains("https"), "{e}");
        let s = Settings::from_vars(vars(&[("MA2H_PUBLIC_URL", "https://hub.example/")])).unwrap();
        assert_eq!(s.mode, Mode::Production);
        assert_eq!(s.public_url, "https://hub.example");
    }

    #[test]
    fn dev_egress_reaches_loopback_on_the_local_binary_unless_configured_otherwise() {
        let dev = |extra: &[(&str, &str)]| {
            let mut v = vars(&[("MA2H_MODE", "dev")]);
            v.extend(vars(extra));
            let mut s = Settings::from_vars(v).unwrap();
            s.local_dev_egress(!extra.is_empty());
            s.dev_egress_allow
        };
        assert_eq!(dev(&[]), vec!["127.0.0.0/8".to_owned(), "::1/128".to_owned()]);
        assert!(dev(&[("MA2H_DEV_EGRESS_ALLOW", "none")]).is_empty());
        let lambda = Settings::from_vars(vars(&[("MA2H_MODE", "dev")])).unwrap();
        assert!(lambda.dev_egress_allow.is_empty(), "without the local binary's call, nothing");
        let mut prod = Settings::from_vars(vars(&[("MA2H_PUBLIC_URL", "https://hub.example")])).unwrap();
        prod.local_dev_egress(false);
        assert!(prod.dev_egress_allow.is_empty(), "production never");
        assert_eq!(
            dev(&[("MA2H_DEV_EGRESS_ALLOW", "10.0.0.0/8, 192.168.0.0/16")]),
            vec!["10.0.0.0/8".to_owned(), "192.168.0.0/16".to_owned()]
        );
    }

    #[test]
    fn env_overrides_defaults_and_bad_values_are_rejected() {
        let s = Settings::from_vars(vars(&[
            ("MA2H_MODE", "dev"),
            ("MA2H_INBOX_DEPTH", "5"),
            ("MA2H_BIND", "0.0.0.0:9000"),
            ("MA2H_SWEEP_CONCURRENCY", "64"),
        ]))
        .unwrap();
        assert_eq!((s.inbox_depth, s.sweep_concurrency), (5, 64));
        assert_eq!(Settings::default().sweep_concurrency, 16);
        assert!(Settings::from_vars(vars(&[("MA2H_MODE", "dev"), ("MA2H_SWEEP_CONCURRENCY", "0")])).is_err());
        assert!(Settings::from_vars(vars(&[("MA2H_MODE", "dev"), ("MA2H_SWEEP_CONCURRENCY", "257")])).is_err());
        assert_eq!(s.bind.port(), 9000);
        assert!(Settings::from_vars(vars(&[("MA2H_MODE", "dev"), ("MA2H_INBOX_DEPTH", "-1")])).is_err());
        assert!(Settings::from_vars(vars(&[("MA2H_MODE", "dev"), ("MA2H_LONG_POLL_MAX_SECONDS", "61")])).is_err());
        assert!(Settings::from_vars(vars(&[("MA2H_MODE", "dev"), ("MA2H_IDEMPOTENCY_TTL_HOURS", "1")])).is_err());
        assert!(Settings::from_vars(vars(&[("MA2H_MODE", "weird")])).is_err());
    }

    #[test]
    fn request_threads_leave_a_core_to_the_writer_unless_set() {
        let auto = Settings::from_vars(vars(&[("MA2H_MODE", "dev")])).unwrap().server;
        assert_eq!((auto.request_threads(1), auto.request_threads(2), auto.request_threads(8)), (1, 1, 7));
        let set = Settings::from_vars(vars(&[("MA2H_MODE", "dev"), ("MA2H_WORKER_THREADS", "3")])).unwrap().server;
        assert_eq!(set.request_threads(2), 3);
        assert!(Settings::from_vars(vars(&[("MA2H_MODE", "dev"), ("MA2H_WORKER_THREADS", "5000")])).is_err());
        assert!(Settings::from_vars(vars(&[("MA2H_MODE", "dev"), ("MA2H_WORKER_THREADS", "two")])).is_err());
    }

    #[test]
    fn mailbox_settings_are_read_and_a_flapping_presence_window_is_refused() {
        let vars = |pairs: &[(&str, &str)]| {
            let dev = std::iter::once(("MA2H_MODE".to_owned(), "dev".to_owned()));
            Settings::from_vars(dev.chain(pairs.iter().map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))))
        };
        let s = vars(&[
            ("MA2H_INBOX_MAX_BATCH", "5"),
            ("MA2H_VISIBILITY_TIMEOUT_SECONDS", "2"),
            ("MA2H_PRESENCE_FRESHNESS_SECONDS", "4"),
            ("MA2H_LONG_POLL_MAX_SECONDS", "2"),
        ])
        .unwrap();
        assert_eq!((s.mailbox.max_batch, s.mailbox.visibility_timeout), (5, Duration::from_secs(2)));
        assert_eq!(s.mailbox.presence_granularity(), Duration::from_secs(1), "never under 1 s");
        // 4 s does not exceed a 3 s long-poll plus its 1 s granularity: a poller would flap.
        assert!(vars(&[("MA2H_PRESENCE_FRESHNESS_SECONDS", "4"), ("MA2H_LONG_POLL_MAX_SECONDS", "3")]).is_err());
        assert!(vars(&[("MA2H_INBOX_MAX_BATCH", "0")]).is_err());
        assert!(vars(&[("MA2H_INBOX_MAX_BATCH", "101")]).is_err());
        assert!(vars(&[("MA2H_MAILBOX_DEPTH", "0")]).is_err());
    }

    #[test]
    fn session_ttls_are_clamped_into_the_configured_bounds() {
        let s = Settings::from_vars([
            ("MA2H_MODE".to_owned(), "dev".to_owned()),
            ("MA2H_SESSION_MIN_TTL_SECONDS".to_owned(), "30".to_owned()),
            ("MA2H_SESSION_MAX_TTL_SECONDS".to_owned(), "600".to_owned()),
        ])
        .unwrap();
        let ss = s.sessions;
        assert_eq!((ss.clamp_ttl(Some(1)), ss.clamp_ttl(Some(10_000)), ss.clamp_ttl(Some(45))), (30, 600, 45));
        assert_eq!(ss.clamp_ttl(None), 600, "the 900 s default is clamped like a request");
        let bad =
            [("MA2H_MODE", "dev"), ("MA2H_SESSION_MIN_TTL_SECONDS", "700"), ("MA2H_SESSION_MAX_TTL_SECONDS", "600")];
        assert!(Settings::from_vars(bad.map(|(k, v)| (k.to_owned(), v.to_owned()))).is_err());
    }

    #[test]
    fn start_up_names_every_bad_variable_at_once() {
        let e = Settings::from_vars(vars(&[
            ("MA2H_MODE", "dev"),
            ("MA2H_INBOX_DEPTH", "-1"),
            ("MA2H_LOG_JSON", "maybe"),
            ("MA2H_LONG_POLL_MAX_SECONDS", "61"),
            ("MA2H_PUSH_BACKOFF_MS", "soon"),
        ]))
        .unwrap_err();
        for name in ["MA2H_INBOX_DEPTH", "MA2H_LOG_JSON", "MA2H_LONG_POLL_MAX_SECONDS", "MA2H_PUSH_BACKOFF_MS"] {
            assert!(e.0.contains(name), "{name} missing from {e}");
        }
    }

    #[test]
    fn secrets_are_never_printed() {
        let s = Settings::from_vars(vars(&[("MA2H_MODE", "dev"), ("MA2H_MASTER_KEY", "c3VwZXJzZWNyZXQ=")])).unwrap();
        let dbg = format!("{s:?}");
        assert!(!dbg.contains("c3VwZXJzZWNyZXQ"), "{dbg}");
    }
}

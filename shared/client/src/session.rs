//! §16 sessions from the agent's side: register, list, read and close sessions, and
//! [`SessionLease`] — a registered session kept alive by using it.
//!
//! A session is a Hub-minted, lease-bound address (`agent:<id>#<sess>`) under the agent's one
//! credential. Its lease is renewed only by client traffic that **presents** it (§16.2): a drain or
//! an ack with `?session=`, a resolve with `?session=`, or a submit whose `agent.session` names it.
//! There is no heartbeat: a [`SessionLease`] adds the session to every such call it makes.
//!
//! How a session ends decides what its owner must do (§16.3, §16.4.1):
//!
//! | the Hub says | meaning | [`SessionError`] | a lease… |
//! |---|---|---|---|
//! | `410 gone` (drain/ack/resolve), `410 destination_gone` (submit) | expired or self-closed | [`SessionError::Ended`] | registers a new session and retries once |
//! | `404` (presenting) / `422` (submit) for its own id | ended and purged | [`SessionError::Unknown`] | the same (the §16.3 self-heal) |
//! | `410` or `403` `session_closed_by_operator` | the operator's kill-switch or hard stop | [`SessionError::StoppedByOperator`] | latches the stop and never calls the Hub again |
//!
//! A stop must reach a human: it is never retried, and a lease never registers through it.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use chrono::{DateTime, Utc};
use serde_json::Value;

use crate::client::{Ack, random_token};
use crate::inbox::{AckOptions, DrainOptions};
use crate::resolve::ResolveOutcome;
use crate::{Client, ClientError, HubErrorBody};

/// The §8.5 code of an operator stop: "stop; do not re-register" (§16.3, §16.4.1).
pub const STOPPED_BY_OPERATOR: &str = "session_closed_by_operator";

/// The body of `POST /v1/sessions` (§16.1, `registerRequest`): every member optional, sent
/// only when set; the Hub may clamp `ttl_seconds` into its advertised bounds.
pub use ma2h_protocol::wire::RegisterSession;

/// A session's state (§16.3): `active` until closed or expired; both terminals are immutable.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SessionState {
    Active,
    Closed,
    Expired,
    /// A state this client does not know (treated as not live).
    Other(String),
}

impl SessionState {
    pub fn parse(s: &str) -> Self {
        match s {
            "active" => Self::Active,
            "closed" => Self::Closed,
            "expired" => Self::Expired,
            other => Self::Other(other.to_owned()),
        }
    }

    pub fn as_str(&self) -> &str {
        match self {
            Self::Active => "active",
            Self::Closed => "closed",
            Self::Expired => "expired",
            Self::Other(s) => s,
        }
    }
}

/// A session resource as the Hub returns it (`session.schema.json`).
#[derive(Debug, Clone, PartialEq)]
pub struct Session {
    /// `sess_…`, Hub-minted.
    pub id: String,
    /// The owning principal's `agent.id`.
    pub agent_id: String,
    pub state: SessionState,
    pub created_at: DateTime<Utc>,
    /// When the lease lapses unless renewed — as of this read; presenting the session moves it.
    pub expires_at: DateTime<Utc>,
    /// The granted lease length (after the Hub's clamp).
    pub ttl_seconds: Option<u64>,
    pub last_seen: Option<DateTime<Utc>>,
    pub closed_at: Option<DateTime<Utc>>,
    /// The operator's kill-switch closed it (true-only on the wire, §16.4).
    pub closed_by_operator: bool,
    pub run_id: Option<String>,
    pub label: Option<String>,
    pub kind: Option<String>,
    pub project: Option<String>,
    pub labels: BTreeMap<String, String>,
    /// The resource exactly as received.
    pub raw: Value,
}

fn protocol(m: impl Into<String>) -> ClientError {
    ClientError::Protocol(m.into())
}

impl Session {
    /// Parse one session resource.
    pub fn from_json(v: &Value) -> Result<Self, ClientError> {
        let obj = v.as_object().ok_or_else(|| protocol("a session is not a JSON object"))?;
        let s = |k: &str| obj.get(k).and_then(Value::as_str).map(str::to_owned);
        let time = |k: &str| -> Result<Option<DateTime<Utc>>, ClientError> {
            s(k).map(|t| {
                DateTime::parse_from_rfc3339(&t)
                    .map(|d| d.with_timezone(&Utc))
                    .map_err(|e| protocol(format!("session `{k}` is not an RFC 3339 time: {e}")))
            })
            .transpose()
        };
        let required = |k: &str| time(k)?.ok_or_else(|| protocol(format!("session without `{k}`")));
        let id = s("id").filter(|i| i.starts_with("sess_")).ok_or_else(|| protocol("session without a `sess_` id"))?;
        let labels = obj
            .get("labels")
            .and_then(Value::as_object)
            .map(|l| l.iter().filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned()))).collect())
            .unwrap_or_default();
        Ok(Self {
            agent_id: s("agent_id").ok_or_else(|| protocol("session without `agent_id`"))?,
            state: SessionState::parse(&s("state").ok_or_else(|| protocol("session without `state`"))?),
            created_at: required("created_at")?,
            expires_at: required("expires_at")?,
            ttl_seconds: obj.get("ttl_seconds").and_then(Value::as_u64),
            last_seen: time("last_seen")?,
            closed_at: time("closed_at")?,
            closed_by_operator: obj.get("closed_by_operator").and_then(Value::as_bool) == Some(true),
            run_id: s("run_id"),
            label: s("label"),
            kind: s("kind"),
            project: s("project"),
            labels,
            raw: v.clone(),
            id,
        })
    }

    /// Parse a `{"session": …}` envelope (the 201 and single-read body).
    pub fn from_envelope(body: &Value) -> Result<Self, ClientError> {
        Self::from_json(body.get("session").ok_or_else(|| protocol("body without `session`"))?)
    }

    /// `state` is `active` (the Hub's view as of this read).
    pub fn is_active(&self) -> bool {
        self.state == SessionState::Active
    }

    /// The session-qualified address `agent:<agent_id>#<id>` (§4).
    pub fn address(&self) -> String {
        ma2h_protocol::entries::session_address(&self.agent_id, &self.id)
    }
}

/// What `GET /v1/sessions` covered (§16.4).
pub use ma2h_protocol::wire::SessionScope;

/// The `GET /v1/sessions` body.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionList {
    pub sessions: Vec<Session>,
    /// `None` when the Hub made no claim: the scope is then unknown and MUST NOT be taken for
    /// `Account` (§16.4).
    pub scope: Option<SessionScope>,
}

/// A session-related failure, typed by what the caller must do next.
#[derive(Debug, thiserror::Error)]
pub enum SessionError {
    /// `session_closed_by_operator` (410 on a touchpoint, 403 on registration): the account's
    /// human stopped this agent. Do not retry, do not re-register; surface it to a human, who
    /// alone can lift the stop (§16.3, §16.4.1).
    #[error(
        "stopped by the operator (session_closed_by_operator{}): do not retry or re-register; a human must lift the stop",
        .session.as_deref().map(|s| format!(", session {s}")).unwrap_or_default()
    )]
    StoppedByOperator { session: Option<String>, error: Box<HubErrorBody> },
    /// The session expired or was closed by its owner (`410 gone` / `destination_gone`):
    /// register a new session and continue (§16.3).
    #[error("session {session} has ended ({}): register a new session and continue", .error.code)]
    Ended { session: String, error: Box<HubErrorBody> },
    /// The Hub does not know the session for this agent (404, or 422 on a submit): never this
    /// agent's, or ended and since purged. For a session this client registered, register a new
    /// one (§16.3, §16.4.1).
    #[error("session {session} is unknown to this agent (not its own, or ended and purged): register a new session")]
    Unknown { session: String, error: Box<HubErrorBody> },
    /// `429` on registration: over `sessions.max_live_per_agent` (or the rate limit). Close or let
    /// a stale session lapse, or retry after the delay.
    #[error("session registration refused ({}){}", .error.message, retry_hint(.retry_after))]
    RateLimited { retry_after: Option<Duration>, error: Box<HubErrorBody> },
    /// The lease was closed by [`SessionLease::close`]; it registers nothing more.
    #[error("this session lease was closed")]
    LeaseClosed,
    /// Any other failure (configuration, transport, another Hub error).
    #[error(transparent)]
    Client(#[from] ClientError),
}

fn retry_hint(d: &Option<Duration>) -> String {
    d.map(|d| format!("; retry after {}s", d.as_secs())).unwrap_or_default()
}

impl HubErrorBody {
    /// The operator's stop (§16.3, §16.4.1): `session_closed_by_operator`, on any status.
    pub fn is_stopped_by_operator(&self) -> bool {
        self.code == STOPPED_BY_OPERATOR
    }
}

impl ClientError {
    /// The Hub answered `session_closed_by_operator`.
    pub fn is_stopped_by_operator(&self) -> bool {
        matches!(self, Self::Hub(h) if h.is_stopped_by_operator())
    }
}

impl SessionError {
    /// Classify the failure of a call that **presented** `session` as `?session=` (drain, ack):
    /// `session_closed_by_operator` → stopped; `410` → ended; `404` → unknown (§8.7.1, §16.3).
    /// (A resolve's 404/410 may be about the message instead: see
    /// [`Client::explain_session_error`].)
    pub fn from_presenting(session: &str, err: ClientError) -> Self {
        let ClientError::Hub(h) = err else { return Self::Client(err) };
        let session = session.to_owned();
        match h.status {
            _ if h.is_stopped_by_operator() => Self::StoppedByOperator { session: Some(session), error: h },
            410 => Self::Ended { session, error: h },
            404 => Self::Unknown { session, error: h },
            _ => Self::Client(ClientError::Hub(h)),
        }
    }

    /// `true` for [`SessionError::StoppedByOperator`]: never retry.
    pub fn is_stopped_by_operator(&self) -> bool {
        matches!(self, Self::StoppedByOperator { .. })
    }

    /// `true` when registering a new session is the remedy ([`SessionError::Ended`] or
    /// [`SessionError::Unknown`]).
    pub fn needs_new_session(&self) -> bool {
        matches!(self, Self::Ended { .. } | Self::Unknown { .. })
    }

    /// The Hub's §8.5 error, when there was one.
    pub fn hub_error(&self) -> Option<&HubErrorBody> {
        match self {
            Self::StoppedByOperator { error, .. }
            | Self::Ended { error, .. }
            | Self::Unknown { error, .. }
            | Self::RateLimited { error, .. } => Some(error),
            Self::Client(ClientError::Hub(h)) => Some(h),
            Self::LeaseClosed | Self::Client(_) => None,
        }
    }
}

/// Percent-encode a path segment or query value (everything but RFC 3986 unreserved bytes).
pub(crate) fn query_value(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

impl Client {
    /// `POST /v1/sessions` (§16.1) → the new session. Not retried (a lost 201 would leave a
    /// session that simply lapses). `403 session_closed_by_operator` is
    /// [`SessionError::StoppedByOperator`] (§16.4.1); `429` is [`SessionError::RateLimited`]
    /// with the Hub's `Retry-After`.
    pub async fn register_session(&self, request: &RegisterSession) -> Result<Session, SessionError> {
        let bytes = serde_json::to_vec(request).expect("a request serializes");
        let reply = self.send(reqwest::Method::POST, "/v1/sessions", Some(&bytes), Duration::from_secs(30)).await?;
        match reply.status {
            200 | 201 => Ok(Session::from_envelope(&Self::json(&reply)?)?),
            429 => Err(SessionError::RateLimited {
                retry_after: reply.retry_after,
                error: Box::new(HubErrorBody::from_response(429, &reply.body)),
            }),
            s => {
                let h = Box::new(HubErrorBody::from_response(s, &reply.body));
                if h.is_stopped_by_operator() {
                    Err(SessionError::StoppedByOperator { session: None, error: h })
                } else {
                    Err(ClientError::Hub(h).into())
                }
            }
        }
    }

    /// `GET /v1/sessions` (§16.4): this agent's sessions, live and recently ended.
    pub async fn list_sessions(&self) -> Result<SessionList, ClientError> {
        let reply = self.send(reqwest::Method::GET, "/v1/sessions", None, Duration::from_secs(30)).await?;
        if reply.status != 200 {
            return Err(ClientError::hub(reply.status, &reply.body));
        }
        // The list's shape is typed; each session is read leniently (an unknown state is kept).
        #[derive(serde::Deserialize)]
        struct Listed {
            sessions: Vec<Value>,
            #[serde(default)]
            scope: Option<Value>,
        }
        let body: Listed =
            serde_json::from_value(Self::json(&reply)?).map_err(|e| protocol(format!("not a session list: {e}")))?;
        let sessions = body.sessions.iter().map(Session::from_json).collect::<Result<_, _>>()?;
        // §16.4: an absent or unknown scope is unknown, never `account`.
        let scope = body.scope.and_then(|s| serde_json::from_value(s).ok());
        Ok(SessionList { sessions, scope })
    }

    /// `GET /v1/sessions/{id}`. A foreign or unknown id is a 404 `ClientError::Hub`.
    pub async fn get_session(&self, id: &str) -> Result<Session, ClientError> {
        let path = format!("/v1/sessions/{}", query_value(id));
        let reply = self.send(reqwest::Method::GET, &path, None, Duration::from_secs(30)).await?;
        match reply.status {
            200 => Session::from_envelope(&Self::json(&reply)?),
            s => Err(ClientError::hub(s, &reply.body)),
        }
    }

    /// `DELETE /v1/sessions/{id}` (§16.3, idempotent) → the session as it now stands (an already
    /// ended one is returned unchanged, `closed_by_operator` included).
    pub async fn close_session(&self, id: &str) -> Result<Session, ClientError> {
        let path = format!("/v1/sessions/{}", query_value(id));
        let reply = self.send(reqwest::Method::DELETE, &path, None, Duration::from_secs(30)).await?;
        match reply.status {
            200 => Session::from_envelope(&Self::json(&reply)?),
            s => Err(ClientError::hub(s, &reply.body)),
        }
    }

    /// Explain the failure of a call that named `session` but whose error alone is ambiguous —
    /// a submit (`410 destination_gone` may be about an addressed `to`, `422` about any field) or
    /// a resolve (`404`/`410` may be about the message): read the session and report
    /// [`SessionError::Ended`] / [`SessionError::Unknown`] / [`SessionError::StoppedByOperator`]
    /// only when it is the session that is gone; anything else stays the original error.
    pub async fn explain_session_error(&self, session: &str, err: ClientError) -> SessionError {
        let ClientError::Hub(h) = err else { return SessionError::Client(err) };
        if h.is_stopped_by_operator() {
            return SessionError::StoppedByOperator { session: Some(session.to_owned()), error: h };
        }
        if !matches!(h.status, 404 | 410 | 422) {
            return SessionError::Client(ClientError::Hub(h));
        }
        let session = session.to_owned();
        match self.get_session(&session).await {
            Ok(s) if s.closed_by_operator => SessionError::StoppedByOperator { session: Some(session), error: h },
            Ok(s) if s.is_active() => SessionError::Client(ClientError::Hub(h)),
            Ok(_) => SessionError::Ended { session, error: h },
            Err(ClientError::Hub(probe)) if probe.status == 404 => SessionError::Unknown { session, error: h },
            Err(_) => SessionError::Client(ClientError::Hub(h)),
        }
    }
}

/// A session-presenting drain's result: the entries, and the session they were drained with —
/// the identity a `response` entry's §9.8 signature is verified against (it may differ from the
/// session held before the call when the lease re-registered).
#[derive(Debug, Clone, PartialEq)]
pub struct Drained {
    pub session: String,
    pub entries: Vec<Value>,
}

/// A registered session kept alive by use (§16.2). Clones share one lease.
///
/// Every call presents the current session: [`drain`](Self::drain) and [`ack`](Self::ack) as
/// `?session=`, [`resolve`](Self::resolve) as `?session=`, [`submit`](Self::submit) as
/// `agent.session`. When the Hub says the session ended (expired, self-closed, or purged) the
/// lease registers a new one with the same request and retries the call once; concurrent callers
/// share that one re-registration. When the Hub says `session_closed_by_operator` the lease
/// latches the stop: that call and every later one return [`SessionError::StoppedByOperator`]
/// without contacting the Hub again.
///
/// Mail addressed to a session that ended is bounced, not carried over (§14.2); an answer to an
/// ask submitted under an earlier session is still readable by pull (§8.2) —
/// [`previous_ids`](Self::previous_ids) lists those sessions.
#[derive(Debug, Clone)]
pub struct SessionLease {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    client: Client,
    request: RegisterSession,
    state: Mutex<LeaseState>,
    /// Serializes re-registration so concurrent failures mint one new session.
    renew: tokio::sync::Mutex<()>,
}

#[derive(Debug)]
struct LeaseState {
    session: Session,
    previous: Vec<String>,
    stop: Option<Box<HubErrorBody>>,
    closed: bool,
    reregister: bool,
}

/// How a touchpoint's failure is classified.
#[derive(Debug, Clone, Copy)]
enum Touchpoint {
    /// drain / ack: 404 and 410 can only be about the session.
    Presenting,
    /// submit / resolve: ask the Hub about the session before concluding.
    Ambiguous,
}

impl SessionLease {
    /// Register a session and hold it.
    pub async fn register(client: Client, request: RegisterSession) -> Result<Self, SessionError> {
        let session = client.register_session(&request).await?;
        Ok(Self::attach(client, session, request))
    }

    /// Hold an already registered session (e.g. one read back with [`Client::get_session`]);
    /// `request` is what a re-registration sends.
    pub fn attach(client: Client, session: Session, request: RegisterSession) -> Self {
        let state = LeaseState { session, previous: Vec::new(), stop: None, closed: false, reregister: true };
        Self {
            inner: Arc::new(Inner { client, request, state: Mutex::new(state), renew: tokio::sync::Mutex::new(()) }),
        }
    }

    /// Whether an ended session is replaced transparently (default `true`). With `false`, the
    /// lease returns [`SessionError::Ended`] / [`SessionError::Unknown`] instead.
    pub fn set_reregister(&self, on: bool) {
        self.state().reregister = on;
    }

    fn state(&self) -> MutexGuard<'_, LeaseState> {
        self.inner.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub fn client(&self) -> &Client {
        &self.inner.client
    }

    /// The current session id.
    pub fn id(&self) -> String {
        self.state().session.id.clone()
    }

    /// The current session as last registered (its `expires_at` is not refreshed by renewals;
    /// read it back with [`Client::get_session`] when it matters).
    pub fn session(&self) -> Session {
        self.state().session.clone()
    }

    /// The current session address `agent:<id>#<sess>`.
    pub fn address(&self) -> String {
        self.state().session.address()
    }

    /// Sessions this lease held before re-registering, oldest first.
    pub fn previous_ids(&self) -> Vec<String> {
        self.state().previous.clone()
    }

    /// The operator's stop, once seen (latched).
    pub fn stopped(&self) -> Option<HubErrorBody> {
        self.state().stop.as_deref().cloned()
    }

    /// The current id, unless the lease is stopped or closed.
    fn usable(&self) -> Result<String, SessionError> {
        let st = self.state();
        if let Some(stop) = &st.stop {
            return Err(SessionError::StoppedByOperator { session: Some(st.session.id.clone()), error: stop.clone() });
        }
        if st.closed {
            return Err(SessionError::LeaseClosed);
        }
        Ok(st.session.id.clone())
    }

    fn latch(&self, err: &SessionError) {
        if let SessionError::StoppedByOperator { error, .. } = err {
            self.state().stop.get_or_insert_with(|| error.clone());
        }
    }

    /// Replace `failed` with a new session (or adopt the one a concurrent caller registered).
    async fn reregister(&self, failed: &str) -> Result<String, SessionError> {
        let _one = self.inner.renew.lock().await;
        let current = self.usable()?;
        if current != failed {
            return Ok(current);
        }
        match self.inner.client.register_session(&self.inner.request).await {
            Ok(s) => {
                let mut st = self.state();
                let old = std::mem::replace(&mut st.session, s);
                st.previous.push(old.id);
                Ok(st.session.id.clone())
            }
            Err(e) => {
                self.latch(&e);
                Err(e)
            }
        }
    }

    /// Run `op` with the current session id; on an ended session, re-register and retry once.
    /// Returns the session id the successful call presented.
    async fn with_session<T, F, Fut>(&self, touch: Touchpoint, op: F) -> Result<(String, T), SessionError>
    where
        F: Fn(String) -> Fut,
        Fut: Future<Output = Result<T, ClientError>>,
    {
        let mut id = self.usable()?;
        let mut renewed = false;
        loop {
            let err = match op(id.clone()).await {
                Ok(v) => return Ok((id, v)),
                Err(e) => e,
            };
            let err = match touch {
                Touchpoint::Presenting => SessionError::from_presenting(&id, err),
                Touchpoint::Ambiguous => self.inner.client.explain_session_error(&id, err).await,
            };
            self.latch(&err);
            if err.needs_new_session() && !renewed && self.state().reregister {
                id = self.reregister(&id).await?;
                renewed = true;
                continue;
            }
            return Err(err);
        }
    }

    /// `GET /v1/inbox?session=…` (§8.7.1): directives plus this session's `message`, `response`
    /// and `receipt` entries. Verify each with [`crate::EntryVerifier::verify_drained`] against
    /// [`Drained::session`].
    pub async fn drain(&self, max: Option<u32>, wait: Option<u32>) -> Result<Drained, SessionError> {
        let client = &self.inner.client;
        let (session, entries) = self
            .with_session(Touchpoint::Presenting, |sid| async move {
                client.drain_with(&DrainOptions { max, wait, session: Some(&sid) }).await
            })
            .await?;
        Ok(Drained { session, entries })
    }

    /// `POST /v1/inbox/ack?session=…` (§8.7): acknowledge entries by their ack keys (a
    /// directive's `id`, a response entry's `resolution_id`, …).
    pub async fn ack(&self, ids: &[String], note: Option<&str>) -> Result<u64, SessionError> {
        let client = &self.inner.client;
        let (_, n) = self
            .with_session(Touchpoint::Presenting, |sid| async move {
                client.ack_inbox_with(ids, &AckOptions { note, session: Some(&sid) }).await
            })
            .await?;
        Ok(n)
    }

    /// `POST /v1/messages/{id}/resolve?session=…` (§8.8): resolve as this session (the Hub
    /// attests the actor `agent:<id>#<sess>`).
    pub async fn resolve(&self, id: &str, body: &Value) -> Result<ResolveOutcome, SessionError> {
        let client = &self.inner.client;
        let (_, outcome) = self
            .with_session(Touchpoint::Ambiguous, |sid| async move { client.resolve(id, body, Some(&sid)).await })
            .await?;
        Ok(outcome)
    }

    /// `POST /v1/messages` with `agent.session` set to this session (§4.1): renews the lease, and
    /// the answer to an ask/task comes back as a `response` entry on this session's drain. An
    /// ask/task without `idempotency_key` gets one first, so a retry after re-registration is
    /// the same submit.
    pub async fn submit(&self, mut envelope: Value) -> Result<Ack, SessionError> {
        if !envelope.get("agent").is_some_and(Value::is_object) {
            return Err(ClientError::Config("the envelope has no `agent` object to carry the session".into()).into());
        }
        let kind = envelope.get("type").and_then(Value::as_str).unwrap_or_default();
        if kind != "notify" && envelope.get("idempotency_key").is_none() {
            envelope["idempotency_key"] = format!("ma2h-{}", random_token(16)).into();
        }
        let client = &self.inner.client;
        let envelope = &envelope;
        let (_, ack) = self
            .with_session(Touchpoint::Ambiguous, |sid| {
                let mut e = envelope.clone();
                e["agent"]["session"] = Value::String(sid);
                async move { client.submit(e).await }
            })
            .await?;
        Ok(ack)
    }

    /// `DELETE /v1/sessions/{id}`: end the lease. Later calls return
    /// [`SessionError::LeaseClosed`]; mail still addressed to the session is bounced (§14.2).
    pub async fn close(&self) -> Result<Session, SessionError> {
        let id = self.id();
        let session = self.inner.client.close_session(&id).await?;
        let mut st = self.state();
        st.closed = true;
        if st.session.id == id {
            st.session = session.clone();
        }
        Ok(session)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicU32, Ordering};

    use serde_json::json;

    use axum::extract::{Query, State};
    use axum::http::StatusCode;
    use axum::response::{IntoResponse, Response};
    use axum::routing::{get, post};

    use super::*;

    fn session_json(id: &str, state: &str) -> Value {
        json!({"id": id, "agent_id": "bot", "state": state, "created_at": "2026-06-04T12:00:00Z",
               "expires_at": "2026-06-04T12:15:00Z", "ttl_seconds": 900})
    }

    #[test]
    fn a_register_request_carries_only_what_is_set() {
        assert_eq!(serde_json::to_value(RegisterSession::default()).unwrap(), json!({}));
        let r = RegisterSession {
            label: Some("dev".into()),
            labels: BTreeMap::from([("repo".into(), "acme/web".into())]),
            ttl_seconds: Some(120),
            ..Default::default()
        };
        assert_eq!(
            serde_json::to_value(&r).unwrap(),
            json!({"label": "dev", "labels": {"repo": "acme/web"}, "ttl_seconds": 120})
        );
    }

    #[test]
    fn a_session_resource_parses_and_malformed_ones_are_protocol_errors() {
        let mut v = session_json("sess_01", "closed");
        v["closed_by_operator"] = json!(true);
        v["closed_at"] = json!("2026-06-04T12:05:00Z");
        v["labels"] = json!({"repo": "acme/web", "n": 1});
        let s = Session::from_json(&v).unwrap();
        assert_eq!((s.state.clone(), s.closed_by_operator, s.is_active()), (SessionState::Closed, true, false));
        assert_eq!(s.ttl_seconds, Some(900));
        assert_eq!(s.labels, BTreeMap::from([("repo".to_owned(), "acme/web".to_owned())]), "non-strings dropped");
        assert_eq!(s.address(), "agent:bot#sess_01");
        assert_eq!(s.closed_at.unwrap().to_rfc3339(), "2026-06-04T12:05:00+00:00");
        assert!(Session::from_json(&session_json("msg_01", "active")).is_err(), "sess_ namespace");
        let mut bad = session_json("sess_01", "active");
        bad["expires_at"] = json!("tomorrow");
        assert!(matches!(Session::from_json(&bad), Err(ClientError::Protocol(_))));
        assert_eq!(Session::from_json(&session_json("sess_1", "paused")).unwrap().state.as_str(), "paused");
    }

    #[test]
    fn presenting_errors_split_into_stopped_ended_unknown_and_other() {
        let hub = |status: u16, code: &str| {
            ClientError::hub(status, json!({"error": {"code": code, "message": "m"}}).to_string().as_bytes())
        };
        let c = |e| SessionError::from_presenting("sess_1", e);
        assert!(c(hub(410, STOPPED_BY_OPERATOR)).is_stopped_by_operator());
        assert!(c(hub(403, STOPPED_BY_OPERATOR)).is_stopped_by_operator());
        assert!(matches!(c(hub(410, "gone")), SessionError::Ended { .. }));
        assert!(matches!(c(hub(404, "not_found")), SessionError::Unknown { .. }));
        assert!(c(hub(404, "not_found")).needs_new_session());
        assert!(matches!(c(hub(401, "unauthenticated")), SessionError::Client(ClientError::Hub(_))));
        assert!(matches!(
            c(ClientError::Unreachable { url: "u".into(), reason: "r".into() }),
            SessionError::Client(ClientError::Unreachable { .. })
        ));
        assert!(hub(403, STOPPED_BY_OPERATOR).is_stopped_by_operator());
        let stopped = c(hub(410, STOPPED_BY_OPERATOR)).to_string();
        assert!(stopped.contains("do not retry or re-register"), "{stopped}");
    }

    #[test]
    fn query_values_are_percent_encoded() {
        assert_eq!(query_value("sess_01J-a.b~"), "sess_01J-a.b~");
        assert_eq!(query_value("a&b=c d#"), "a%26b%3Dc%20d%23");
    }

    /// A scripted Hub: registrations mint `sess_1`, `sess_2`, …; a drain presenting a session in
    /// `ended` answers 410 gone, in `stopped` 410 session_closed_by_operator; registration is
    /// refused with 403 once `stop_all` is set.
    #[derive(Clone, Default)]
    struct Fake {
        minted: Arc<AtomicU32>,
        drains: Arc<AtomicU32>,
        ended: Arc<Mutex<Vec<String>>>,
        stopped: Arc<Mutex<Vec<String>>>,
        stop_all: Arc<Mutex<bool>>,
    }

    fn err(status: StatusCode, code: &str) -> Response {
        (status, axum::Json(json!({"error": {"code": code, "message": "scripted"}}))).into_response()
    }

    async fn register(State(f): State<Fake>) -> Response {
        if *f.stop_all.lock().unwrap() {
            return err(StatusCode::FORBIDDEN, STOPPED_BY_OPERATOR);
        }
        let n = f.minted.fetch_add(1, Ordering::SeqCst) + 1;
        (StatusCode::CREATED, axum::Json(json!({"session": session_json(&format!("sess_{n}"), "active")})))
            .into_response()
    }

    async fn drain(State(f): State<Fake>, Query(q): Query<BTreeMap<String, String>>) -> Response {
        f.drains.fetch_add(1, Ordering::SeqCst);
        let s = q.get("session").cloned().unwrap_or_default();
        if f.stopped.lock().unwrap().contains(&s) {
            return err(StatusCode::GONE, STOPPED_BY_OPERATOR);
        }
        if f.ended.lock().unwrap().contains(&s) {
            return err(StatusCode::GONE, "gone");
        }
        axum::Json(json!({"messages": [{"presented": s}]})).into_response()
    }

    async fn start() -> (Fake, Client) {
        let fake = Fake::default();
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app = axum::Router::new()
            .route("/v1/sessions", post(register))
            .route("/v1/inbox", get(drain))
            .with_state(fake.clone());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        (fake, Client::new(&format!("http://{addr}"), "key").unwrap())
    }

    #[tokio::test]
    async fn an_ended_session_is_replaced_once_and_an_operator_stop_is_latched() {
        let (fake, client) = start().await;
        let lease = SessionLease::register(client, RegisterSession::default()).await.unwrap();
        assert_eq!(lease.id(), "sess_1");
        let d = lease.drain(None, None).await.unwrap();
        assert_eq!((d.session.as_str(), &d.entries[0]["presented"]), ("sess_1", &json!("sess_1")));

        // 410 gone: re-register transparently, retry with the new session.
        fake.ended.lock().unwrap().push("sess_1".into());
        let d = lease.drain(None, None).await.unwrap();
        assert_eq!(
            (d.session.as_str(), lease.id(), lease.previous_ids()),
            ("sess_2", "sess_2".into(), vec!["sess_1".into()])
        );

        // A clone shares the lease; a lease that may not re-register reports the end instead.
        let other = lease.clone();
        other.set_reregister(false);
        fake.ended.lock().unwrap().push("sess_2".into());
        assert!(matches!(lease.drain(None, None).await, Err(SessionError::Ended { .. })));
        lease.set_reregister(true);
        assert_eq!(lease.drain(None, None).await.unwrap().session, "sess_3");

        // The operator's stop: typed, latched, and never retried against the Hub.
        fake.stopped.lock().unwrap().push("sess_3".into());
        *fake.stop_all.lock().unwrap() = true;
        let before = fake.drains.load(Ordering::SeqCst);
        assert!(lease.drain(None, None).await.unwrap_err().is_stopped_by_operator());
        assert_eq!(fake.minted.load(Ordering::SeqCst), 3, "no registration through the stop");
        assert!(other.drain(None, None).await.unwrap_err().is_stopped_by_operator());
        assert_eq!(fake.drains.load(Ordering::SeqCst), before + 1, "latched: the Hub is not called again");
        assert_eq!(lease.stopped().map(|h| h.status), Some(410));
    }

    #[tokio::test]
    async fn a_stop_met_while_re_registering_is_latched_too() {
        let (fake, client) = start().await;
        let lease = SessionLease::register(client, RegisterSession::default()).await.unwrap();
        fake.ended.lock().unwrap().push("sess_1".into());
        *fake.stop_all.lock().unwrap() = true;
        let e = lease.drain(None, None).await.unwrap_err();
        assert!(matches!(&e, SessionError::StoppedByOperator { session: None, error } if error.status == 403), "{e:?}");
        assert!(lease.drain(None, None).await.unwrap_err().is_stopped_by_operator());
        assert_eq!(fake.drains.load(Ordering::SeqCst), 1);
    }
}

//! The HTTP client for the agent-facing endpoints: discovery (§8.0), submit (§8.1) with an
//! automatic `idempotency_key` and the lost-ack retry recipe, long-poll reads (§8.2), cancel
//! (§8.4). `429` is retried only after the Hub's `Retry-After` (§8.6).

use ma2h_protocol::wire::SubmitAck;
use std::time::{Duration, Instant};

use base64::Engine;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, RETRY_AFTER};
use serde_json::Value;

use crate::{ClientError, Config, HubErrorBody};

/// How submit (and the wait loop) retries transient failures.
#[derive(Debug, Clone, Copy)]
pub struct RetryPolicy {
    /// Attempts in total, the first included.
    pub max_attempts: u32,
    /// First backoff; doubles per attempt.
    pub base_delay: Duration,
    /// Cap on one backoff (a `Retry-After` may exceed it).
    pub max_delay: Duration,
    /// Give up when the next attempt would start after this much time.
    pub max_total: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        Self {
            max_attempts: 6,
            base_delay: Duration::from_millis(500),
            max_delay: Duration::from_secs(10),
            max_total: Duration::from_secs(180),
        }
    }
}

impl RetryPolicy {
    fn backoff(&self, attempt: u32) -> Duration {
        self.base_delay.saturating_mul(1 << attempt.saturating_sub(1).min(16)).min(self.max_delay)
    }
}

/// The §8.1 202 ack.
#[derive(Debug, Clone, PartialEq)]
pub struct Ack {
    pub id: String,
    pub status: String,
    pub poll_url: Option<String>,
    pub review_url: Option<String>,
    /// The idempotency key the submit used (generated when the message had none).
    pub idempotency_key: Option<String>,
    /// How many POSTs it took (1 unless the recipe retried).
    pub attempts: u32,
    pub raw: Value,
}

/// What a cancel observed (§8.4).
#[derive(Debug, Clone, PartialEq)]
pub enum CancelOutcome {
    /// `200 {id, status: "cancelled"}` (also on an idempotent re-cancel).
    Cancelled(Value),
    /// `409 already_terminal`: another terminal won; the body carries `{id, status, resolution}`.
    AlreadyTerminal(Value),
}

/// A Hub client bound to one agent credential.
#[derive(Debug, Clone)]
pub struct Client {
    http: reqwest::Client,
    base: String,
    api_key: String,
    pub retry: RetryPolicy,
    /// Longest single long-poll to request (the Hub caps at its own max, §8.2).
    pub long_poll_max: u32,
    /// How long one exchange may take (a long-poll: its wait plus this).
    pub request_timeout: Duration,
}

/// A fresh random base64url token of `bytes` random bytes.
pub fn random_token(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    getrandom::fill(&mut buf).expect("the OS random source is available");
    URL_SAFE_NO_PAD.encode(buf)
}

/// `Retry-After` as delta-seconds or an HTTP-date (RFC 9110 §10.2.3).
pub fn parse_retry_after(v: &str, now: chrono::DateTime<chrono::Utc>) -> Option<Duration> {
    let v = v.trim();
    if let Ok(secs) = v.parse::<u64>() {
        return Some(Duration::from_secs(secs));
    }
    let at = chrono::DateTime::parse_from_rfc2822(v).ok()?;
    Some((at.with_timezone(&chrono::Utc) - now).to_std().unwrap_or(Duration::ZERO))
}

/// One HTTP exchange's outcome.
pub(crate) struct Reply {
    pub(crate) status: u16,
    pub(crate) retry_after: Option<Duration>,
    pub(crate) body: Vec<u8>,
}

impl Client {
    pub fn new(hub_url: &str, api_key: &str) -> Result<Self, ClientError> {
        // One TLS stack: rustls on `ring`, installed as the process default unless the binary
        // already chose one (an Err here only means it did).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder()
            .connect_timeout(Duration::from_secs(10))
            // A redirect is refused, not followed: it would re-send a submit's body elsewhere, and
            // a "success" from wherever it led is not the Hub's (found by a black-box pass).
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| ClientError::Config(format!("cannot build the HTTP client: {e}")))?;
        Ok(Self {
            http,
            base: hub_url.trim_end_matches('/').to_owned(),
            api_key: api_key.to_owned(),
            retry: RetryPolicy::default(),
            long_poll_max: 30,
            request_timeout: Duration::from_secs(30),
        })
    }

    /// From `MA2H_HUB_URL` and `MA2H_API_KEY`.
    pub fn from_config(config: &Config) -> Result<Self, ClientError> {
        Self::new(config.hub_url()?, config.api_key()?)
    }

    pub fn base_url(&self) -> &str {
        &self.base
    }

    pub(crate) async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&[u8]>,
        timeout: Duration,
    ) -> Result<Reply, ClientError> {
        let url = format!("{}{path}", self.base);
        let mut req =
            self.http.request(method, &url).timeout(timeout).header(AUTHORIZATION, format!("Bearer {}", self.api_key));
        if let Some(b) = body {
            req = req.header(CONTENT_TYPE, "application/json").body(b.to_vec());
        }
        let unreachable = |e: reqwest::Error| ClientError::Unreachable { url: self.base.clone(), reason: describe(&e) };
        let resp = req.send().await.map_err(unreachable)?;
        let status = resp.status().as_u16();
        let retry_after = resp
            .headers()
            .get(RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| parse_retry_after(v, chrono::Utc::now()));
        if resp.status().is_redirection() {
            let to = resp.headers().get(reqwest::header::LOCATION).and_then(|v| v.to_str().ok()).unwrap_or("?");
            return Err(ClientError::Protocol(format!(
                "the Hub answered {status}, a redirect to {to}; redirects are not followed — set MA2H_HUB_URL to the Hub's own address"
            )));
        }
        let body = resp.bytes().await.map_err(unreachable)?.to_vec();
        Ok(Reply { status, retry_after, body })
    }

    /// `/v1/messages/{id}`, the id as one percent-encoded path segment: any Hub's id works (ours
    /// are `msg_` + a ULID, the reference's `msg_` + a UUID, ids minted before v0.5 may have any
    /// shape), yet no argument can reach another path or add a query (found by a black-box pass
    /// of `ma2h mcp`). What can never be an id is refused before any request ([`check_id`]).
    fn message_path(id: &str) -> Result<String, ClientError> {
        check_id(id).map_err(ClientError::Config)?;
        Ok(format!("/v1/messages/{}", crate::session::query_value(id)))
    }

    /// A 200 body that is a message of this id, with a status — and, for an ask or task past
    /// `open`, its response (§8.2; a notify has none). Anything else is not the Hub's answer to
    /// this read.
    fn message_body(id: &str, body: Value) -> Result<Value, ClientError> {
        let status = body.get("status").and_then(Value::as_str);
        let verb = body.get("type").and_then(Value::as_str);
        let terminal = verb != Some("notify") && status.is_some_and(|s| !matches!(s, "open" | "queued"));
        if body.get("id").and_then(Value::as_str) != Some(id) || status.is_none() {
            return Err(ClientError::Protocol(format!("the answer to a read of {id} is not that message")));
        }
        if terminal && !body.get("response").is_some_and(Value::is_object) {
            return Err(ClientError::Protocol(format!("{id} reads as terminal without its response")));
        }
        Ok(body)
    }

    pub(crate) fn json(reply: &Reply) -> Result<Value, ClientError> {
        serde_json::from_slice(&reply.body).map_err(|e| ClientError::Protocol(format!("body is not JSON: {e}")))
    }

    /// `GET /.well-known/ma2h` (§8.0).
    pub async fn discover(&self) -> Result<Value, ClientError> {
        let reply = self.send(reqwest::Method::GET, "/.well-known/ma2h", None, self.request_timeout).await?;
        match reply.status {
            200 => Self::json(&reply),
            s => Err(ClientError::hub(s, &reply.body)),
        }
    }

    /// `POST /v1/messages` (§8.1). An ask/task without `idempotency_key` gets a generated one;
    /// then the lost-ack recipe: resend the same bytes (same key) on network errors and 5xx
    /// until a 202 or a 409 is observed, waiting out `Retry-After` on 429 (§8.6).
    pub async fn submit(&self, mut envelope: Value) -> Result<Ack, ClientError> {
        let kind = envelope.get("type").and_then(Value::as_str).unwrap_or_default().to_owned();
        if kind != "notify" && envelope.get("idempotency_key").is_none() {
            envelope["idempotency_key"] = format!("ma2h-{}", random_token(16)).into();
        }
        let key = envelope.get("idempotency_key").and_then(Value::as_str).map(str::to_owned);
        let bytes = serde_json::to_vec(&envelope).expect("a Value serializes");
        let started = Instant::now();
        let mut attempt = 0u32;
        loop {
            attempt += 1;
            let (err, delay) =
                match self.send(reqwest::Method::POST, "/v1/messages", Some(&bytes), self.request_timeout).await {
                    Ok(r) if r.status == 202 || r.status == 200 => {
                        let raw = Self::json(&r)?;
                        let ack: SubmitAck = serde_json::from_value(raw.clone())
                            .map_err(|e| ClientError::Protocol(format!("not a submit ack: {e}")))?;
                        return Ok(Ack {
                            id: ack.id,
                            status: ack.status.as_str().to_owned(),
                            poll_url: Some(ack.poll_url),
                            review_url: ack.review_url,
                            idempotency_key: key,
                            attempts: attempt,
                            raw,
                        });
                    }
                    Ok(r) if r.status == 429 => {
                        let d = r.retry_after.unwrap_or_else(|| self.retry.backoff(attempt));
                        (ClientError::hub(r.status, &r.body), d)
                    }
                    Ok(r) if r.status >= 500 => (ClientError::hub(r.status, &r.body), self.retry.backoff(attempt)),
                    // Any other answer, 409 included, is final (§8.1: stop at 202 or 409).
                    Ok(r) => return Err(ClientError::hub(r.status, &r.body)),
                    Err(e @ ClientError::Unreachable { .. }) => (e, self.retry.backoff(attempt)),
                    Err(e) => return Err(e),
                };
            if attempt >= self.retry.max_attempts || started.elapsed() + delay > self.retry.max_total {
                return Err(err);
            }
            tokio::time::sleep(delay).await;
        }
    }

    /// `GET /v1/messages/{id}` (§8.2), with `?wait=<s>` long-poll when `wait` is set.
    pub async fn get(&self, id: &str, wait: Option<u32>) -> Result<Value, ClientError> {
        let path = match wait {
            Some(w) if w > 0 => format!("{}?wait={w}", Self::message_path(id)?),
            _ => Self::message_path(id)?,
        };
        let timeout = Duration::from_secs(u64::from(wait.unwrap_or(0))) + self.request_timeout;
        let reply = self.send(reqwest::Method::GET, &path, None, timeout).await?;
        match reply.status {
            200 => Self::message_body(id, Self::json(&reply)?),
            s => Err(ClientError::hub(s, &reply.body)),
        }
    }

    /// Re-issue long-polls until the message leaves `open` or `limit` elapses (`None` = no
    /// limit). Transient failures (unreachable, 5xx, 429 after `Retry-After`) are retried up to
    /// the retry policy's attempt count in a row. `on_status` sees every body read.
    pub async fn wait_terminal(
        &self,
        id: &str,
        limit: Option<Duration>,
        mut on_status: impl FnMut(&Value),
    ) -> Result<Value, ClientError> {
        let deadline = limit.map(|l| Instant::now() + l);
        let mut failures = 0u32;
        loop {
            let remaining = deadline.map(|d| d.saturating_duration_since(Instant::now()));
            // whole seconds, rounded up: a 1.9 s remainder is a 2 s poll, not a 1 s one
            let wait =
                remaining.map_or(self.long_poll_max, |r| (r.as_millis().div_ceil(1000) as u32).min(self.long_poll_max));
            match self.get(id, Some(wait)).await {
                Ok(body) => {
                    failures = 0;
                    on_status(&body);
                    let status = body.get("status").and_then(Value::as_str).unwrap_or("open");
                    if !matches!(status, "open" | "queued") || remaining.is_some_and(|r| r.is_zero()) {
                        return Ok(body);
                    }
                    if deadline.is_some_and(|d| Instant::now() >= d) {
                        return Ok(body);
                    }
                }
                Err(e) => {
                    let delay = match &e {
                        ClientError::Unreachable { .. } => self.retry.backoff(failures + 1),
                        ClientError::Hub(h) if h.status >= 500 => self.retry.backoff(failures + 1),
                        ClientError::Hub(h) if h.status == 429 => Duration::from_secs(1),
                        _ => return Err(e),
                    };
                    failures += 1;
                    if failures >= self.retry.max_attempts {
                        return Err(e);
                    }
                    tokio::time::sleep(delay).await;
                }
            }
        }
    }

    /// `POST /v1/messages/{id}/cancel` (§8.4).
    pub async fn cancel(&self, id: &str) -> Result<CancelOutcome, ClientError> {
        let path = format!("{}/cancel", Self::message_path(id)?);
        let reply = self.send(reqwest::Method::POST, &path, Some(b"{}"), self.request_timeout).await?;
        match reply.status {
            200 => {
                let body = Self::json(&reply)?;
                if body.get("id").and_then(Value::as_str) != Some(id) || body["status"] != "cancelled" {
                    return Err(ClientError::Protocol(format!(
                        "the answer to a cancel of {id} is not its cancellation"
                    )));
                }
                Ok(CancelOutcome::Cancelled(body))
            }
            409 => {
                let err = HubErrorBody::from_response(409, &reply.body);
                if err.code == "already_terminal" {
                    Ok(CancelOutcome::AlreadyTerminal(err.body))
                } else {
                    Err(ClientError::Hub(Box::new(err)))
                }
            }
            s => Err(ClientError::hub(s, &reply.body)),
        }
    }
}

/// What can never be a message id: empty, a dot segment, control characters, over 512 bytes.
pub fn check_id(id: &str) -> Result<(), String> {
    if id.is_empty() || id == "." || id == ".." || id.len() > 512 || id.chars().any(char::is_control) {
        return Err(format!("`{}` is not a message id (msg_…)", id.escape_debug()));
    }
    Ok(())
}

/// A short reason for a transport failure, with the innermost cause.
fn describe(e: &reqwest::Error) -> String {
    let mut msg = if e.is_timeout() {
        "timed out".to_owned()
    } else if e.is_connect() {
        "connection failed".to_owned()
    } else {
        "request failed".to_owned()
    };
    let mut src: Option<&dyn std::error::Error> = std::error::Error::source(e);
    let mut last = None;
    while let Some(s) = src {
        last = Some(s.to_string());
        src = s.source();
    }
    if let Some(l) = last {
        msg.push_str(": ");
        msg.push_str(&l);
    }
    msg
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retry_after_accepts_seconds_and_http_dates() {
        let now = chrono::DateTime::parse_from_rfc3339("2026-06-04T12:00:00Z").unwrap().with_timezone(&chrono::Utc);
        assert_eq!(parse_retry_after("7", now), Some(Duration::from_secs(7)));
        assert_eq!(parse_retry_after("Thu, 04 Jun 2026 12:00:05 GMT", now), Some(Duration::from_secs(5)));
        assert_eq!(parse_retry_after("soon", now), None);
    }

    #[test]
    fn backoff_doubles_and_caps() {
        let p = RetryPolicy::default();
        assert_eq!(p.backoff(1), Duration::from_millis(500));
        assert_eq!(p.backoff(2), Duration::from_secs(1));
        assert_eq!(p.backoff(10), Duration::from_secs(10));
    }
}

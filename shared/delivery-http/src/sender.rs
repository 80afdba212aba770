//! [`HttpPushSender`]: the §8.3 push over HTTP, behind the §9.4 egress guard.

use std::net::SocketAddr;
use std::sync::Arc;

use async_trait::async_trait;
use ma2h_core::ports::{FetchReply, FetchRequest, MAX_FETCH_BYTES, PushOutcome, PushRequest, PushSender};
use reqwest::header::{CONTENT_TYPE, HeaderName, HeaderValue};
use reqwest::{StatusCode, redirect};
use url::{Host, Url};

use crate::resolve::{PinTable, Resolve, SystemResolver};
use crate::{EgressMode, EgressPolicy, check_callback_url};

/// The HTTP client could not be built (e.g. the TLS stack failed to initialise).
#[derive(Debug, thiserror::Error)]
#[error("cannot build the callback HTTP client: {0}")]
pub struct BuildError(#[from] reqwest::Error);

/// Delivers §8.3 pushes with one reusable HTTP client, enforcing §9.4 on every attempt.
///
/// See the crate docs for the rules. The client: rustls only, no proxies (system or otherwise),
/// no redirects, no connection reuse (each attempt connects to the addresses vetted for it), and
/// a DNS hook that only serves vetted addresses.
pub struct HttpPushSender {
    client: reqwest::Client,
    policy: EgressPolicy,
    resolver: Arc<dyn Resolve>,
    pins: PinTable,
}

impl std::fmt::Debug for HttpPushSender {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HttpPushSender").field("policy", &self.policy).finish_non_exhaustive()
    }
}

impl HttpPushSender {
    /// A sender resolving names with the system resolver.
    pub fn new(policy: EgressPolicy) -> Result<Self, BuildError> {
        Self::with_resolver(policy, Arc::new(SystemResolver))
    }

    /// A sender resolving names with `resolver` (consulted once per attempt, never for IP
    /// literals).
    pub fn with_resolver(policy: EgressPolicy, resolver: Arc<dyn Resolve>) -> Result<Self, BuildError> {
        if policy.mode == EgressMode::Production && !policy.dev_allow.is_empty() {
            tracing::warn!("egress policy: dev_allow is ignored in production mode (§9.4 fails closed)");
        }
        let pins = PinTable::default();
        // One TLS stack: rustls on `ring`, installed as the process default unless the binary
        // already chose one (an Err here only means it did).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = reqwest::Client::builder()
            // A proxy would resolve and connect on its own, bypassing the vetting below.
            .no_proxy()
            // §9.4: MUST NOT follow redirects.
            .redirect(redirect::Policy::none())
            .https_only(policy.mode == EgressMode::Production)
            .connect_timeout(policy.connect_timeout)
            .timeout(policy.total_timeout)
            // No reuse: a pooled connection would skip the per-attempt pinning.
            .pool_max_idle_per_host(0)
            .dns_resolver(pins.clone())
            .user_agent(concat!("ma2h-hub/", env!("CARGO_PKG_VERSION")))
            .build()?;
        Ok(Self { client, policy, resolver, pins })
    }

    /// The policy this sender enforces.
    pub fn policy(&self) -> &EgressPolicy {
        &self.policy
    }

    /// Resolve `url`'s host once and vet every address (§9.4). IP literals are vetted as they
    /// are. Refuses if ANY answer is forbidden rather than keeping the permitted ones: a name
    /// that also points inside is treated as hostile. Returns the addresses to connect to.
    async fn vet(&self, url: &Url) -> Result<Vec<SocketAddr>, PushOutcome> {
        let refused = |reason: String| PushOutcome::Refused { reason };
        let port = url.port_or_known_default().ok_or_else(|| refused("callback url has no port".into()))?;
        let candidates = match url.host() {
            Some(Host::Ipv4(ip)) => vec![SocketAddr::new(ip.into(), port)],
            Some(Host::Ipv6(ip)) => vec![SocketAddr::new(ip.into(), port)],
            Some(Host::Domain(host)) => {
                let lookup = self.resolver.resolve(host, port);
                match tokio::time::timeout(self.policy.connect_timeout, lookup).await {
                    Ok(Ok(addrs)) if !addrs.is_empty() => addrs,
                    Ok(Ok(_)) => return Err(retry("dns resolution returned no addresses".into())),
                    Ok(Err(e)) => return Err(retry(format!("dns resolution failed: {e}"))),
                    Err(_) => return Err(retry("dns resolution timed out".into())),
                }
            }
            None => return Err(refused("callback url has no host".into())),
        };
        if let Some(bad) = candidates.iter().find(|a| !self.policy.permits(a.ip())) {
            return Err(refused(format!("forbidden destination address {}", bad.ip())));
        }
        // Connect to the URL's port whatever port the resolver echoed.
        Ok(candidates.into_iter().map(|a| SocketAddr::new(a.ip(), port)).collect())
    }

    async fn deliver(&self, url: &Url, request: &PushRequest, keep_body: bool) -> (PushOutcome, Vec<u8>) {
        let addrs = match self.vet(url).await {
            Ok(addrs) => addrs,
            Err(outcome) => return (outcome, Vec::new()),
        };
        // Domain hosts: make the client's DNS hook answer exactly these addresses (no second
        // lookup). IP literals are connected to directly; the client does not resolve them.
        let _pin = match url.host() {
            Some(Host::Domain(host)) => Some(self.pins.pin(host, addrs)),
            _ => None,
        };

        let mut builder = self.client.post(url.clone()).header(CONTENT_TYPE, "application/json");
        for (name, value) in &request.headers {
            let Ok(name) = HeaderName::from_bytes(name.as_bytes()) else {
                return (PushOutcome::Refused { reason: "invalid header name".into() }, Vec::new());
            };
            if is_reserved(&name) {
                continue;
            }
            // Never echo the value: it may be a signature or a credential.
            let Ok(mut value) = HeaderValue::from_str(value) else {
                return (PushOutcome::Refused { reason: format!("invalid value for header {name}") }, Vec::new());
            };
            value.set_sensitive(true);
            builder = builder.header(name, value);
        }

        let mut response = match builder.body(request.body.clone()).send().await {
            Ok(response) => response,
            Err(e) => return (retry(describe(e)), Vec::new()),
        };
        let status = response.status();
        let mut body = Vec::new();
        if !status.is_redirection() {
            let keep = if keep_body && status.is_success() { Some(&mut body) } else { None };
            // A Slack reply echoes the whole posted message: keep up to 64 KiB of one that is read.
            let limit = if keep.is_some() {
                self.policy.max_response_bytes.max(64 * 1024)
            } else {
                self.policy.max_response_bytes
            };
            drain(&mut response, limit, keep).await;
        }
        (classify(status), body)
    }

    /// [`PushSender::fetch`]: the same URL check, vetting and pinning as a push; the answer is
    /// read whatever its status (an identity provider's error is JSON too), a 3xx is refused.
    async fn exchange(&self, request: &FetchRequest) -> Result<FetchReply, String> {
        let url = check_callback_url(&request.url, self.policy.mode).map_err(|e| e.to_string())?;
        let host = url.host_str().unwrap_or("-").to_owned();
        let addrs = self.vet(&url).await.map_err(|o| format!("{host}: {o:?}"))?;
        let _pin = match url.host() {
            Some(Host::Domain(name)) => Some(self.pins.pin(name, addrs)),
            _ => None,
        };
        let mut builder = match &request.body {
            Some(body) => self.client.post(url.clone()).body(body.clone()),
            None => self.client.get(url.clone()),
        };
        for (name, value) in &request.headers {
            let name = HeaderName::from_bytes(name.as_bytes()).map_err(|_| "invalid header name".to_owned())?;
            let mut value = HeaderValue::from_str(value).map_err(|_| format!("invalid value for header {name}"))?;
            value.set_sensitive(true);
            builder = builder.header(name, value);
        }
        let mut response = builder.send().await.map_err(|e| format!("{host}: {}", describe(e)))?;
        let status = response.status();
        if status.is_redirection() {
            return Err(format!("{host}: redirect not followed"));
        }
        let content_type = response.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).map(str::to_owned);
        let mut body = Vec::new();
        drain(&mut response, MAX_FETCH_BYTES, Some(&mut body)).await;
        tracing::debug!(host, status = status.as_u16(), "outbound fetch");
        Ok(FetchReply { status: status.as_u16(), content_type, body })
    }

    async fn send_checked(&self, request: &PushRequest, keep_body: bool) -> (PushOutcome, Vec<u8>) {
        // §9.4 at delivery time: the shape is re-checked on every attempt, not only at submit.
        let (host, (outcome, body)) = match check_callback_url(&request.url, self.policy.mode) {
            Ok(url) => (url.host_str().map(str::to_owned), self.deliver(&url, request, keep_body).await),
            Err(e) => (None, (PushOutcome::Refused { reason: e.to_string() }, Vec::new())),
        };
        log(host.as_deref(), &outcome);
        (outcome, body)
    }
}

#[async_trait]
impl PushSender for HttpPushSender {
    async fn send(&self, request: &PushRequest) -> PushOutcome {
        self.send_checked(request, false).await.0
    }

    /// The first `max_response_bytes` of a 2xx answer's body are kept (a Slack Web API reply).
    async fn send_reading(&self, request: &PushRequest) -> (PushOutcome, Vec<u8>) {
        self.send_checked(request, true).await
    }

    async fn fetch(&self, request: &FetchRequest) -> Result<FetchReply, String> {
        self.exchange(request).await
    }
}

/// Headers the push request may not set: the sender owns the framing and the body type.
fn is_reserved(name: &HeaderName) -> bool {
    use reqwest::header::{CONNECTION, CONTENT_LENGTH, HOST, TRANSFER_ENCODING};
    [HOST, CONTENT_LENGTH, CONTENT_TYPE, TRANSFER_ENCODING, CONNECTION].contains(name)
}

/// §8.3: 2xx delivered; 4xx rejected (never retried); 5xx retried; §9.4: 3xx not followed.
fn classify(status: StatusCode) -> PushOutcome {
    let code = status.as_u16();
    if status.is_success() {
        PushOutcome::Delivered { status: code }
    } else if status.is_redirection() {
        PushOutcome::Refused { reason: "redirect not followed".into() }
    } else if status.is_client_error() {
        PushOutcome::Rejected { status: code }
    } else {
        retry(format!("receiver answered {code}"))
    }
}

fn retry(reason: String) -> PushOutcome {
    PushOutcome::Retry { reason }
}

/// A retry reason for a transport error, without the URL (it may carry secrets in its query).
fn describe(error: reqwest::Error) -> String {
    let error = error.without_url();
    let kind = if error.is_timeout() {
        "timeout"
    } else if error.is_connect() {
        "connection failed"
    } else {
        "request failed"
    };
    let mut root: &dyn std::error::Error = &error;
    while let Some(source) = root.source() {
        root = source;
    }
    format!("{kind}: {root}")
}

/// Read at most `limit` bytes of the response body, keeping them in `keep` when given; errors
/// are irrelevant here, the status already decided the outcome.
async fn drain(response: &mut reqwest::Response, limit: usize, mut keep: Option<&mut Vec<u8>>) {
    let mut read = 0usize;
    while read < limit {
        match response.chunk().await {
            Ok(Some(chunk)) => {
                if let Some(keep) = keep.as_deref_mut() {
                    keep.extend_from_slice(&chunk[..chunk.len().min(limit - read)]);
                }
                read += chunk.len();
            }
            _ => break,
        }
    }
}

/// §9.6: the host and the outcome only — never the body, header values or the full URL.
fn log(host: Option<&str>, outcome: &PushOutcome) {
    let host = host.unwrap_or("-");
    match outcome {
        PushOutcome::Delivered { status } => tracing::info!(host, status, "callback delivered"),
        PushOutcome::Rejected { status } => tracing::warn!(host, status, "callback rejected by receiver"),
        PushOutcome::Retry { reason } => tracing::warn!(host, reason = %reason, "callback delivery failed; retryable"),
        PushOutcome::Refused { reason } => tracing::warn!(host, reason = %reason, "callback refused by egress guard"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io;
    use std::sync::atomic::{AtomicUsize, Ordering};

    /// Answers `first` on the first call and `then` afterwards; counts calls.
    struct Flipping {
        first: &'static str,
        then: &'static str,
        calls: AtomicUsize,
    }

    #[async_trait]
    impl Resolve for Flipping {
        async fn resolve(&self, _host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
            let n = self.calls.fetch_add(1, Ordering::SeqCst);
            let ip = if n == 0 { self.first } else { self.then };
            Ok(vec![SocketAddr::new(ip.parse().unwrap(), port)])
        }
    }

    fn sender(resolver: Arc<Flipping>) -> HttpPushSender {
        HttpPushSender::with_resolver(EgressPolicy::production(), resolver).unwrap()
    }

    /// Production rebinding without touching the network: vetting resolves once and yields the
    /// public answer, and the client's DNS hook then serves that pinned answer — never the
    /// resolver's later (loopback) answer.
    #[tokio::test]
    async fn rebinding_pins_the_first_vetted_answer() {
        use reqwest::dns::Resolve as _;
        let flipping = Arc::new(Flipping { first: "93.184.216.34", then: "127.0.0.1", calls: AtomicUsize::new(0) });
        let sender = sender(flipping.clone());
        let url = Url::parse("https://agent.example/cb").unwrap();
        let addrs = sender.vet(&url).await.unwrap();
        assert_eq!(addrs, vec!["93.184.216.34:443".parse().unwrap()]);
        let _pin = sender.pins.pin("agent.example", addrs.clone());
        let served: Vec<_> = sender.pins.resolve("agent.example".parse().unwrap()).await.unwrap().collect();
        assert_eq!(served, addrs);
        assert_eq!(flipping.calls.load(Ordering::SeqCst), 1, "resolved exactly once");
    }

    #[tokio::test]
    async fn any_forbidden_answer_refuses_the_host() {
        struct Mixed;
        #[async_trait]
        impl Resolve for Mixed {
            async fn resolve(&self, _host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
                Ok(vec![
                    SocketAddr::new("93.184.216.34".parse().unwrap(), port),
                    SocketAddr::new("10.1.2.3".parse().unwrap(), port),
                ])
            }
        }
        let sender = HttpPushSender::with_resolver(EgressPolicy::production(), Arc::new(Mixed)).unwrap();
        let url = Url::parse("https://agent.example/cb").unwrap();
        match sender.vet(&url).await {
            Err(PushOutcome::Refused { reason }) => assert!(reason.contains("10.1.2.3"), "{reason}"),
            other => panic!("expected refusal, got {other:?}"),
        }
    }

    #[test]
    fn status_classification() {
        assert_eq!(classify(StatusCode::OK), PushOutcome::Delivered { status: 200 });
        assert_eq!(classify(StatusCode::NO_CONTENT), PushOutcome::Delivered { status: 204 });
        assert_eq!(classify(StatusCode::FOUND), PushOutcome::Refused { reason: "redirect not followed".into() });
        assert_eq!(classify(StatusCode::NOT_MODIFIED), PushOutcome::Refused { reason: "redirect not followed".into() });
        assert_eq!(classify(StatusCode::BAD_REQUEST), PushOutcome::Rejected { status: 400 });
        assert_eq!(classify(StatusCode::TOO_MANY_REQUESTS), PushOutcome::Rejected { status: 429 });
        assert!(matches!(classify(StatusCode::SERVICE_UNAVAILABLE), PushOutcome::Retry { .. }));
    }
}

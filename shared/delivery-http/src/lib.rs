//! # ma2h-delivery-http
//!
//! The Hub's **only** egress path for agent callbacks: an implementation of the
//! [`PushSender`](ma2h_core::ports::PushSender) port that POSTs a signed §6 Response to the
//! agent-supplied `callback.url` (§8.3) and enforces the callback destination safety rules of
//! §9.4 **at delivery time**, on every attempt:
//!
//! * **URL shape** ([`check_callback_url`]): parsed with the WHATWG `url` parser (so numeric
//!   obfuscations such as `2130706433`, `0177.0.0.1` or `0x7f.1` are normalised to `127.0.0.1`
//!   before any check); `https` only in [`EgressMode::Production`]; a host is required; no
//!   userinfo (credentials never travel in a callback URL).
//! * **Address guard** ([`is_forbidden`]): loopback, private, CGNAT, link-local/metadata,
//!   multicast, broadcast, unspecified, documentation/benchmark/reserved ranges and the IPv6
//!   forms that embed such an IPv4 address are refused. A dev-mode allow-list
//!   ([`EgressPolicy::dev_allow`]) exists but is ignored in production: it fails closed (§9.4).
//! * **DNS rebinding**: the host is resolved **once** through an injectable [`Resolve`]r; if
//!   *any* answer is forbidden the delivery is refused (we do not cherry-pick the "good" answers:
//!   a host that answers with an internal address is suspect as a whole). The HTTP client then
//!   connects to exactly the vetted addresses — its DNS hook only serves addresses this crate
//!   vetted, so there is no second lookup — while TLS still verifies the hostname.
//! * **No redirects**: a 3xx is reported as `Refused { reason: "redirect not followed" }`.
//! * **No proxies**: the system proxy is disabled; a proxy would re-resolve the host itself and
//!   bypass the vetting.
//! * **Telemetry minimisation** (§9.6): only the host and the outcome are logged — never request
//!   bodies, header values (signatures, bearer tokens, API keys) or the full URL.
//!
//! Outcome mapping (§8.3): 2xx → `Delivered`; 4xx → `Rejected` (never retried); 5xx, timeouts and
//! network errors → `Retry`; a guard refusal or a 3xx → `Refused` (permanent, never retried).

mod resolve;
mod sender;

use std::net::IpAddr;
use std::time::Duration;

pub use ipnet::IpNet;
pub use ma2h_protocol::egress::is_forbidden;
pub use resolve::{Resolve, SystemResolver};
pub use sender::{BuildError, HttpPushSender};
pub use url::Url;

/// Where the Hub runs. §9.4: "A dev-mode relaxation MAY exist but MUST fail closed in production."
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum EgressMode {
    /// Local development: `http://` callbacks are accepted and [`EgressPolicy::dev_allow`] is
    /// honoured.
    Dev,
    /// Everything else (the default): `https://` only, and no address exceptions at all.
    #[default]
    Production,
}

/// The egress rules and limits one [`HttpPushSender`] applies to every delivery attempt.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EgressPolicy {
    pub mode: EgressMode,
    /// Networks that are reachable despite [`is_forbidden`] — e.g. `127.0.0.0/8` for a callback
    /// receiver on the developer's machine. Honoured **only** in [`EgressMode::Dev`]; ignored
    /// (fail closed) in production.
    pub dev_allow: Vec<IpNet>,
    /// Bound on DNS resolution and on the TCP (+ TLS) connect.
    pub connect_timeout: Duration,
    /// Bound on one HTTP exchange, from sending the request to the end of the (capped) body read.
    pub total_timeout: Duration,
    /// At most this many bytes of the receiver's response body are read (then discarded).
    pub max_response_bytes: usize,
}

impl Default for EgressPolicy {
    fn default() -> Self {
        Self {
            mode: EgressMode::Production,
            dev_allow: Vec::new(),
            connect_timeout: Duration::from_secs(5),
            total_timeout: Duration::from_secs(10),
            max_response_bytes: 4 * 1024,
        }
    }
}

impl EgressPolicy {
    /// The production policy with the default limits.
    pub fn production() -> Self {
        Self::default()
    }

    /// A dev policy that additionally permits the given networks.
    pub fn dev(dev_allow: Vec<IpNet>) -> Self {
        Self { mode: EgressMode::Dev, dev_allow, ..Self::default() }
    }

    /// Whether a delivery may connect to `ip` under this policy (§9.4).
    pub fn permits(&self, ip: IpAddr) -> bool {
        if !is_forbidden(ip) {
            return true;
        }
        // The relaxation exists only in dev mode; in production this is unreachable whatever
        // `dev_allow` holds.
        self.mode == EgressMode::Dev && self.dev_allow.iter().any(|net| net.contains(&ip))
    }
}

/// Shape checks on a callback URL (§8.3, §9.4), usable at submit time and re-applied at delivery.
///
/// Accepts `https` (and `http` only in [`EgressMode::Dev`]), requires a host and refuses
/// userinfo. Parsing is WHATWG (the `url` crate), so the returned [`Url`]'s host is normalised
/// (`http://0x7f.1/` has host `127.0.0.1`). This does **not** vet the destination address: that
/// needs DNS and happens at delivery time. Error messages never echo the URL (it may carry
/// secrets in its query).
pub fn check_callback_url(url: &str, mode: EgressMode) -> Result<Url, CallbackUrlError> {
    let parsed = Url::parse(url).map_err(CallbackUrlError::Invalid)?;
    match (parsed.scheme(), mode) {
        ("https", _) | ("http", EgressMode::Dev) => {}
        ("http", EgressMode::Production) => return Err(CallbackUrlError::NotHttps),
        (other, _) => return Err(CallbackUrlError::Scheme(other.to_owned())),
    }
    if parsed.host().is_none() {
        return Err(CallbackUrlError::NoHost);
    }
    if !parsed.username().is_empty() || parsed.password().is_some() {
        return Err(CallbackUrlError::Credentials);
    }
    Ok(parsed)
}

/// Why a callback URL's shape is refused. The texts never echo the URL (§9.6).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CallbackUrlError {
    #[error("invalid callback url: {0}")]
    Invalid(url::ParseError),
    #[error("callback url must use https")]
    NotHttps,
    #[error("unsupported callback url scheme {0:?}")]
    Scheme(String),
    #[error("callback url has no host")]
    NoHost,
    #[error("callback url must not carry credentials")]
    Credentials,
}

/// A `MA2H_DEV_EGRESS_ALLOW` entry that is not a network.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("MA2H_DEV_EGRESS_ALLOW: `{0}` is not a CIDR network")]
pub struct EgressConfigError(pub String);

impl EgressPolicy {
    /// The policy for a Hub configured by `settings`: dev mode honours `MA2H_DEV_EGRESS_ALLOW`,
    /// production ignores it; timeouts come from the push settings.
    pub fn from_settings(settings: &ma2h_core::kernel::settings::Settings) -> Result<Self, EgressConfigError> {
        let mut policy = match settings.mode {
            ma2h_core::kernel::settings::Mode::Dev => Self::dev(
                settings
                    .dev_egress_allow
                    .iter()
                    .map(|n| n.parse().map_err(|_| EgressConfigError(n.clone())))
                    .collect::<Result<Vec<_>, _>>()?,
            ),
            ma2h_core::kernel::settings::Mode::Production => Self::production(),
        };
        policy.connect_timeout = settings.push.connect_timeout;
        policy.total_timeout = settings.push.total_timeout;
        Ok(policy)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv4Addr;
    use url::Host;

    #[test]
    fn whatwg_normalises_numeric_ipv4_hosts() {
        for raw in ["http://2130706433/", "http://0177.0.0.1/", "http://0x7f.1/", "http://127.1/", "http://0x7f000001/"]
        {
            let url = check_callback_url(raw, EgressMode::Dev).expect(raw);
            assert_eq!(url.host(), Some(Host::Ipv4(Ipv4Addr::LOCALHOST)), "{raw}");
        }
    }

    #[test]
    fn shape_rules() {
        use EgressMode::*;
        assert!(check_callback_url("https://agent.example/cb", Production).is_ok());
        assert!(check_callback_url("http://agent.example/cb", Dev).is_ok());
        assert_eq!(
            check_callback_url("http://agent.example/cb", Production).unwrap_err().to_string(),
            "callback url must use https"
        );
        let err = |u: &str, mode| check_callback_url(u, mode).unwrap_err();
        assert_eq!(err("ftp://agent.example/cb", Dev), CallbackUrlError::Scheme("ftp".into()));
        assert_eq!(err("file:///etc/passwd", Dev), CallbackUrlError::Scheme("file".into()));
        assert_eq!(err("https://user:pw@agent.example/", Production), CallbackUrlError::Credentials);
        assert_eq!(err("https://user@agent.example/", Production), CallbackUrlError::Credentials);
        assert!(check_callback_url("not a url", Production).is_err());
        assert!(check_callback_url("https://", Production).is_err());
    }

    #[test]
    fn dev_allow_fails_closed_in_production() {
        let loopback: IpAddr = "127.0.0.1".parse().unwrap();
        let allow = vec!["127.0.0.0/8".parse().unwrap()];
        let dev = EgressPolicy::dev(allow.clone());
        assert!(dev.permits(loopback));
        assert!(!dev.permits("10.0.0.1".parse().unwrap()), "only the listed networks are relaxed");
        let prod = EgressPolicy { mode: EgressMode::Production, dev_allow: allow, ..EgressPolicy::default() };
        assert!(!prod.permits(loopback));
        assert!(prod.permits("93.184.216.34".parse().unwrap()));
    }
}

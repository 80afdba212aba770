//! Who the relying party is: the RP id is the host of `MA2H_PUBLIC_URL`, and an assertion is
//! accepted only from that URL's origin. Browsers offer WebAuthn only to a secure context named by
//! a domain: `https://…`, or `http://localhost`. A loopback address (`http://127.0.0.1:8080`, the
//! default for `make run`) is served as `localhost` — the inbox says to open it there. In dev mode
//! any `http://localhost:<port>` origin is accepted, as `make run` and the tests bind anywhere.

use std::borrow::Cow;

use webauthn_rp::request::{AsciiDomain, RpId};
use webauthn_rp::response::Origin;

use crate::Hub;
use crate::kernel::settings::Mode;

/// The relying party of this deployment.
pub struct RelyingParty {
    pub id: RpId,
    /// The RP id as text: the domain passkeys belong to.
    pub host: String,
    /// The origin the inbox must be opened at (what the pages link to when it is not).
    pub origin: String,
    origins: Vec<OriginRule>,
}

/// One accepted origin: scheme and host exactly; the port exactly, or (dev mode, localhost) any.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OriginRule {
    scheme: String,
    host: String,
    /// `None`: any port.
    port: Option<Option<u16>>,
}

impl PartialEq<Origin<'_>> for OriginRule {
    fn eq(&self, other: &Origin<'_>) -> bool {
        let Ok(url) = url::Url::parse(&other.0) else { return false };
        // an origin is scheme://host[:port] and nothing more
        if url.path() != "/" || url.query().is_some() || other.0.ends_with('/') {
            return false;
        }
        url.scheme() == self.scheme
            && url.host_str() == Some(self.host.as_str())
            && self.port.is_none_or(|p| url.port() == p)
    }
}

impl RelyingParty {
    /// The relying party for `MA2H_PUBLIC_URL`, or why passkeys cannot work there.
    pub fn of(hub: &Hub) -> Result<Self, String> {
        let public = &hub.settings.public_url;
        let url = url::Url::parse(public).map_err(|_| format!("MA2H_PUBLIC_URL ({public}) is not a URL"))?;
        let host = match url.host() {
            Some(url::Host::Domain(d)) => d.to_ascii_lowercase(),
            Some(url::Host::Ipv4(ip)) if ip.is_loopback() => "localhost".to_owned(),
            Some(url::Host::Ipv6(ip)) if ip.is_loopback() => "localhost".to_owned(),
            _ => {
                return Err(format!("passkeys need the Hub reached by a domain name; MA2H_PUBLIC_URL is {public}"));
            }
        };
        let local = host == "localhost" || host.ends_with(".localhost");
        if url.scheme() != "https" && !local {
            return Err(format!("passkeys need https (or http://localhost); MA2H_PUBLIC_URL is {public}"));
        }
        let domain = AsciiDomain::try_from(host.clone()).map_err(|_| format!("`{host}` is not a usable RP id"))?;
        let port = url.port();
        let origin = match port {
            Some(p) => format!("{}://{host}:{p}", url.scheme()),
            None => format!("{}://{host}", url.scheme()),
        };
        let any_port = local && hub.settings.mode == Mode::Dev;
        let rule = OriginRule {
            scheme: url.scheme().to_owned(),
            host: host.clone(),
            port: if any_port { None } else { Some(port) },
        };
        Ok(Self { id: RpId::Domain(domain), host, origin, origins: vec![rule] })
    }

    pub fn origins(&self) -> &[OriginRule] {
        &self.origins
    }
}

/// An `Origin` as the library reports it (for tests).
pub fn origin(s: &str) -> Origin<'_> {
    Origin(Cow::Borrowed(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rule(port: Option<Option<u16>>) -> OriginRule {
        OriginRule { scheme: "https".into(), host: "hub.example.com".into(), port }
    }

    #[test]
    fn an_origin_matches_only_its_own_scheme_host_and_port() {
        let exact = rule(Some(None));
        assert!(exact == origin("https://hub.example.com"));
        assert!(exact != origin("https://hub.example.com:8443"));
        assert!(exact != origin("http://hub.example.com"));
        assert!(exact != origin("https://evil.example.com"));
        assert!(exact != origin("https://hub.example.com.evil.io"));
        assert!(exact != origin("https://hub.example.com/"));
        let any = rule(None);
        assert!(any == origin("https://hub.example.com:8443"));
        assert!(any != origin("https://other.example.com:8443"));
    }
}

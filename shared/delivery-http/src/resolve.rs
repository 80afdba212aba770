//! Name resolution for deliveries, and the pin table that closes the DNS-rebinding gap (§9.4:
//! the refusal applies "at delivery time (not only at registration — DNS-rebinding defense)").
//!
//! A delivery resolves the callback host exactly once through a [`Resolve`] implementation,
//! vets every answer, and *pins* the vetted addresses for the host in a [`PinTable`]. The HTTP
//! client's only DNS hook is that table: it hands back pinned addresses and fails for any host
//! without a pin, so the client never performs a lookup of its own and can only connect to
//! addresses the guard approved.

use std::collections::HashMap;
use std::io;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};

use async_trait::async_trait;
use reqwest::dns::{Addrs, Name, Resolving};

/// Resolves a callback host to socket addresses. Injectable so tests (and deployments with
/// their own resolver) control the answers; the default is [`SystemResolver`].
#[async_trait]
pub trait Resolve: Send + Sync {
    async fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>>;
}

/// The operating system's resolver (`tokio::net::lookup_host`).
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemResolver;

#[async_trait]
impl Resolve for SystemResolver {
    async fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
        Ok(tokio::net::lookup_host((host, port)).await?.collect())
    }
}

/// Vetted addresses per host for the deliveries in flight — the HTTP client's DNS.
///
/// Concurrent deliveries to the same host share one entry (the most recently vetted answer,
/// counted by a reference count and removed when the last delivery ends); every address ever
/// placed here passed the guard, so a connection can only reach a vetted address. Connection
/// pooling is disabled on the client, so each delivery opens its own connection after pinning.
#[derive(Debug, Clone, Default)]
pub(crate) struct PinTable(Arc<Mutex<HashMap<String, Pin>>>);

#[derive(Debug)]
struct Pin {
    addrs: Vec<SocketAddr>,
    in_flight: usize,
}

impl PinTable {
    /// Pin `addrs` (already vetted) for `host` until the returned guard is dropped.
    pub(crate) fn pin(&self, host: &str, addrs: Vec<SocketAddr>) -> PinGuard {
        let key = host.to_ascii_lowercase();
        let mut table = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let entry = table.entry(key.clone()).or_insert(Pin { addrs: Vec::new(), in_flight: 0 });
        entry.addrs = addrs;
        entry.in_flight += 1;
        PinGuard { table: self.clone(), host: key }
    }

    fn lookup(&self, host: &str) -> Option<Vec<SocketAddr>> {
        let table = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        table.get(&host.to_ascii_lowercase()).map(|pin| pin.addrs.clone())
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.0.lock().unwrap_or_else(PoisonError::into_inner).len()
    }
}

/// Keeps a host's pin alive for one delivery.
#[derive(Debug)]
pub(crate) struct PinGuard {
    table: PinTable,
    host: String,
}

impl Drop for PinGuard {
    fn drop(&mut self) {
        let mut table = self.table.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(pin) = table.get_mut(&self.host) {
            pin.in_flight -= 1;
            if pin.in_flight == 0 {
                table.remove(&self.host);
            }
        }
    }
}

impl reqwest::dns::Resolve for PinTable {
    fn resolve(&self, name: Name) -> Resolving {
        let pinned = self.lookup(name.as_str());
        Box::pin(async move {
            match pinned {
                Some(addrs) if !addrs.is_empty() => Ok(Box::new(addrs.into_iter()) as Addrs),
                // Fail closed: the client never resolves a name itself.
                _ => Err("egress guard: no vetted address pinned for this host".into()),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use reqwest::dns::Resolve as _;

    fn addr(s: &str) -> SocketAddr {
        s.parse().unwrap()
    }

    #[tokio::test]
    async fn pins_serve_only_vetted_addresses_and_expire() {
        let table = PinTable::default();
        let name: Name = "Agent.Example".parse().unwrap();
        assert!(table.resolve(name).await.is_err(), "unpinned host must not resolve");

        let a = table.pin("agent.example", vec![addr("93.184.216.34:443")]);
        let b = table.pin("AGENT.example", vec![addr("93.184.216.35:443")]);
        let got: Vec<_> = table.resolve("agent.example".parse().unwrap()).await.unwrap().collect();
        assert_eq!(got, vec![addr("93.184.216.35:443")]);
        drop(b);
        assert!(table.resolve("agent.example".parse().unwrap()).await.is_ok(), "still one delivery in flight");
        drop(a);
        assert_eq!(table.len(), 0);
        assert!(table.resolve("agent.example".parse().unwrap()).await.is_err());
    }
}

//! Local receivers and resolvers for the delivery tests. Every server binds a loopback address
//! and every test URL points at loopback or is refused before any connection is attempted.

#![allow(dead_code)]

use std::io;
use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use axum::Router;
use axum::body::Bytes;
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::IntoResponse;
use ma2h_delivery_http::Resolve;
use tokio::net::TcpListener;

/// What the receiver saw.
#[derive(Debug, Clone)]
pub struct Seen {
    pub path: String,
    pub headers: HeaderMap,
    pub body: Vec<u8>,
}

/// A callback receiver on a loopback address: records every request, and answers per path.
#[derive(Clone, Default)]
pub struct Receiver {
    pub seen: Arc<Mutex<Vec<Seen>>>,
    pub addr: Option<SocketAddr>,
}

impl Receiver {
    pub fn requests(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
    pub fn hits(&self, path: &str) -> usize {
        self.requests().iter().filter(|s| s.path == path).count()
    }
    pub fn port(&self) -> u16 {
        self.addr.unwrap().port()
    }
}

/// Serve the receiver on `listener`. Paths: `/ok` 200, `/big` 200 with a 1 MiB body,
/// `/unavailable` 503, `/bad` 400, `/redirect` 302 to `/target`, `/slow` 200 after 5 s.
pub fn serve(listener: TcpListener) -> Receiver {
    let addr = listener.local_addr().unwrap();
    let receiver = Receiver { seen: Arc::default(), addr: Some(addr) };
    let seen = receiver.seen.clone();
    let app = Router::new().fallback(move |uri: Uri, headers: HeaderMap, body: Bytes| {
        let seen = seen.clone();
        async move {
            let path = uri.path().to_owned();
            seen.lock().unwrap().push(Seen { path: path.clone(), headers, body: body.to_vec() });
            match path.as_str() {
                "/ok" | "/target" => (StatusCode::OK, "thanks").into_response(),
                "/big" => (StatusCode::OK, vec![b'x'; 1 << 20]).into_response(),
                "/unavailable" => StatusCode::SERVICE_UNAVAILABLE.into_response(),
                "/bad" => StatusCode::BAD_REQUEST.into_response(),
                "/redirect" => {
                    (StatusCode::FOUND, [(header::LOCATION, format!("http://{addr}/target"))]).into_response()
                }
                "/slow" => {
                    tokio::time::sleep(Duration::from_secs(5)).await;
                    StatusCode::OK.into_response()
                }
                _ => StatusCode::NOT_FOUND.into_response(),
            }
        }
    });
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    receiver
}

/// A receiver on 127.0.0.1 with an OS-chosen port.
pub async fn receiver() -> Receiver {
    serve(TcpListener::bind("127.0.0.1:0").await.unwrap())
}

/// A raw TCP listener that only counts accepted connections (any protocol, TLS included), for
/// "never hit" assertions.
pub struct Tripwire {
    pub port: u16,
    pub accepted: Arc<AtomicUsize>,
}

impl Tripwire {
    pub async fn on(ip: &str) -> Self {
        let listener = TcpListener::bind((ip.parse::<IpAddr>().unwrap(), 0)).await.unwrap();
        let port = listener.local_addr().unwrap().port();
        let accepted = Arc::new(AtomicUsize::new(0));
        let count = accepted.clone();
        tokio::spawn(async move {
            while let Ok((_stream, _)) = listener.accept().await {
                count.fetch_add(1, Ordering::SeqCst);
            }
        });
        Self { port, accepted }
    }
    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

/// A resolver with scripted answers: answer `i` for call `i`, the last one repeated. Counts calls.
pub struct Scripted {
    pub answers: Vec<Vec<IpAddr>>,
    pub calls: AtomicUsize,
    pub hosts: Mutex<Vec<String>>,
}

impl Scripted {
    pub fn new(answers: &[&[&str]]) -> Arc<Self> {
        let answers = answers.iter().map(|a| a.iter().map(|ip| ip.parse().unwrap()).collect()).collect();
        Arc::new(Self { answers, calls: AtomicUsize::new(0), hosts: Mutex::default() })
    }
    pub fn always(ip: &str) -> Arc<Self> {
        Self::new(&[&[ip]])
    }
    pub fn calls(&self) -> usize {
        self.calls.load(Ordering::SeqCst)
    }
}

#[async_trait]
impl Resolve for Scripted {
    async fn resolve(&self, host: &str, port: u16) -> io::Result<Vec<SocketAddr>> {
        self.hosts.lock().unwrap().push(host.to_owned());
        let n = self.calls.fetch_add(1, Ordering::SeqCst);
        let answer = &self.answers[n.min(self.answers.len() - 1)];
        Ok(answer.iter().map(|ip| SocketAddr::new(*ip, port)).collect())
    }
}

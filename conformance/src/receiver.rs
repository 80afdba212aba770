//! The runner's own callback receiver for the push checks (§8.3, §9.2): records every POST per
//! path and answers from a per-path script of statuses (then 200).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use axum::body::Bytes;
use axum::extract::{Path, State};
use axum::http::{HeaderMap, StatusCode};
use serde_json::Value;

/// One request the receiver saw.
#[derive(Debug, Clone)]
pub struct Hit {
    pub at: Instant,
    /// The `MA2H-Signature` header, if any.
    pub signature: Option<String>,
    /// Every header, names lowercased (the bearer/apikey checks read the token headers).
    pub headers: Vec<(String, String)>,
    pub body: Value,
}

impl Hit {
    /// The value of header `name` (case-insensitive), if sent.
    pub fn header(&self, name: &str) -> Option<&str> {
        let name = name.to_ascii_lowercase();
        self.headers.iter().find(|(n, _)| *n == name).map(|(_, v)| v.as_str())
    }
}

/// Shared receiver state.
#[derive(Clone, Default)]
pub struct Receiver {
    scripts: Arc<Mutex<HashMap<String, Vec<u16>>>>,
    hits: Arc<Mutex<HashMap<String, Vec<Hit>>>>,
    /// Public base URL the Hub posts to; callback URLs are `<base>/cb/<path>`.
    pub base: String,
}

impl Receiver {
    /// Bind `listen` and serve in the background; `public` overrides the advertised base.
    pub async fn start(host: &str, listen: &str, public: Option<&str>) -> anyhow::Result<Self> {
        let listener = tokio::net::TcpListener::bind(listen).await?;
        let port = listener.local_addr()?.port();
        let base = public.map_or_else(|| format!("http://{host}:{port}"), |p| p.trim_end_matches('/').to_owned());
        let receiver = Receiver { base, ..Receiver::default() };
        let app = axum::Router::new().route("/cb/{path}", axum::routing::post(receive)).with_state(receiver.clone());
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        Ok(receiver)
    }

    /// The callback URL for `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}/cb/{path}", self.base)
    }

    /// Answer the next requests on `path` with `statuses`, then 200.
    pub fn script(&self, path: &str, statuses: &[u16]) {
        self.scripts.lock().unwrap().insert(path.to_owned(), statuses.to_vec());
    }

    pub fn hits(&self, path: &str) -> Vec<Hit> {
        self.hits.lock().unwrap().get(path).cloned().unwrap_or_default()
    }

    /// Wait up to `timeout` for at least `n` hits on `path`; returns whatever arrived.
    pub async fn wait_for(&self, path: &str, n: usize, timeout: Duration) -> Vec<Hit> {
        let deadline = Instant::now() + timeout;
        loop {
            let hits = self.hits(path);
            if hits.len() >= n || Instant::now() >= deadline {
                return hits;
            }
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }
}

async fn receive(State(r): State<Receiver>, Path(path): Path<String>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let signature =
        headers.get(ma2h_protocol::signature::SIGNATURE_HEADER).and_then(|v| v.to_str().ok()).map(str::to_owned);
    let all = headers.iter().filter_map(|(n, v)| Some((n.as_str().to_owned(), v.to_str().ok()?.to_owned()))).collect();
    let body = serde_json::from_slice(&body).unwrap_or(Value::Null);
    let hit = Hit { at: Instant::now(), signature, headers: all, body };
    r.hits.lock().unwrap().entry(path.clone()).or_default().push(hit);
    let next = {
        let mut scripts = r.scripts.lock().unwrap();
        scripts.get_mut(&path).and_then(|s| (!s.is_empty()).then(|| s.remove(0))).unwrap_or(200)
    };
    StatusCode::from_u16(next).unwrap_or(StatusCode::OK)
}

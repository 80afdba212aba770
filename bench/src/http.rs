//! A lean HTTP/1.1 keep-alive client: one TCP connection, hyper's connection-level API, no pool.
//! The load generator shares the machine's cores with the Hub, so every request it sends costs as
//! little as possible: headers are built once, bodies are pre-serialized bytes.

use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use bytes::Bytes;
use http_body_util::{BodyExt as _, Full};
use hyper::client::conn::http1::{self, SendRequest};
use hyper::header::{AUTHORIZATION, CONTENT_TYPE, HOST, HeaderValue};
use hyper::{Method, Request};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

/// `http://host:port` split into what a connection needs.
#[derive(Debug, Clone)]
pub struct Target {
    /// `host:port` to connect to.
    pub addr: String,
    /// The `Host` header value.
    pub host: HeaderValue,
}

impl Target {
    /// Parse a plain-http base URL (`http://127.0.0.1:8080`, a trailing `/` or path is ignored).
    pub fn parse(url: &str) -> Result<Self> {
        let rest = url.strip_prefix("http://").context("--url must be a plain http:// URL (the Hub in dev mode)")?;
        let authority = rest.split('/').next().unwrap_or_default();
        if authority.is_empty() {
            bail!("--url has no host");
        }
        let addr = if authority.contains(':') { authority.to_owned() } else { format!("{authority}:80") };
        Ok(Self { addr, host: HeaderValue::from_str(authority)? })
    }
}

/// A bearer credential as a ready header value.
pub fn bearer(key: &str) -> Result<HeaderValue> {
    let mut v = HeaderValue::from_str(&format!("Bearer {key}")).context("the key is not a valid header value")?;
    v.set_sensitive(true);
    Ok(v)
}

/// One keep-alive connection.
pub struct Conn {
    send: SendRequest<Full<Bytes>>,
    host: HeaderValue,
}

/// A response: status and the whole body.
pub struct Resp {
    pub status: u16,
    pub body: Bytes,
}

impl Resp {
    /// The body as JSON (`Null` if it is not JSON).
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap_or(serde_json::Value::Null)
    }

    /// `status body` for error messages (body cut to 300 bytes).
    pub fn show(&self) -> String {
        let body = String::from_utf8_lossy(&self.body[..self.body.len().min(300)]).into_owned();
        format!("{} {body}", self.status)
    }
}

static JSON: HeaderValue = HeaderValue::from_static("application/json");

/// A TCP connection to `target` within 5 s, with `TCP_NODELAY` (a small request must not wait
/// for Nagle).
pub async fn tcp(target: &Target) -> Result<TcpStream> {
    let stream = tokio::time::timeout(Duration::from_secs(5), TcpStream::connect(&target.addr))
        .await
        .with_context(|| format!("connecting to {}: timed out", target.addr))?
        .with_context(|| format!("connecting to {}", target.addr))?;
    stream.set_nodelay(true)?;
    Ok(stream)
}

impl Conn {
    /// Connect with `TCP_NODELAY` (small requests must not wait for Nagle) and spawn the
    /// connection driver on the current runtime.
    pub async fn connect(target: &Target) -> Result<Self> {
        let (send, conn) = http1::handshake(TokioIo::new(tcp(target).await?)).await?;
        tokio::spawn(async move {
            let _ = conn.await;
        });
        Ok(Self { send, host: target.host.clone() })
    }

    /// Send one request and read the whole response. `Err` is a transport failure; the
    /// connection is then unusable and the caller reconnects.
    pub async fn request(
        &mut self,
        method: Method,
        path: &str,
        auth: Option<&HeaderValue>,
        body: Option<Bytes>,
    ) -> Result<Resp> {
        let mut builder = Request::builder().method(method).uri(path).header(HOST, self.host.clone());
        if let Some(a) = auth {
            builder = builder.header(AUTHORIZATION, a.clone());
        }
        if body.is_some() {
            builder = builder.header(CONTENT_TYPE, JSON.clone());
        }
        let req = builder.body(Full::new(body.unwrap_or_default()))?;
        self.send.ready().await?;
        let resp = self.send.send_request(req).await?;
        let status = resp.status().as_u16();
        let body = resp.into_body().collect().await?.to_bytes();
        Ok(Resp { status, body })
    }

    pub async fn post(&mut self, path: &str, auth: &HeaderValue, body: Bytes) -> Result<Resp> {
        self.request(Method::POST, path, Some(auth), Some(body)).await
    }

    pub async fn get(&mut self, path: &str, auth: &HeaderValue) -> Result<Resp> {
        self.request(Method::GET, path, Some(auth), None).await
    }
}

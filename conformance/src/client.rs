//! The runner's only view of the Hub: HTTP requests with a credential (black-box).

use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::header::{AUTHORIZATION, CONTENT_TYPE, DATE};
use serde_json::Value;

/// One HTTP exchange as the checks see it.
#[derive(Debug, Clone)]
pub struct Resp {
    pub status: u16,
    /// The JSON body, or `Null` when empty / not JSON.
    pub body: Value,
    /// The `Date` header, when sent (used to estimate the Hub clock, §9.5).
    pub date: Option<String>,
    pub retry_after: Option<String>,
    /// The `Location` header, when sent (a 201's new resource).
    pub location: Option<String>,
}

impl Resp {
    /// `error.code` of a §8.5 error envelope (empty when absent).
    pub fn code(&self) -> &str {
        self.body["error"]["code"].as_str().unwrap_or_default()
    }

    /// `status code` for failure messages.
    pub fn show(&self) -> String {
        let mut body = self.body.to_string();
        if body.len() > 300 {
            body.truncate(300);
            body.push('…');
        }
        format!("{} {body}", self.status)
    }

    /// `Ok` iff the status (and, when given, the §8.5 code) match.
    pub fn expect(&self, status: u16, code: Option<&str>) -> Result<(), String> {
        if self.status != status || code.is_some_and(|c| self.code() != c) {
            let want = code.map_or(status.to_string(), |c| format!("{status} {c}"));
            return Err(format!("expected {want}, got {}", self.show()));
        }
        Ok(())
    }
}

/// A §8.5 envelope violation seen on some error response.
#[derive(Debug, Clone)]
pub struct EnvelopeViolation {
    pub what: String,
}

/// HTTP client bound to one Hub base URL. Every error response (≥ 400) is checked against the
/// §8.5 envelope shape; violations are collected for the aggregate §8.5 check.
#[derive(Clone)]
pub struct Hub {
    http: reqwest::Client,
    base: String,
    pub errors_seen: Arc<Mutex<usize>>,
    pub violations: Arc<Mutex<Vec<EnvelopeViolation>>>,
}

impl Hub {
    pub fn new(base: &str) -> anyhow::Result<Self> {
        // One TLS stack: rustls on `ring`, installed as the process default unless the binary
        // already chose one (an Err here only means it did).
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = reqwest::Client::builder().connect_timeout(Duration::from_secs(10)).build()?;
        Ok(Self {
            http,
            base: base.trim_end_matches('/').to_owned(),
            errors_seen: Arc::default(),
            violations: Arc::default(),
        })
    }

    pub fn base(&self) -> &str {
        &self.base
    }

    /// One request; transport failures become a synthetic status 0 with the reason in `body`.
    pub async fn call(&self, method: &str, path: &str, key: Option<&str>, body: Option<&Value>) -> Resp {
        let url = format!("{}{path}", self.base);
        let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap_or(reqwest::Method::GET);
        let mut req = self.http.request(method.clone(), &url).timeout(Duration::from_secs(75));
        if let Some(k) = key {
            req = req.header(AUTHORIZATION, format!("Bearer {k}"));
        }
        if let Some(b) = body {
            req = req.header(CONTENT_TYPE, "application/json").body(serde_json::to_vec(b).unwrap_or_default());
        }
        let resp = match req.send().await {
            Ok(r) => r,
            Err(e) => {
                return Resp {
                    status: 0,
                    body: Value::String(format!("{e}")),
                    date: None,
                    retry_after: None,
                    location: None,
                };
            }
        };
        let status = resp.status().as_u16();
        let header = |name| resp.headers().get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
        let date = header(DATE);
        let retry_after = header(reqwest::header::RETRY_AFTER);
        let location = header(reqwest::header::LOCATION);
        let bytes = resp.bytes().await.unwrap_or_default();
        let body = serde_json::from_slice(&bytes).unwrap_or(Value::Null);
        let r = Resp { status, body, date, retry_after, location };
        if status >= 400 && method != reqwest::Method::HEAD {
            self.note_error(path, &r);
        }
        r
    }

    /// §8.5: `{"error": {"code": <string>, "message": <string>}}` on every error.
    fn note_error(&self, path: &str, r: &Resp) {
        *self.errors_seen.lock().unwrap() += 1;
        let e = &r.body["error"];
        if !(e["code"].is_string() && e["message"].is_string()) {
            let what = format!("{path} → {}", r.show());
            self.violations.lock().unwrap().push(EnvelopeViolation { what });
        }
    }

    /// A GET whose body is not JSON (the §8.7.2 event stream): status, `Content-Type` and the
    /// body as text, read to its end (the Hub bounds a stream's hold).
    pub async fn get_text(&self, path: &str, key: &str) -> (u16, String, String) {
        let req = self.http.get(format!("{}{path}", self.base)).timeout(Duration::from_secs(75));
        match req.header(AUTHORIZATION, format!("Bearer {key}")).send().await {
            Ok(r) => {
                let status = r.status().as_u16();
                let ct = r.headers().get(CONTENT_TYPE).and_then(|v| v.to_str().ok()).unwrap_or_default().to_owned();
                (status, ct, r.text().await.unwrap_or_default())
            }
            Err(e) => (0, String::new(), e.to_string()),
        }
    }

    /// A Slack-style interaction: form body, `X-Slack-Request-Timestamp` now, the given signature.
    pub async fn slack_interaction(&self, path: &str, form: &str, signature: &str) -> Resp {
        let ts = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default().as_secs();
        let req = self
            .http
            .post(format!("{}{path}", self.base))
            .timeout(Duration::from_secs(30))
            .header(CONTENT_TYPE, "application/x-www-form-urlencoded")
            .header("X-Slack-Request-Timestamp", ts.to_string())
            .header("X-Slack-Signature", signature)
            .body(form.to_owned());
        let (status, body) = match req.send().await {
            Ok(resp) => {
                let status = resp.status().as_u16();
                (status, serde_json::from_slice(&resp.bytes().await.unwrap_or_default()).unwrap_or(Value::Null))
            }
            Err(e) => (0, Value::String(e.to_string())),
        };
        let r = Resp { status, body, date: None, retry_after: None, location: None };
        if status >= 400 {
            self.note_error(path, &r);
        }
        r
    }

    pub async fn get(&self, path: &str, key: &str) -> Resp {
        self.call("GET", path, Some(key), None).await
    }

    pub async fn post(&self, path: &str, key: &str, body: &Value) -> Resp {
        self.call("POST", path, Some(key), Some(body)).await
    }

    pub async fn submit(&self, key: &str, envelope: &Value) -> Resp {
        self.post("/v1/messages", key, envelope).await
    }

    pub async fn read(&self, key: &str, id: &str) -> Resp {
        self.get(&format!("/v1/messages/{id}"), key).await
    }

    pub async fn cancel(&self, key: &str, id: &str) -> Resp {
        self.post(&format!("/v1/messages/{id}/cancel"), key, &serde_json::json!({})).await
    }

    pub async fn resolve(&self, key: &str, id: &str, body: &Value) -> Resp {
        self.post(&format!("/v1/messages/{id}/resolve"), key, body).await
    }
}

//! Drive the real `ma2h-hub` binary: start it on port 0 with a data directory, talk HTTP/1.1
//! over a plain socket, and kill it hard.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

use serde_json::{Value, json};

pub const BIN: &str = env!("CARGO_BIN_EXE_ma2h-hub");

pub fn base_command(data: &Path) -> Command {
    let mut c = Command::new(BIN);
    c.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("MA2H_MODE", "dev")
        .env("MA2H_DATA_DIR", data)
        .env("MA2H_BIND", "127.0.0.1:0")
        .env("MA2H_PUBLIC_URL", "http://127.0.0.1:8080")
        .env("MA2H_REQUESTS_PER_MINUTE", "0")
        .env("MA2H_INBOX_DEPTH", "0")
        .env("MA2H_LOG", "warn");
    c
}

/// `ma2h-hub admin <args> --json`, parsed.
/// `admin audit export --account A` into a file under `data`: the JSON Lines written.
pub fn audit_export(data: &Path, account: &str) -> String {
    let file = data.join("audit.jsonl");
    let out = base_command(data)
        .args(["admin", "audit", "export", "--account", account, "--output"])
        .arg(&file)
        .output()
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    std::fs::read_to_string(&file).unwrap()
}

pub fn admin_json(data: &Path, args: &[&str]) -> Value {
    admin_json_and_stderr(data, args).0
}

/// `ma2h-hub admin <args> --json`: the parsed output and what it said on stderr.
pub fn admin_json_and_stderr(data: &Path, args: &[&str]) -> (Value, String) {
    let out = base_command(data).arg("admin").args(args).arg("--json").output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(out.status.success(), "admin {args:?}: {stderr}");
    (serde_json::from_slice(&out.stdout).unwrap(), stderr)
}

pub struct Hub {
    pub child: Child,
    pub addr: String,
}

impl Hub {
    pub fn start(data: &Path) -> Self {
        Self::start_with(data, &[])
    }

    /// Start with extra environment variables.
    pub fn start_with(data: &Path, env: &[(&str, &str)]) -> Self {
        let mut command = base_command(data);
        command.envs(env.iter().copied());
        let mut child = command.arg("serve").stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().unwrap();
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let addr = loop {
            let line = lines.next().expect("hub exited before listening").unwrap();
            if let Some(a) = line.strip_prefix("ma2h hub listening on http://") {
                break a.to_owned();
            }
        };
        // keep draining stdout so the child never blocks on a full pipe
        std::thread::spawn(move || for _ in lines {});
        Self { child, addr }
    }

    /// SIGKILL: no shutdown hooks, no flush.
    pub fn kill9(&mut self) {
        self.child.kill().unwrap();
        self.child.wait().unwrap();
    }
}

impl Drop for Hub {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One request; `None` if the connection failed (the hub is down).
pub fn try_request(
    addr: &str,
    method: &str,
    path: &str,
    key: Option<&str>,
    body: Option<&Value>,
) -> Option<(u16, Value)> {
    let payload = body.map(|b| serde_json::to_vec(b).unwrap()).unwrap_or_default();
    exchange(addr, method, path, key, &payload)
}

/// POST raw bytes (a body `serde_json` could not write, e.g. a number beyond a double).
pub fn try_request_raw(addr: &str, method: &str, path: &str, key: &str, body: &[u8]) -> (u16, Value) {
    exchange(addr, method, path, Some(key), body).expect("hub unreachable")
}

/// Send one HTTP/1.1 request with `payload` as its JSON body; the status and the parsed body.
fn exchange(addr: &str, method: &str, path: &str, key: Option<&str>, payload: &[u8]) -> Option<(u16, Value)> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(30))).ok()?;
    let auth = key.map(|k| format!("Authorization: Bearer {k}\r\n")).unwrap_or_default();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n{auth}Content-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        payload.len()
    );
    s.write_all(head.as_bytes()).ok()?;
    s.write_all(payload).ok()?;
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).ok()?;
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text.split_once("\r\n\r\n")?;
    let status: u16 = head.split_whitespace().nth(1)?.parse().ok()?;
    let body =
        if head.to_ascii_lowercase().contains("transfer-encoding: chunked") { dechunk(body) } else { body.to_owned() };
    Some((status, serde_json::from_str(&body).unwrap_or(Value::Null)))
}

fn dechunk(mut s: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = s.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 {
            break;
        }
        out.push_str(&rest[..n]);
        s = &rest[n + 2..];
    }
    out
}

pub fn request(hub: &Hub, method: &str, path: &str, key: &str, body: Option<&Value>) -> (u16, Value) {
    try_request(&hub.addr, method, path, Some(key), body).expect("hub unreachable")
}

pub fn get(hub: &Hub, path: &str, key: &str) -> (u16, Value) {
    request(hub, "GET", path, key, None)
}

pub fn post(hub: &Hub, path: &str, key: &str, body: &Value) -> (u16, Value) {
    request(hub, "POST", path, key, Some(body))
}

pub fn submit(hub: &Hub, key: &str, envelope: &Value) -> (u16, Value) {
    post(hub, "/v1/messages", key, envelope)
}

pub fn notify_envelope() -> Value {
    json!({"ma2h_version": "0.5", "type": "notify", "created_at": "2026-06-04T12:00:00Z",
        "agent": {"id": "bot", "run_id": "r", "runtime": "cli"}, "title": "digest"})
}

pub fn ask_envelope(key: &str) -> Value {
    json!({"ma2h_version": "0.5", "type": "ask", "created_at": "2026-06-04T12:00:00Z",
        "agent": {"id": "bot", "run_id": "r", "runtime": "cli"}, "title": "ship?", "idempotency_key": key,
        "request": {"mode": "select", "options": [{"value": "ship", "label": "Ship"}, {"value": "hold", "label": "Hold"}],
            "allowed_resolvers": ["human:alice"]}})
}

/// A small deterministic generator (SplitMix64) so fault-injection tests replay the same schedule
/// from the same seed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform in `lo..=hi`.
    pub fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next_u64() % (hi - lo + 1)
    }
}

/// Wall-clock milliseconds since the Unix epoch (the Hub's clock on this machine, §9.5).
pub fn now_ms() -> i64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as i64
}

/// RFC 3339 with milliseconds, as the Hub formats times.
pub fn rfc3339_ms(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms).unwrap().to_rfc3339_opts(chrono::SecondsFormat::Millis, true)
}

/// Parse an RFC 3339 time to Unix milliseconds.
pub fn parse_ms(s: &str) -> i64 {
    chrono::DateTime::parse_from_rfc3339(s).unwrap_or_else(|e| panic!("`{s}`: {e}")).timestamp_millis()
}

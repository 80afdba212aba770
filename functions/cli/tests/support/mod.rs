//! An in-process Hub (the real Router, SQLite store, sweeper and push worker on port 0) and
//! helpers to drive the `ma2h` binary against it.
#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use ma2h_core::kernel::settings::{Mode, Settings};
use serde_json::{Value, json};

pub const BIN: &str = env!("CARGO_BIN_EXE_ma2h");
pub const STATE_KEY: &str = "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=";

pub struct TestHub {
    pub url: String,
    pub addr: String,
    pub agent_key: String,
    pub signing_secret: String,
    pub op_key: String,
    /// A second agent of the account, `worker` (the inter-agent tests' addressee).
    pub worker_key: String,
    pub worker_secret: String,
    pub tmp: tempfile::TempDir,
}

impl TestHub {
    /// Start a dev-mode Hub with fast sweeps and pushes allowed to loopback (§9.4 dev egress).
    pub fn start() -> Self {
        let tmp = tempfile::tempdir().unwrap();
        let data = tmp.path().join("hub");
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let rt = tokio::runtime::Builder::new_multi_thread().worker_threads(2).enable_all().build().unwrap();
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
                let addr = listener.local_addr().unwrap();
                let mut s = Settings {
                    mode: Mode::Dev,
                    data_dir: data,
                    public_url: format!("http://{addr}"),
                    requests_per_minute: 0,
                    inbox_depth: 0,
                    long_poll_max_seconds: 2,
                    sweep_interval: Duration::from_millis(100),
                    dev_egress_allow: vec!["127.0.0.0/8".into()],
                    ..Settings::default()
                };
                s.push.backoff_base = Duration::from_millis(100);
                let local = ma2h_hub::app::build_local(s).unwrap();
                let hub = &local.hub;
                let agent = ma2h_core::admin::create_agent(hub, "acme", "bot", None).await.unwrap();
                let op = ma2h_core::admin::create_operator(hub, "acme", "alice", None).await.unwrap();
                ma2h_core::admin::bind_callback(hub, "acme", "bot", "127.0.0.1").await.unwrap();
                let worker = ma2h_core::admin::create_agent(hub, "acme", "worker", None).await.unwrap();
                let w = (worker.api_key, worker.signing_secret.unwrap());
                tx.send((addr.to_string(), agent.api_key, agent.signing_secret.unwrap(), op.api_key, w)).unwrap();
                ma2h_hub::app::serve(listener, local, std::future::pending()).await.unwrap();
            });
        });
        let (addr, agent_key, signing_secret, op_key, (worker_key, worker_secret)) = rx.recv().unwrap();
        Self { url: format!("http://{addr}"), addr, agent_key, signing_secret, op_key, worker_key, worker_secret, tmp }
    }

    pub fn state_dir(&self) -> PathBuf {
        self.tmp.path().join("state")
    }

    /// `ma2h` with this Hub's agent configuration and an isolated replay cache.
    pub fn ma2h(&self, args: &[&str]) -> Command {
        let mut c = Command::new(BIN);
        c.env_clear()
            .env("PATH", std::env::var("PATH").unwrap_or_default())
            .env("MA2H_HUB_URL", &self.url)
            .env("MA2H_API_KEY", &self.agent_key)
            .env("MA2H_AGENT_ID", "bot")
            .env("MA2H_SIGNING_SECRET", &self.signing_secret)
            .env("MA2H_STATE_KEY", STATE_KEY)
            .env("MA2H_RESOLVERS", "human:alice")
            .env("MA2H_STATE_DIR", self.state_dir())
            .args(args);
        c
    }

    /// `ma2h` as the second agent, `worker`.
    pub fn worker(&self, args: &[&str]) -> Output {
        self.ma2h(args)
            .env("MA2H_API_KEY", &self.worker_key)
            .env("MA2H_AGENT_ID", "worker")
            .env("MA2H_SIGNING_SECRET", &self.worker_secret)
            .env("MA2H_STATE_DIR", self.tmp.path().join("worker-state"))
            .output()
            .unwrap()
    }

    pub fn run(&self, args: &[&str]) -> Output {
        self.ma2h(args).output().unwrap()
    }

    /// The operator resolves `id`.
    pub fn resolve(&self, id: &str, body: Value) -> (u16, Value) {
        http(&self.addr, "POST", &format!("/v1/messages/{id}/resolve"), &self.op_key, Some(&body))
    }

    /// Wait until the operator inbox shows an open message; its id.
    pub fn wait_for_open(&self) -> String {
        let deadline = Instant::now() + Duration::from_secs(15);
        loop {
            let (_, list) = http(&self.addr, "GET", "/v1/operator/messages", &self.op_key, None);
            if let Some(id) = list["messages"].get(0).and_then(|m| m["id"].as_str()) {
                return id.to_owned();
            }
            assert!(Instant::now() < deadline, "no open message appeared");
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

pub fn code(o: &Output) -> i32 {
    o.status.code().unwrap_or(-1)
}

pub fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).trim().to_owned()
}

pub fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

pub fn json_out(o: &Output) -> Value {
    serde_json::from_str(&stdout(o)).unwrap_or_else(|e| panic!("stdout is not JSON ({e}): {}", stdout(o)))
}

/// Wait for a child with a deadline.
pub fn wait_child(child: &mut Child, secs: u64) -> std::process::ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(secs);
    loop {
        if let Some(s) = child.try_wait().unwrap() {
            return s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("child did not exit within {secs}s");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// Kills the child when dropped (a failed assertion must not leave a listener behind).
pub struct Guard(pub Child);

impl Drop for Guard {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// Spawn `ma2h listen` and read its URL from the first stdout line.
pub fn spawn_listen(cmd: &mut Command) -> (Guard, String) {
    let mut child = cmd.stdout(Stdio::piped()).stderr(Stdio::inherit()).spawn().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let line = lines.next().expect("listen printed nothing").unwrap();
    let url = line.strip_prefix("ma2h listening on ").unwrap().split_whitespace().next().unwrap().to_owned();
    std::thread::spawn(move || for _ in lines {});
    (Guard(child), url)
}

/// One HTTP/1.1 request over a plain socket.
pub fn http(addr: &str, method: &str, path: &str, key: &str, body: Option<&Value>) -> (u16, Value) {
    let (status, body) = http_text(addr, method, path, key, body);
    (status, serde_json::from_str(&body).unwrap_or(Value::Null))
}

/// [`http`], the body as text (JSON Lines, say).
pub fn http_text(addr: &str, method: &str, path: &str, key: &str, body: Option<&Value>) -> (u16, String) {
    let mut s = TcpStream::connect(addr).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    let payload = body.map(|b| serde_json::to_vec(b).unwrap()).unwrap_or_default();
    let head = format!(
        "{method} {path} HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\nAuthorization: Bearer {key}\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n",
        payload.len()
    );
    s.write_all(head.as_bytes()).unwrap();
    s.write_all(&payload).unwrap();
    let mut raw = Vec::new();
    s.read_to_end(&mut raw).unwrap();
    let text = String::from_utf8_lossy(&raw);
    let (head, body) = text.split_once("\r\n\r\n").unwrap();
    let status: u16 = head.split_whitespace().nth(1).unwrap().parse().unwrap();
    let body =
        if head.to_ascii_lowercase().contains("transfer-encoding: chunked") { dechunk(body) } else { body.into() };
    (status, body)
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

pub fn answered(value: &str) -> Value {
    json!({"resolution": "answered", "value": value, "comment": "LGTM"})
}

pub fn write(dir: &Path, name: &str, contents: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, contents).unwrap();
    p
}

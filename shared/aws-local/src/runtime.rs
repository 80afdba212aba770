//! The functions as Lambda processes. `cargo lambda watch --only-lambda-apis` serves the Lambda
//! Runtime API (and the Invoke API in front of it); each function's binary runs as its own
//! processes, each polling `…/.rt/<binary>/2018-06-01/runtime/invocation/next` exactly as the
//! `provided.al2023` runtime does on AWS. A process that exits is started again (Lambda replaces
//! a crashed execution environment).

use std::fs::File;
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// A running `cargo lambda watch` and the processes behind it; dropping it stops them all.
pub struct LambdaHost {
    runtime: Arc<std::sync::Mutex<Child>>,
    stop: Arc<AtomicBool>,
    supervisors: Vec<std::thread::JoinHandle<()>>,
    pub invoke: Invoker,
}

/// Why the Runtime API could not be started.
#[derive(Debug, thiserror::Error)]
pub enum HostError {
    #[error("starting {0}: {1}")]
    Spawn(String, std::io::Error),
    #[error("cargo lambda's Runtime API did not listen on {0} within 60 s (log: {1})")]
    NotListening(SocketAddr, PathBuf),
}

/// Calls the Invoke API: `POST /2015-03-31/functions/<binary>/invocations`.
#[derive(Clone)]
pub struct Invoker {
    base: String,
    client: reqwest::Client,
}

/// A function's answer: `Ok(payload)` or the runtime's error document.
#[derive(Debug)]
pub enum Invoked {
    Ok(Vec<u8>),
    FunctionError(String),
}

/// Why an invocation has no answer.
#[derive(Debug, thiserror::Error)]
pub enum InvokeError {
    #[error("{function} did not answer within {timeout:?}")]
    Timeout { function: String, timeout: Duration },
    #[error("invoking {function}: {message}")]
    Transport { function: String, message: String },
}

impl Invoker {
    pub fn new(runtime: SocketAddr) -> Self {
        // plain HTTP on loopback; reqwest still wants a rustls provider installed (ring, as elsewhere)
        let _ = rustls::crypto::ring::default_provider().install_default();
        Self { base: format!("http://{runtime}"), client: reqwest::Client::new() }
    }

    /// Invoke `function` with `event`, waiting at most `timeout` (the function's own, as Lambda).
    pub async fn invoke(
        &self,
        function: &str,
        event: &serde_json::Value,
        timeout: Duration,
    ) -> Result<Invoked, InvokeError> {
        let url = format!("{}/2015-03-31/functions/{function}/invocations", self.base);
        let send = self.client.post(url).body(event.to_string()).send();
        let transport =
            |e: reqwest::Error| InvokeError::Transport { function: function.to_owned(), message: e.to_string() };
        let resp = tokio::time::timeout(timeout, async {
            let resp = send.await.map_err(transport)?;
            let status = resp.status();
            let bytes = resp.bytes().await.map_err(transport)?;
            Ok::<_, InvokeError>((status, bytes))
        })
        .await
        .map_err(|_| InvokeError::Timeout { function: function.to_owned(), timeout })??;
        Ok(match resp.0.is_success() {
            true => Invoked::Ok(resp.1.to_vec()),
            false => Invoked::FunctionError(String::from_utf8_lossy(&resp.1).into_owned()),
        })
    }
}

/// One function's processes: the binary, its environment, how many.
pub struct ProcessSpec {
    pub binary: PathBuf,
    pub name: String,
    pub env: Vec<(String, String)>,
    pub instances: usize,
    pub log: PathBuf,
}

impl LambdaHost {
    /// Start `cargo lambda watch --only-lambda-apis` on `runtime` (a free loopback address),
    /// logging to `log`, and wait until it listens.
    pub fn start(cargo_lambda: &Path, workspace: &Path, runtime: SocketAddr, log: &Path) -> Result<Self, HostError> {
        let out = File::create(log).map_err(|e| HostError::Spawn(log.display().to_string(), e))?;
        let err = out.try_clone().map_err(|e| HostError::Spawn(log.display().to_string(), e))?;
        let child = Command::new(cargo_lambda)
            .args(["lambda", "watch", "--only-lambda-apis", "--ignore-changes", "--quiet"])
            .args(["--invoke-address", &runtime.ip().to_string(), "--invoke-port", &runtime.port().to_string()])
            .current_dir(workspace)
            .stdin(Stdio::null())
            .stdout(out)
            .stderr(err)
            .spawn()
            .map_err(|e| HostError::Spawn(cargo_lambda.display().to_string(), e))?;
        let host = Self {
            runtime: Arc::new(std::sync::Mutex::new(child)),
            stop: Arc::new(AtomicBool::new(false)),
            supervisors: Vec::new(),
            invoke: Invoker::new(runtime),
        };
        let deadline = Instant::now() + Duration::from_secs(60);
        // a TCP connect only: an HTTP request to `/` would invoke cargo lambda's default function
        while TcpStream::connect_timeout(&runtime, Duration::from_millis(200)).is_err() {
            if Instant::now() > deadline {
                return Err(HostError::NotListening(runtime, log.to_owned()));
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        Ok(host)
    }

    /// Run `spec.instances` processes of one function against `runtime`, restarting any that exit.
    pub fn run_function(&mut self, runtime: SocketAddr, spec: ProcessSpec) -> Result<(), HostError> {
        for i in 0..spec.instances {
            let log = File::options()
                .create(true)
                .append(true)
                .open(&spec.log)
                .map_err(|e| HostError::Spawn(spec.log.display().to_string(), e))?;
            let mut cmd = Command::new(&spec.binary);
            cmd.envs(spec.env.iter().map(|(k, v)| (k, v)))
                .env("AWS_LAMBDA_RUNTIME_API", format!("http://{runtime}/.rt/{}", spec.name))
                .env("AWS_LAMBDA_FUNCTION_NAME", &spec.name)
                .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
                .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
                .env("AWS_LAMBDA_LOG_STREAM_NAME", format!("{}-{i}", spec.name))
                .stdin(Stdio::null())
                .stdout(log.try_clone().map_err(|e| HostError::Spawn(spec.log.display().to_string(), e))?)
                .stderr(log);
            let stop = self.stop.clone();
            let name = format!("{}#{i}", spec.name);
            let first = cmd.spawn().map_err(|e| HostError::Spawn(spec.binary.display().to_string(), e))?;
            self.supervisors.push(std::thread::spawn(move || supervise(cmd, first, &name, &stop)));
        }
        Ok(())
    }

    /// Stop every process (also done on drop).
    pub fn shutdown(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        for s in self.supervisors.drain(..) {
            let _ = s.join();
        }
        if let Ok(mut c) = self.runtime.lock() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

impl Drop for LambdaHost {
    fn drop(&mut self) {
        self.shutdown();
    }
}

fn supervise(mut cmd: Command, mut child: Child, name: &str, stop: &AtomicBool) {
    // a process that keeps failing at start is retried ever more slowly (up to 5 s)
    let mut delay = Duration::from_millis(250);
    loop {
        let started = Instant::now();
        while !stop.load(Ordering::SeqCst) {
            match child.try_wait() {
                Ok(None) => std::thread::sleep(Duration::from_millis(100)),
                Ok(Some(status)) => {
                    tracing::warn!(function = name, %status, "the function process exited; starting another");
                    break;
                }
                Err(e) => {
                    tracing::error!(function = name, error = %e, "cannot watch the function process");
                    return;
                }
            }
        }
        if stop.load(Ordering::SeqCst) {
            let _ = child.kill();
            let _ = child.wait();
            return;
        }
        delay = match started.elapsed() > Duration::from_secs(10) {
            true => Duration::from_millis(250),
            false => (delay * 2).min(Duration::from_secs(5)),
        };
        std::thread::sleep(delay);
        match cmd.spawn() {
            Ok(c) => child = c,
            Err(e) => {
                tracing::error!(function = name, error = %e, "cannot restart the function process");
                return;
            }
        }
    }
}

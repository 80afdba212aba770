//! `ma2h listen`: a small callback receiver — the re-invoke endpoint of §2.1. Every POST is
//! verified (§9.2 signature, window, replay cache); an accepted Response runs `--exec` exactly
//! once per `(in_reply_to, resolution_id)` (§6), with the body on stdin. Duplicates are
//! acknowledged (200) without running anything; rejections answer 401 so the Hub does not retry
//! (§8.3: no retry on 4xx); a cache failure answers 503 so it does.

use std::sync::Arc;

use anyhow::{Context, Result};
use axum::body::Bytes;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use clap::Args;
use ma2h_client::verify::{Rejection, Verdict, VerifiedResponse, Verifier};
use ma2h_client::{Config, now_unix};
use ma2h_protocol::signature::SIGNATURE_HEADER;
use tokio::sync::mpsc;

use crate::check::KeyArgs;
use crate::exit;

#[derive(Args, Debug)]
pub struct ListenArgs {
    /// Port to listen on (0 = any free port; the URL is printed).
    #[arg(long)]
    pub port: u16,
    /// Address to bind.
    #[arg(long, default_value = "127.0.0.1")]
    pub bind: String,
    /// Shell command run once per accepted resolution (body on stdin; MA2H_IN_REPLY_TO,
    /// MA2H_RESOLUTION, MA2H_RESOLUTION_ID in the environment). Without it, each accepted
    /// Response is printed as one JSON line.
    #[arg(long)]
    pub exec: Option<String>,
    /// Exit after the first accepted resolution, with the command's exit code.
    #[arg(long)]
    pub once: bool,
    #[command(flatten)]
    pub keys: KeyArgs,
}

struct Shared {
    verifier: Verifier,
    tx: mpsc::UnboundedSender<VerifiedResponse>,
}

async fn receive(State(s): State<Arc<Shared>>, headers: HeaderMap, body: Bytes) -> StatusCode {
    let header = headers.get(SIGNATURE_HEADER).and_then(|h| h.to_str().ok()).unwrap_or_default().to_owned();
    let shared = s.clone();
    // the cache does blocking file I/O under a lock file
    let verdict = tokio::task::spawn_blocking(move || shared.verifier.verify(&body, &header, now_unix())).await;
    match verdict {
        Ok(Ok(Verdict::Accepted(r))) => {
            eprintln!("accepted: {} {} ({})", r.in_reply_to, r.resolution, r.resolution_id);
            let _ = s.tx.send(r);
            StatusCode::OK
        }
        Ok(Ok(Verdict::Duplicate(r))) => {
            eprintln!("duplicate: {} {} already acted on", r.in_reply_to, r.resolution_id);
            StatusCode::OK
        }
        Ok(Err(Rejection::Cache(e))) => {
            eprintln!("error: replay cache: {e}");
            StatusCode::SERVICE_UNAVAILABLE
        }
        Ok(Err(e)) => {
            eprintln!("rejected: {e}");
            StatusCode::UNAUTHORIZED
        }
        Err(_) => StatusCode::INTERNAL_SERVER_ERROR,
    }
}

async fn run_exec(cmd: &str, r: &VerifiedResponse) -> Result<u8> {
    use tokio::io::AsyncWriteExt;
    let mut child = tokio::process::Command::new("sh")
        .arg("-c")
        .arg(cmd)
        .env("MA2H_IN_REPLY_TO", &r.in_reply_to)
        .env("MA2H_RESOLUTION", &r.resolution)
        .env("MA2H_RESOLUTION_ID", &r.resolution_id)
        .stdin(std::process::Stdio::piped())
        .spawn()
        .with_context(|| format!("running `{cmd}`"))?;
    if let Some(mut stdin) = child.stdin.take() {
        let _ = stdin.write_all(r.body.to_string().as_bytes()).await;
    }
    let status = child.wait().await?;
    Ok(status.code().map_or(exit::FAILURE, |c| u8::try_from(c).unwrap_or(exit::FAILURE)))
}

pub async fn listen(a: &ListenArgs, config: &Config) -> Result<u8> {
    let listener = tokio::net::TcpListener::bind((a.bind.as_str(), a.port))
        .await
        .with_context(|| format!("binding {}:{}", a.bind, a.port))?;
    let addr = listener.local_addr()?;
    let default_url = format!("http://{addr}/");
    let verifier = a.keys.verifier(config, a.keys.callback_url.clone().or(Some(default_url))).await?;
    println!("ma2h listening on http://{addr}/ (callback url {})", verifier.callback_url);
    let (tx, mut rx) = mpsc::unbounded_channel();
    let app = axum::Router::new().fallback(axum::routing::post(receive)).with_state(Arc::new(Shared { verifier, tx }));
    let (stop_tx, stop_rx) = tokio::sync::oneshot::channel::<()>();
    let server =
        tokio::spawn(
            async move { axum::serve(listener, app).with_graceful_shutdown(async { drop(stop_rx.await) }).await },
        );
    let mut code = exit::OK;
    // resolutions are handled one at a time, in arrival order
    while let Some(r) = rx.recv().await {
        code = match &a.exec {
            Some(cmd) => run_exec(cmd, &r).await?,
            None => {
                println!("{}", r.body);
                exit::OK
            }
        };
        if a.once {
            break;
        }
    }
    let _ = stop_tx.send(());
    let _ = server.await;
    Ok(code)
}

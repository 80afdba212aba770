//! `ma2h-lambda-init`: each Lambda function's init time — from process start to its first
//! request to the Lambda Runtime API (`GET /2018-06-01/runtime/invocation/next`), the moment a
//! cold start is ready for its first event. The Runtime API here is a stub that records that
//! request and never answers it; init includes everything `main` does first (tracing, settings,
//! the SDK configuration, the Hub's keys read from Secrets Manager on `AWS_ENDPOINT_URL`, the
//! adapters). Prints one row per function (binary size, median / min / max over `--runs`).

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use axum::extract::State;
use clap::Parser;
use ma2h_aws_local::template::Template;
use tokio::sync::mpsc;

#[derive(Parser)]
#[command(
    name = "ma2h-lambda-init",
    about = "Init time of each Lambda function (process start → first Runtime API request)"
)]
struct Cli {
    #[arg(long, default_value = "infra/template.yaml")]
    template: PathBuf,
    /// Directory holding the functions' binaries (e.g. target/lambda-release).
    #[arg(long)]
    bin_dir: PathBuf,
    /// Cold starts per function.
    #[arg(long, default_value_t = 7)]
    runs: usize,
}

/// What the stub Runtime API saw.
enum Seen {
    Next(Instant),
    InitError,
}

async fn next(State(tx): State<mpsc::UnboundedSender<Seen>>) -> &'static str {
    let _ = tx.send(Seen::Next(Instant::now()));
    // never answer: the process is stopped once its arrival is recorded
    std::future::pending::<()>().await;
    ""
}

async fn init_error(State(tx): State<mpsc::UnboundedSender<Seen>>) -> &'static str {
    let _ = tx.send(Seen::InitError);
    ""
}

#[tokio::main]
async fn main() -> Result<()> {
    let cli = Cli::parse();
    if std::env::var_os("AWS_ENDPOINT_URL").is_none() {
        bail!("AWS_ENDPOINT_URL is not set: init reads the Hub's keys from Secrets Manager (moto)");
    }
    let template = Template::parse(&std::fs::read_to_string(&cli.template)?)?;
    let region = std::env::var("AWS_REGION").unwrap_or_else(|_| "us-east-1".into());
    let aws = ma2h_aws::sdk_loader().region(aws_config::Region::new(region)).load().await;
    let (secret, public) = ("ma2h/init-time", "ma2h/init-time-public");
    ma2h_aws_local::provision::hub_secrets(&aws_sdk_secretsmanager::Client::new(&aws), secret, Some(public)).await?;
    let mut params = template.parameters.clone();
    params.extend([
        ("PublicUrl".to_owned(), "http://127.0.0.1:9".to_owned()),
        ("Mode".to_owned(), "dev".to_owned()),
        ("HubSecretName".to_owned(), secret.to_owned()),
        ("HubPublicKeysSecretName".to_owned(), public.to_owned()),
    ]);
    // nothing is read or sent during init: names are enough
    let mut resources: std::collections::BTreeMap<String, String> = template
        .queues
        .iter()
        .map(|q| (q.logical_id.clone(), format!("http://127.0.0.1:4566/000000000000/{}", q.logical_id)))
        .collect();
    if let Some((id, _)) = &template.table {
        resources.insert(id.clone(), "ma2h-init-time".into());
    }

    let (tx, mut rx) = mpsc::unbounded_channel();
    let app = axum::Router::new()
        .route("/2018-06-01/runtime/invocation/next", axum::routing::get(next))
        .route("/2018-06-01/runtime/init/error", axum::routing::post(init_error))
        .with_state(tx);
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await?;
    let runtime = listener.local_addr()?;
    tokio::spawn(async move { axum::serve(listener, app).await });

    println!("{:<16} {:>10} {:>10} {:>10} {:>10}", "function", "binary", "median", "min", "max");
    for f in &template.functions {
        let binary = cli.bin_dir.join(&f.binary);
        let size = std::fs::metadata(&binary).with_context(|| format!("{} is not built", binary.display()))?.len();
        let env = ma2h_aws_local::function_env(f, &params, &resources, |k| std::env::var_os(k).is_some())?;
        let mut times = Vec::with_capacity(cli.runs);
        for _ in 0..cli.runs {
            while rx.try_recv().is_ok() {}
            let started = Instant::now();
            let mut child = Command::new(&binary)
                .envs(env.iter().map(|(k, v)| (k, v)))
                .env("AWS_LAMBDA_RUNTIME_API", format!("http://{runtime}"))
                .env("AWS_LAMBDA_FUNCTION_NAME", &f.binary)
                .env("AWS_LAMBDA_FUNCTION_VERSION", "$LATEST")
                .env("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "256")
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .spawn()?;
            let deadline = started + Duration::from_secs(30);
            let seen = loop {
                match tokio::time::timeout(Duration::from_millis(2), rx.recv()).await {
                    Ok(Some(seen)) => break Some(seen),
                    _ if child.try_wait()?.is_some() || Instant::now() > deadline => break None,
                    _ => {}
                }
            };
            let _ = child.kill();
            let _ = child.wait();
            match seen {
                Some(Seen::Next(at)) => times.push(at - started),
                Some(Seen::InitError) => bail!("{}: init failed (reported to the Runtime API)", f.binary),
                None => bail!("{}: no Runtime API request within 30 s (exited or hung)", f.binary),
            }
        }
        times.sort();
        let ms = |d: Duration| format!("{:.1} ms", d.as_secs_f64() * 1000.0);
        println!(
            "{:<16} {:>7.1} MB {:>10} {:>10} {:>10}",
            f.binary.trim_start_matches("ma2h-"),
            size as f64 / 1e6,
            ms(times[times.len() / 2]),
            ms(times[0]),
            ms(times[times.len() - 1])
        );
    }
    Ok(())
}

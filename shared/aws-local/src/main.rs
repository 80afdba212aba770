//! `ma2h-aws-local`: run the Lambda functions locally end to end (see the crate docs and
//! `make aws-local`). Prints `ma2h hub listening on http://ADDR` once every function answered
//! its first invocation, then serves until interrupted.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{Result, anyhow};
use clap::Parser;
use ma2h_aws_local::{Config, Stack};

#[derive(Parser)]
#[command(name = "ma2h-aws-local", version, about = "The Hub's Lambda functions behind a local API Gateway front")]
struct Cli {
    /// The SAM template whose routes, functions, table and queues are run.
    #[arg(long, default_value = "infra/template.yaml")]
    template: PathBuf,
    /// Directory holding the functions' binaries.
    #[arg(long, default_value = "target/debug")]
    bin_dir: PathBuf,
    /// The cargo-lambda executable (`scripts/venv.sh aws-local` installs it in .venv).
    #[arg(long, env = "CARGO_LAMBDA", default_value = ".venv/bin/cargo-lambda")]
    cargo_lambda: PathBuf,
    /// Where the front listens (port 0: any free port).
    #[arg(long, default_value = "127.0.0.1:8090")]
    listen: std::net::SocketAddr,
    /// Processes per HTTP function.
    #[arg(long, default_value_t = 2)]
    instances: usize,
    #[arg(long, default_value = "ma2h-local")]
    table: String,
    /// Template parameter values, `Name=Value` (default: Mode=dev, PublicUrl=the front's URL).
    #[arg(long = "parameter", value_parser = parse_kv)]
    parameters: Vec<(String, String)>,
    /// Run scheduled functions this often instead of the template's rate (milliseconds).
    #[arg(long)]
    schedule_every_ms: Option<u64>,
    /// Directory for each function's log (default: a fresh temporary directory).
    #[arg(long)]
    log_dir: Option<PathBuf>,
    /// Let every function call AWS unchecked (by default each call is evaluated against the
    /// calling function's policy in the template; docs/iam.md).
    #[arg(long)]
    no_iam: bool,
}

fn parse_kv(s: &str) -> Result<(String, String)> {
    s.split_once('=')
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .ok_or_else(|| anyhow!("expected Name=Value, got `{s}`"))
}

#[tokio::main]
async fn main() -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::try_from_env("MA2H_LOG").unwrap_or_else(|_| "info".into()))
        .with_writer(std::io::stderr)
        .init();
    let cli = Cli::parse();
    let log_dir = match cli.log_dir {
        Some(d) => d,
        None => std::env::temp_dir().join(format!("ma2h-aws-local-{}", std::process::id())),
    };
    let mut parameters: BTreeMap<String, String> = [("Mode".to_owned(), "dev".to_owned())].into();
    parameters.extend(cli.parameters);
    let cfg = Config {
        template: cli.template,
        workspace: std::env::current_dir()?,
        bin_dir: cli.bin_dir,
        cargo_lambda: cli.cargo_lambda,
        listen: cli.listen,
        instances: cli.instances,
        table: cli.table.clone(),
        prefix: cli.table,
        parameters,
        schedule_every: cli.schedule_every_ms.map(Duration::from_millis),
        sqs_idle: Duration::from_millis(200),
        log_dir: log_dir.clone(),
        region: std::env::var("AWS_REGION").unwrap_or_else(|_| "us-east-1".into()),
        iam: !cli.no_iam,
    };
    let stack = Stack::start(cfg).await?;
    eprintln!("ma2h-aws-local: function logs in {}", log_dir.display());
    println!("ma2h hub listening on {}", stack.url);
    let Stack { mut host, listener, front, .. } = stack;
    let mut term = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())?;
    tokio::select! {
        r = front.serve(listener) => r?,
        _ = tokio::signal::ctrl_c() => {}
        _ = term.recv() => {}
    }
    tokio::task::spawn_blocking(move || host.shutdown()).await?;
    Ok(())
}

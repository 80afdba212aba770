//! `ma2h-bench`: load generator and latency probes for a running MA2H Hub (see bench/README.md).
//!
//! Black-box: it talks HTTP to the Hub only, like an agent and an operator would.

mod envelope;
mod http;
mod latency;
mod raw;
mod stats;
mod submit;

use std::time::Duration;

use anyhow::{Context as _, Result, bail};
use clap::{Args, Parser, Subcommand};
use serde_json::{Value, json};

#[derive(Parser)]
#[command(name = "ma2h-bench", about = "Benchmarks for an MA2H Hub: submit throughput, push and long-poll latency")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Closed-loop submit load at each concurrency level: throughput, latency percentiles, CPU.
    Submit(SubmitArgs),
    /// Resolve → signed push received by our own receiver, one sample at a time.
    PushLatency(PushArgs),
    /// Resolve → parked `GET /v1/messages/{id}?wait=` returned, one sample at a time.
    LongpollWake(LongPollArgs),
}

#[derive(Args)]
struct HubArgs {
    /// Base URL of the Hub (plain http: a local dev-mode Hub).
    #[arg(long, env = "MA2H_HUB_URL", default_value = "http://127.0.0.1:8080")]
    url: String,
    /// The agent's API key.
    #[arg(long, env = "MA2H_API_KEY")]
    agent_key: String,
    /// `agent.id` the key is bound to.
    #[arg(long, env = "MA2H_AGENT_ID", default_value = "dev-agent")]
    agent_id: String,
    /// Write a JSON summary to this file.
    #[arg(long)]
    json: Option<std::path::PathBuf>,
}

#[derive(Args)]
struct SubmitArgs {
    #[command(flatten)]
    hub: HubArgs,
    /// What to submit.
    #[arg(long, value_enum, default_value = "ask")]
    kind: submit::Kind,
    /// Concurrency levels (closed-loop workers, one keep-alive connection each), run in order.
    #[arg(long, value_delimiter = ',', default_value = "1,16,64")]
    concurrency: Vec<usize>,
    /// Measured time per level (`10s`, `500ms`, `1m`).
    #[arg(long, value_parser = parse_duration, default_value = "10s")]
    duration: Duration,
    /// Unrecorded load before each level's measurement.
    #[arg(long, value_parser = parse_duration, default_value = "2s")]
    warmup: Duration,
    /// The Hub's pid: report its CPU use during each measured window (from /proc).
    #[arg(long)]
    server_pid: Option<String>,
    /// Client runtime threads (1 = a single-threaded runtime, the cheapest on a shared machine).
    #[arg(long, default_value_t = 1)]
    threads: usize,
}

#[derive(Args)]
struct LatencyArgs {
    #[command(flatten)]
    hub: HubArgs,
    /// The operator's API key (it resolves each ask).
    #[arg(long, env = "MA2H_OPERATOR_KEY")]
    operator_key: String,
    /// The operator's attested actor, listed in each ask's `allowed_resolvers`.
    #[arg(long, env = "MA2H_OPERATOR_ACTOR", default_value = "human:dev")]
    operator_actor: String,
    /// Recorded samples.
    #[arg(long, default_value_t = 200)]
    samples: usize,
    /// Unrecorded rounds first.
    #[arg(long, default_value_t = 10)]
    warmup: usize,
    /// Give up on one sample after this long.
    #[arg(long, value_parser = parse_duration, default_value = "5s")]
    timeout: Duration,
}

#[derive(Args)]
struct PushArgs {
    #[command(flatten)]
    latency: LatencyArgs,
    /// Host in the callback URL; the Hub must have it bound to the agent (`admin bind-callback`)
    /// and, for a loopback address, be started with `MA2H_MODE=dev MA2H_DEV_EGRESS_ALLOW=127.0.0.0/8`.
    #[arg(long, default_value = "127.0.0.1")]
    callback_host: String,
    /// Where the receiver listens.
    #[arg(long, default_value = "127.0.0.1:0")]
    listen: String,
    /// `auth.secret_ref` of an `hmac` callback (registered with `admin put-secret`); without it
    /// the callback has no `auth` and the Hub signs with the agent's own signing secret.
    #[arg(long)]
    secret_ref: Option<String>,
    /// Verify each push's §9.2 HMAC signature with this secret (after taking the timestamp).
    #[arg(long, env = "MA2H_BENCH_CALLBACK_SECRET")]
    verify_secret: Option<String>,
}

#[derive(Args)]
struct LongPollArgs {
    #[command(flatten)]
    latency: LatencyArgs,
    /// `?wait=` seconds (§8.2; the Hub clamps it to `MA2H_LONG_POLL_MAX_SECONDS`).
    #[arg(long, default_value_t = 30)]
    wait: u32,
    /// Pause between sending the long-poll and resolving, so the waiter is parked in the Hub.
    #[arg(long, value_parser = parse_duration, default_value = "20ms")]
    settle: Duration,
}

fn parse_duration(s: &str) -> Result<Duration, String> {
    let s = s.trim();
    let (num, unit) = s.find(|c: char| !(c.is_ascii_digit() || c == '.')).map_or((s, "s"), |i| s.split_at(i));
    let v: f64 = num.parse().map_err(|_| format!("`{s}`: expected e.g. 10s, 500ms, 1m"))?;
    let secs = match unit {
        "ms" => v / 1000.0,
        "s" => v,
        "m" => v * 60.0,
        _ => return Err(format!("`{s}`: unit must be ms, s or m")),
    };
    Duration::try_from_secs_f64(secs).map_err(|e| e.to_string())
}

fn main() -> Result<()> {
    let cli = Cli::parse();
    let threads = match &cli.command {
        Command::Submit(a) => a.threads,
        _ => 1,
    };
    let rt = if threads <= 1 {
        tokio::runtime::Builder::new_current_thread().enable_all().build()?
    } else {
        tokio::runtime::Builder::new_multi_thread().worker_threads(threads).enable_all().build()?
    };
    rt.block_on(run(cli))
}

async fn run(cli: Cli) -> Result<()> {
    match cli.command {
        Command::Submit(a) => {
            if a.concurrency.contains(&0) {
                bail!("--concurrency levels must be at least 1");
            }
            let opts = submit::Options {
                target: http::Target::parse(&a.hub.url)?,
                auth: http::bearer(&a.hub.agent_key)?,
                agent_id: a.hub.agent_id.clone(),
                kind: a.kind,
                levels: a.concurrency.clone(),
                duration: a.duration,
                warmup: a.warmup,
                server_pid: a.server_pid.clone(),
            };
            let levels = submit::run(&opts).await?;
            print_table(&levels);
            let summary = json!({
                "scenario": "submit",
                "url": a.hub.url,
                "kind": format!("{:?}", a.kind).to_lowercase(),
                "duration_s": a.duration.as_secs_f64(),
                "warmup_s": a.warmup.as_secs_f64(),
                "client_threads": a.threads,
                "latency_from": "request sent",
                "latency_to": "ack fully read",
                "levels": levels.iter().map(submit::Level::to_json).collect::<Vec<_>>(),
            });
            write_json(a.hub.json.as_deref(), &summary)
        }
        Command::PushLatency(a) => {
            let json_path = a.latency.hub.json.clone();
            let opts = latency::PushOptions {
                common: common(&a.latency)?,
                callback_host: a.callback_host,
                listen: a.listen,
                secret_ref: a.secret_ref,
                verify_secret: a.verify_secret,
            };
            let samples = latency::push_latency(&opts).await?;
            let summary = json!({
                "scenario": "push-latency",
                "url": a.latency.hub.url,
                "latency_to": "push request fully received by the callback receiver",
                "signature_verified": opts.verify_secret.is_some(),
                "result": samples.to_json(),
            });
            write_json(json_path.as_deref(), &summary)?;
            fail_on(&samples)
        }
        Command::LongpollWake(a) => {
            let json_path = a.latency.hub.json.clone();
            let opts = latency::LongPollOptions { common: common(&a.latency)?, wait_seconds: a.wait, settle: a.settle };
            let samples = latency::longpoll_wake(&opts).await?;
            let summary = json!({
                "scenario": "longpoll-wake",
                "url": a.latency.hub.url,
                "wait_s": a.wait,
                "settle_ms": a.settle.as_secs_f64() * 1000.0,
                "latency_to": "long-poll response fully read by the waiter",
                "result": samples.to_json(),
            });
            write_json(json_path.as_deref(), &summary)?;
            fail_on(&samples)
        }
    }
}

fn common(a: &LatencyArgs) -> Result<latency::Common> {
    Ok(latency::Common {
        target: http::Target::parse(&a.hub.url)?,
        agent_key: http::bearer(&a.hub.agent_key)?,
        agent_id: a.hub.agent_id.clone(),
        operator_key: http::bearer(&a.operator_key)?,
        operator_actor: a.operator_actor.clone(),
        samples: a.samples,
        warmup: a.warmup,
        timeout: a.timeout,
    })
}

fn fail_on(s: &latency::Samples) -> Result<()> {
    if s.failures.is_empty() { Ok(()) } else { bail!("{} samples failed", s.failures.len()) }
}

fn print_table(levels: &[submit::Level]) {
    println!();
    println!(
        "| concurrency | ok requests | errors | throughput/s | p50 | p90 | p99 | p99.9 | max | hub cpu | client cpu |"
    );
    println!("|---:|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    for l in levels {
        let pct = |v: Option<f64>| v.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.0}%"));
        println!(
            "| {} | {} | {} | {:.0} | {} | {} | {} | {} | {} | {} | {} |",
            l.concurrency,
            l.ok,
            l.errors_text(),
            l.throughput(),
            stats::ms(l.latency.p50_us),
            stats::ms(l.latency.p90_us),
            stats::ms(l.latency.p99_us),
            stats::ms(l.latency.p999_us),
            stats::ms(l.latency.max_us),
            pct(l.cpu.server_pct),
            pct(l.cpu.client_pct),
        );
    }
}

fn write_json(path: Option<&std::path::Path>, v: &Value) -> Result<()> {
    if let Some(p) = path {
        let mut bytes = serde_json::to_vec_pretty(v)?;
        bytes.push(b'\n');
        std::fs::write(p, bytes).with_context(|| format!("writing {}", p.display()))?;
        println!("wrote {}", p.display());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations() {
        assert_eq!(parse_duration("10s"), Ok(Duration::from_secs(10)));
        assert_eq!(parse_duration("500ms"), Ok(Duration::from_millis(500)));
        assert_eq!(parse_duration("2"), Ok(Duration::from_secs(2)));
        assert_eq!(parse_duration("1m"), Ok(Duration::from_secs(60)));
        assert!(parse_duration("3h").is_err());
    }

    #[test]
    fn cli_parses() {
        use clap::CommandFactory as _;
        Cli::command().debug_assert();
    }
}

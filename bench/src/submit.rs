//! `ma2h-bench submit`: closed-loop submit throughput and latency at each concurrency level.
//!
//! Each worker owns one keep-alive HTTP/1.1 connection and sends its next `POST /v1/messages`
//! as soon as the previous ack arrives (closed loop). The first `--warmup` of each level is not
//! recorded; a request counts toward the level when it both starts and completes inside the
//! measured window. Latency = request written → whole ack read, on the client.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use anyhow::Result;
use hdrhistogram::Histogram;
use hyper::header::HeaderValue;
use serde_json::{Value, json};

use crate::envelope::{self, Template};
use crate::http::{Conn, Target};
use crate::raw::RawConn;
use crate::stats::{self, CpuSnap, CpuUse, Summary};

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum Kind {
    /// A durable `ask` with a unique `idempotency_key` per request (stays open).
    Ask,
    /// A `notify` (acked `delivered`), no idempotency key.
    Notify,
}

pub struct Options {
    pub target: Target,
    pub auth: HeaderValue,
    pub agent_id: String,
    pub kind: Kind,
    pub levels: Vec<usize>,
    pub duration: Duration,
    pub warmup: Duration,
    pub server_pid: Option<String>,
}

struct WorkerResult {
    hist: Histogram<u64>,
    ok: u64,
    errors: BTreeMap<u16, u64>,
    first_error: Option<String>,
}

/// One level's outcome.
pub struct Level {
    pub concurrency: usize,
    pub ok: u64,
    pub errors: BTreeMap<u16, u64>,
    pub first_error: Option<String>,
    pub measured: Duration,
    pub latency: Summary,
    pub cpu: CpuUse,
}

impl Level {
    #[allow(clippy::cast_precision_loss)]
    pub fn throughput(&self) -> f64 {
        self.ok as f64 / self.measured.as_secs_f64()
    }

    pub fn errors_text(&self) -> String {
        if self.errors.is_empty() {
            return "none".to_owned();
        }
        self.errors
            .iter()
            .map(|(s, n)| if *s == 0 { format!("transport×{n}") } else { format!("{s}×{n}") })
            .collect::<Vec<_>>()
            .join(", ")
    }

    pub fn to_json(&self) -> Value {
        let errors: serde_json::Map<String, Value> = self
            .errors
            .iter()
            .map(|(s, n)| (if *s == 0 { "transport".to_owned() } else { s.to_string() }, json!(n)))
            .collect();
        json!({
            "concurrency": self.concurrency,
            "requests_ok": self.ok,
            "errors": errors,
            "measured_s": self.measured.as_secs_f64(),
            "throughput_per_s": (self.throughput() * 10.0).round() / 10.0,
            "latency": self.latency.to_json(),
            "cpu": self.cpu.to_json(),
        })
    }
}

pub async fn run(opts: &Options) -> Result<Vec<Level>> {
    let run = envelope::run_id();
    let created_at = envelope::now_rfc3339();
    let mut levels = Vec::new();
    for &c in &opts.levels {
        // Check the hub answers before starting the clock.
        Conn::connect(&opts.target).await?;
        let start = Instant::now();
        let measure_from = start + opts.warmup;
        let measure_to = measure_from + opts.duration;
        let mut set = tokio::task::JoinSet::new();
        for w in 0..c {
            let template = match opts.kind {
                Kind::Notify => Template::new(&envelope::notify(&opts.agent_id, &created_at), None),
                Kind::Ask => {
                    let marker = envelope::counter_marker(&format!("bench-{run}-c{c}w{w}"));
                    Template::new(&envelope::ask(&opts.agent_id, &created_at, &marker, None, None), Some(&marker))
                }
            };
            let head = format!(
                "POST /v1/messages HTTP/1.1\r\nhost: {}\r\nauthorization: {}\r\ncontent-type: application/json\r\n",
                opts.target.host.to_str()?,
                opts.auth.to_str()?
            );
            set.spawn(worker(opts.target.clone(), template.with_head(&head), measure_from, measure_to));
        }
        // CPU snapshots at the window's edges (this task sleeps; the workers do the work).
        tokio::time::sleep_until(measure_from.into()).await;
        let cpu0 = CpuSnap::take(opts.server_pid.as_deref());
        tokio::time::sleep_until(measure_to.into()).await;
        let cpu1 = CpuSnap::take(opts.server_pid.as_deref());

        let mut hist = stats::histogram();
        let (mut ok, mut errors, mut first_error) = (0, BTreeMap::new(), None);
        while let Some(r) = set.join_next().await {
            let r = r?;
            hist.add(&r.hist)?;
            ok += r.ok;
            for (s, n) in r.errors {
                *errors.entry(s).or_insert(0) += n;
            }
            first_error = first_error.or(r.first_error);
        }
        let level = Level {
            concurrency: c,
            ok,
            errors,
            first_error,
            measured: opts.duration,
            latency: Summary::of_histogram(&hist),
            cpu: cpu0.until(&cpu1),
        };
        print_level(opts, &level);
        levels.push(level);
    }
    Ok(levels)
}

fn print_level(opts: &Options, l: &Level) {
    println!(
        "submit kind={:?} concurrency={} measured {:.1}s after {:.1}s warmup (load avg {})",
        opts.kind,
        l.concurrency,
        l.measured.as_secs_f64(),
        opts.warmup.as_secs_f64(),
        stats::loadavg()
    );
    println!("  requests {} ok   errors: {}", l.ok, l.errors_text());
    if let Some(e) = &l.first_error {
        println!("  first error: {e}");
    }
    println!("  throughput {:.1}/s", l.throughput());
    println!("  latency (request sent → ack read) {}", l.latency.line());
    println!("  {}", l.cpu.line());
}

/// One closed loop: `request` is the whole HTTP request, its counter patched per send.
async fn worker(target: Target, mut request: Template, measure_from: Instant, measure_to: Instant) -> WorkerResult {
    let mut r = WorkerResult { hist: stats::histogram(), ok: 0, errors: BTreeMap::new(), first_error: None };
    let mut conn: Option<RawConn> = None;
    let mut n: u64 = 0;
    loop {
        let now = Instant::now();
        if now >= measure_to {
            break;
        }
        let c = match conn.as_mut() {
            Some(c) => c,
            None => match RawConn::connect(&target).await {
                Ok(c) => conn.insert(c),
                Err(e) => {
                    if now >= measure_from {
                        *r.errors.entry(0).or_insert(0) += 1;
                    }
                    r.first_error.get_or_insert_with(|| format!("{e:#}"));
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
        };
        n += 1;
        let bytes = request.patch(n);
        let t0 = Instant::now();
        let result = c.round_trip(bytes).await;
        let t1 = Instant::now();
        let counted = t0 >= measure_from && t1 <= measure_to;
        match result {
            Ok(resp) if (200..300).contains(&resp.status) => {
                if counted {
                    r.ok += 1;
                    stats::record(&mut r.hist, t1 - t0);
                }
            }
            Ok(resp) => {
                if counted {
                    *r.errors.entry(resp.status).or_insert(0) += 1;
                }
                r.first_error.get_or_insert_with(|| resp.show());
            }
            Err(e) => {
                if counted {
                    *r.errors.entry(0).or_insert(0) += 1;
                }
                r.first_error.get_or_insert_with(|| format!("{e:#}"));
                conn = None;
            }
        }
    }
    r
}

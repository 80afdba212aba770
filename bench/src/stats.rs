//! Latency summaries (HdrHistogram, microseconds) and CPU accounting from `/proc`.

use std::time::Duration;

use hdrhistogram::Histogram;
use serde_json::{Value, json};

/// A histogram of latencies in microseconds, 1 µs .. 60 s, 3 significant digits.
pub fn histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, 60_000_000, 3).expect("valid histogram bounds")
}

/// Record one latency (clamped into the histogram's range).
pub fn record(h: &mut Histogram<u64>, d: Duration) {
    let us = u64::try_from(d.as_micros()).unwrap_or(u64::MAX).clamp(1, 60_000_000);
    h.saturating_record(us);
}

/// The percentiles every scenario reports.
#[derive(Debug, Clone, Copy, Default)]
pub struct Summary {
    pub count: u64,
    pub min_us: i64,
    pub mean_us: f64,
    pub p50_us: i64,
    pub p90_us: i64,
    pub p99_us: i64,
    pub p999_us: i64,
    pub max_us: i64,
}

impl Summary {
    pub fn of_histogram(h: &Histogram<u64>) -> Self {
        if h.is_empty() {
            return Self::default();
        }
        let q = |p: f64| i64::try_from(h.value_at_quantile(p)).unwrap_or(i64::MAX);
        Self {
            count: h.len(),
            min_us: i64::try_from(h.min()).unwrap_or(0),
            mean_us: h.mean(),
            p50_us: q(0.50),
            p90_us: q(0.90),
            p99_us: q(0.99),
            p999_us: q(0.999),
            max_us: i64::try_from(h.max()).unwrap_or(i64::MAX),
        }
    }

    /// Exact nearest-rank percentiles of a small sample set, which may hold negative values
    /// (e.g. a wake observed before the resolve ack came back).
    pub fn of_samples(samples: &[i64]) -> Self {
        if samples.is_empty() {
            return Self::default();
        }
        let mut s = samples.to_vec();
        s.sort_unstable();
        let rank = |p: f64| {
            // nearest rank: the smallest value with at least p of the samples at or below it
            let n = s.len();
            #[allow(clippy::cast_possible_truncation, clippy::cast_sign_loss, clippy::cast_precision_loss)]
            let k = ((p * n as f64).ceil() as usize).clamp(1, n);
            s[k - 1]
        };
        #[allow(clippy::cast_precision_loss)]
        let mean = s.iter().map(|&v| v as f64).sum::<f64>() / s.len() as f64;
        Self {
            count: s.len() as u64,
            min_us: s[0],
            mean_us: mean,
            p50_us: rank(0.50),
            p90_us: rank(0.90),
            p99_us: rank(0.99),
            p999_us: rank(0.999),
            max_us: s[s.len() - 1],
        }
    }

    /// `p50 1.234 ms  p90 …` on one line.
    pub fn line(&self) -> String {
        format!(
            "p50 {}  p90 {}  p99 {}  p99.9 {}  max {}  (min {}, mean {:.3} ms, n={})",
            ms(self.p50_us),
            ms(self.p90_us),
            ms(self.p99_us),
            ms(self.p999_us),
            ms(self.max_us),
            ms(self.min_us),
            self.mean_us / 1000.0,
            self.count
        )
    }

    pub fn to_json(self) -> Value {
        json!({
            "count": self.count, "min_us": self.min_us, "mean_us": (self.mean_us * 10.0).round() / 10.0,
            "p50_us": self.p50_us, "p90_us": self.p90_us, "p99_us": self.p99_us,
            "p999_us": self.p999_us, "max_us": self.max_us,
        })
    }
}

/// Microseconds as `1.234 ms`.
pub fn ms(us: i64) -> String {
    #[allow(clippy::cast_precision_loss)]
    let v = us as f64 / 1000.0;
    format!("{v:.3} ms")
}

/// Signed microseconds between two instants (`b - a`).
pub fn signed_us(a: std::time::Instant, b: std::time::Instant) -> i64 {
    if b >= a {
        i64::try_from((b - a).as_micros()).unwrap_or(i64::MAX)
    } else {
        -i64::try_from((a - b).as_micros()).unwrap_or(i64::MAX)
    }
}

/// Linux exports process times in USER_HZ clock ticks, which is 100 on every mainstream
/// architecture (it is not the kernel's CONFIG_HZ).
const USER_HZ: f64 = 100.0;

/// CPU time consumed by a process (all its threads), in seconds, from `/proc/<pid>/stat`.
pub fn process_cpu_seconds(pid: &str) -> Option<f64> {
    let text = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The command name is in parentheses and may contain spaces: split after the last ')'.
    let rest = &text[text.rfind(')')? + 2..];
    let fields: Vec<&str> = rest.split_whitespace().collect();
    // After `pid (comm) `: field 3 (state) is index 0, so utime (14) is 11 and stime (15) is 12.
    let utime: f64 = fields.get(11)?.parse().ok()?;
    let stime: f64 = fields.get(12)?.parse().ok()?;
    Some((utime + stime) / USER_HZ)
}

/// Machine-wide (busy, total) jiffies from the first line of `/proc/stat`.
pub fn machine_jiffies() -> Option<(f64, f64)> {
    let text = std::fs::read_to_string("/proc/stat").ok()?;
    let line = text.lines().next()?;
    let v: Vec<f64> = line.split_whitespace().skip(1).filter_map(|x| x.parse().ok()).collect();
    if v.len() < 5 {
        return None;
    }
    // user nice system idle iowait irq softirq steal (guest is already inside user)
    let total: f64 = v.iter().take(8).sum();
    let idle = v[3] + v[4];
    Some((total - idle, total))
}

/// A CPU snapshot of the client, the server (if its pid is known) and the whole machine.
#[derive(Debug, Clone, Copy)]
pub struct CpuSnap {
    at: std::time::Instant,
    client: Option<f64>,
    server: Option<f64>,
    machine: Option<(f64, f64)>,
}

impl CpuSnap {
    pub fn take(server_pid: Option<&str>) -> Self {
        Self {
            at: std::time::Instant::now(),
            client: process_cpu_seconds("self"),
            server: server_pid.and_then(process_cpu_seconds),
            machine: machine_jiffies(),
        }
    }

    /// CPU use between `self` and `later`, as percent of ONE core (200 % = both cores of a
    /// 2-core machine), plus the machine's busy share of all cores.
    pub fn until(&self, later: &Self) -> CpuUse {
        let wall = (later.at - self.at).as_secs_f64().max(1e-9);
        let pct = |a: Option<f64>, b: Option<f64>| Some((b? - a?) / wall * 100.0);
        let machine_busy_pct = match (self.machine, later.machine) {
            (Some((b0, t0)), Some((b1, t1))) if t1 > t0 => Some((b1 - b0) / (t1 - t0) * 100.0),
            _ => None,
        };
        CpuUse {
            client_pct: pct(self.client, later.client),
            server_pct: pct(self.server, later.server),
            machine_busy_pct,
            cores: std::thread::available_parallelism().map_or(1, std::num::NonZero::get),
        }
    }
}

#[derive(Debug, Clone, Copy)]
pub struct CpuUse {
    /// This process, % of one core.
    pub client_pct: Option<f64>,
    /// The Hub process, % of one core (`None` without `--server-pid`).
    pub server_pct: Option<f64>,
    /// Every core of the machine, % busy (100 = all cores busy).
    pub machine_busy_pct: Option<f64>,
    pub cores: usize,
}

impl CpuUse {
    pub fn line(&self) -> String {
        let f = |v: Option<f64>| v.map_or_else(|| "n/a".to_owned(), |v| format!("{v:.0}%"));
        // What the rest of the machine (other processes: builds, editors) took, in % of one core.
        #[allow(clippy::cast_precision_loss)]
        let others = match (self.machine_busy_pct, self.client_pct, self.server_pct) {
            (Some(m), Some(c), Some(s)) => format!("{:.0}%", (m * self.cores as f64 - c - s).max(0.0)),
            _ => "n/a".to_owned(),
        };
        format!(
            "cpu (% of one core; {} cores = {}%): hub {}  client {}  other processes {}  machine busy {} of all cores",
            self.cores,
            self.cores * 100,
            f(self.server_pct),
            f(self.client_pct),
            others,
            f(self.machine_busy_pct)
        )
    }

    pub fn to_json(self) -> Value {
        let r = |v: Option<f64>| v.map(|v| (v * 10.0).round() / 10.0);
        json!({
            "hub_pct_of_one_core": r(self.server_pct),
            "client_pct_of_one_core": r(self.client_pct),
            "machine_busy_pct_of_all_cores": r(self.machine_busy_pct),
            "cores": self.cores,
        })
    }
}

/// The 1-minute load average (a hint that something else was running).
pub fn loadavg() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let s: Vec<i64> = (1..=100).collect();
        let sum = Summary::of_samples(&s);
        assert_eq!((sum.p50_us, sum.p90_us, sum.p99_us, sum.max_us, sum.min_us), (50, 90, 99, 100, 1));
        let neg = Summary::of_samples(&[-5, 3, 10]);
        assert_eq!((neg.min_us, neg.p50_us, neg.max_us), (-5, 3, 10));
    }

    #[test]
    fn reads_own_cpu_time() {
        assert!(process_cpu_seconds("self").is_some());
        assert!(machine_jiffies().is_some());
    }
}

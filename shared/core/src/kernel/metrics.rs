//! What the Hub counts, through the `metrics` facade: a no-op until a binary installs a recorder
//! (Prometheus text on the local server, CloudWatch Embedded Metric Format on Lambda). Labels are
//! low-cardinality on purpose — route templates, statuses, kinds, outcomes — never ids, agents,
//! titles or anything a message says (§9.6).

/// Requests by `route` (the Router's template, `unmatched` for none), `method`, `status`.
pub const HTTP_REQUESTS: &str = "ma2h_http_requests_total";
/// Request latency by `route`, seconds.
pub const HTTP_DURATION: &str = "ma2h_http_request_duration_seconds";
/// Accepted submits by `type` (replays are not counted again).
pub const SUBMITTED: &str = "ma2h_messages_submitted_total";
/// Terminal outcomes by `type` and `resolution` (§7).
pub const RESOLVED: &str = "ma2h_messages_resolved_total";
/// From submit to the decision of a person or agent (expiries and cancels excluded), seconds.
pub const TIME_TO_ANSWER: &str = "ma2h_time_to_answer_seconds";
/// Open messages by `priority`, as counted at scrape time.
pub const OPEN: &str = "ma2h_open_messages";
/// Open messages by `type`, as counted at scrape time.
pub const OPEN_BY_TYPE: &str = "ma2h_open_messages_by_type";
/// Push attempts by `outcome`: delivered, retry, failed.
pub const PUSH_ATTEMPTS: &str = "ma2h_push_attempts_total";
/// Pushes that failed for good (retries exhausted or refused): the agent must pull.
pub const PUSH_DEAD: &str = "ma2h_push_dead_letters_total";
/// How late the sweeper acted on the most overdue expiry it handled, seconds.
pub const SWEEP_LAG: &str = "ma2h_sweep_lag_seconds";
/// Expiries applied by the sweeper.
pub const SWEEP_EXPIRED: &str = "ma2h_sweep_expired_total";

/// Histogram buckets for latencies (seconds): 1 ms … 30 s (long-polls land in the top ones).
pub const LATENCY_BUCKETS: [f64; 14] =
    [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0];
/// Buckets for time to answer (seconds): 10 s … 7 days.
pub const ANSWER_BUCKETS: [f64; 10] =
    [10.0, 60.0, 300.0, 900.0, 3600.0, 4.0 * 3600.0, 12.0 * 3600.0, 86400.0, 3.0 * 86400.0, 7.0 * 86400.0];

/// Every metric with its help text, for exporters that describe them. Called once the
/// process's recorder is installed: from then on [`http`] and [`submitted`] keep their handles.
pub fn describe() {
    HANDLES_ON.store(true, std::sync::atomic::Ordering::Release);
    use metrics::{describe_counter, describe_gauge, describe_histogram};
    describe_counter!(HTTP_REQUESTS, "HTTP requests by route template, method and status");
    describe_histogram!(HTTP_DURATION, metrics::Unit::Seconds, "HTTP request latency by route template");
    describe_counter!(SUBMITTED, "accepted submits by message type");
    describe_counter!(RESOLVED, "terminal outcomes by message type and resolution");
    describe_histogram!(TIME_TO_ANSWER, metrics::Unit::Seconds, "submit to a person's or agent's decision");
    describe_gauge!(OPEN, "open messages by priority");
    describe_gauge!(OPEN_BY_TYPE, "open messages by type");
    describe_counter!(PUSH_ATTEMPTS, "push attempts by outcome");
    describe_counter!(PUSH_DEAD, "pushes that failed for good");
    describe_gauge!(SWEEP_LAG, metrics::Unit::Seconds, "lateness of the most overdue expiry in the last sweep");
    describe_counter!(SWEEP_EXPIRED, "expiries applied by the sweeper");
}

pub fn http(route: &str, method: &str, status: u16, seconds: f64) {
    let (count, latency) = http_handles(route, method, status);
    count.increment(1);
    latency.record(seconds);
}

/// Whether a recorder is installed ([`describe`] ran), so handles taken now are its own: one
/// taken before would stay a no-op for good.
static HANDLES_ON: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
/// The most (route, method, status) handles kept: routes are the Router's templates, but the
/// method is the client's word.
const HTTP_CACHE_MAX: usize = 512;

/// Per route template: (method, status, request counter, the route's latency histogram).
type HttpCache =
    std::sync::RwLock<std::collections::HashMap<String, Vec<(String, u16, metrics::Counter, metrics::Histogram)>>>;

/// The request's handles: registering labelled metrics with the recorder on every request
/// (three label strings built, the key hashed and looked up twice) was 1.5 % of a submit's CPU.
fn http_handles(route: &str, method: &str, status: u16) -> (metrics::Counter, metrics::Histogram) {
    static CACHE: std::sync::LazyLock<HttpCache> = std::sync::LazyLock::new(Default::default);
    static CACHED: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);
    let register = || {
        let labels = [("route", route.to_owned()), ("method", method.to_owned()), ("status", status.to_string())];
        (metrics::counter!(HTTP_REQUESTS, &labels), metrics::histogram!(HTTP_DURATION, "route" => route.to_owned()))
    };
    if !HANDLES_ON.load(std::sync::atomic::Ordering::Acquire) {
        return register();
    }
    let hit = |cache: &std::collections::HashMap<String, Vec<_>>| {
        cache.get(route).and_then(|v: &Vec<(String, u16, metrics::Counter, metrics::Histogram)>| {
            v.iter().find(|(m, s, _, _)| m == method && *s == status).map(|(_, _, c, h)| (c.clone(), h.clone()))
        })
    };
    if let Some(h) = hit(&CACHE.read().unwrap_or_else(std::sync::PoisonError::into_inner)) {
        return h;
    }
    if CACHED.load(std::sync::atomic::Ordering::Relaxed) >= HTTP_CACHE_MAX {
        return register(); // full (the client names the method): no write lock per request
    }
    let (count, latency) = register();
    let mut cache = CACHE.write().unwrap_or_else(std::sync::PoisonError::into_inner);
    if hit(&cache).is_none() && CACHED.load(std::sync::atomic::Ordering::Relaxed) < HTTP_CACHE_MAX {
        CACHED.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        cache.entry(route.to_owned()).or_default().push((method.to_owned(), status, count.clone(), latency.clone()));
    }
    (count, latency)
}

/// An accepted submit; the handle per type is kept once the recorder is installed (as [`http`]'s).
pub fn submitted(kind: &'static str) {
    static CACHE: std::sync::RwLock<Vec<(&'static str, metrics::Counter)>> = std::sync::RwLock::new(Vec::new());
    let register = || metrics::counter!(SUBMITTED, "type" => kind);
    if !HANDLES_ON.load(std::sync::atomic::Ordering::Acquire) {
        return register().increment(1);
    }
    let cached = CACHE
        .read()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .iter()
        .find(|(k, _)| *k == kind)
        .map(|(_, c)| c.clone());
    let counter = cached.unwrap_or_else(|| {
        let counter = register();
        let mut cache = CACHE.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        // a few static type names: the cache stays that small
        if !cache.iter().any(|(k, _)| *k == kind) {
            cache.push((kind, counter.clone()));
        }
        counter
    });
    counter.increment(1);
}

/// A terminal outcome; `answer_seconds` for a decision by a person or an agent.
pub fn resolved(kind: &'static str, resolution: &'static str, answer_seconds: Option<f64>) {
    metrics::counter!(RESOLVED, "type" => kind, "resolution" => resolution).increment(1);
    if let Some(s) = answer_seconds {
        metrics::histogram!(TIME_TO_ANSWER, "type" => kind).record(s.max(0.0));
    }
}

pub fn open(priority: &'static str, n: u64) {
    metrics::gauge!(OPEN, "priority" => priority).set(n as f64);
}

pub fn open_by_type(kind: &'static str, n: u64) {
    metrics::gauge!(OPEN_BY_TYPE, "type" => kind).set(n as f64);
}

pub fn push_attempt(outcome: &'static str, dead: bool) {
    metrics::counter!(PUSH_ATTEMPTS, "outcome" => outcome).increment(1);
    if dead {
        metrics::counter!(PUSH_DEAD).increment(1);
    }
}

/// One notification step attempted (issue 20): by channel kind, step kind and result.
pub fn notification(channel: &'static str, step: &'static str, outcome: &'static str) {
    metrics::counter!("ma2h_notification_steps_total", "channel" => channel, "step" => step, "outcome" => outcome)
        .increment(1);
}

pub fn swept(lag_seconds: f64, expired: usize) {
    metrics::gauge!(SWEEP_LAG).set(lag_seconds.max(0.0));
    metrics::counter!(SWEEP_EXPIRED).increment(expired as u64);
}

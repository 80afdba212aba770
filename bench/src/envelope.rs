//! The envelopes the load generator submits, serialized once.

use serde_json::{Value, json};

/// Width of the zero-padded counter patched into a pre-serialized body.
pub const COUNTER_DIGITS: usize = 12;

/// `created_at`: the start of the run (the Hub does not judge it, but keep it plausible).
pub fn now_rfc3339() -> String {
    let secs = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_secs());
    let days = secs / 86_400;
    let rem = secs % 86_400;
    let (y, m, d) = civil_from_days(i64::try_from(days).unwrap_or(0));
    format!("{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}Z", rem / 3600, rem % 3600 / 60, rem % 60)
}

/// Days since 1970-01-01 → (year, month, day) in the proleptic Gregorian calendar (H. Hinnant).
fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = u32::try_from(doy - (153 * mp + 2) / 5 + 1).unwrap_or(1);
    let m = u32::try_from(if mp < 10 { mp + 3 } else { mp - 9 }).unwrap_or(1);
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// A short run id so idempotency keys of different runs never collide.
pub fn run_id() -> String {
    let nanos = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos());
    format!("{:x}{:x}", nanos & 0xffff_ffff_ffff, std::process::id())
}

/// A `notify` (no idempotency key: every submit is a new message).
pub fn notify(agent_id: &str, created_at: &str) -> Value {
    json!({
        "ma2h_version": "0.5", "type": "notify", "created_at": created_at,
        "agent": {"id": agent_id, "run_id": "bench", "runtime": "cli"},
        "title": "ma2h-bench notify", "body": "Load generator: a notify acked `delivered`.",
    })
}

/// A durable `ask` (select, two options). `callback` is the optional push callback object.
pub fn ask(
    agent_id: &str,
    created_at: &str,
    idempotency_key: &str,
    resolvers: Option<&str>,
    callback: Option<Value>,
) -> Value {
    let mut request = json!({
        "mode": "select",
        "options": [{"value": "ship", "label": "Ship"}, {"value": "hold", "label": "Hold"}],
    });
    if let Some(r) = resolvers {
        request["allowed_resolvers"] = json!([r]);
    }
    if let Some(cb) = callback {
        request["callback"] = cb;
    }
    json!({
        "ma2h_version": "0.5", "type": "ask", "created_at": created_at,
        "agent": {"id": agent_id, "run_id": "bench", "runtime": "cli"},
        "title": "ma2h-bench: ship build?", "priority": "normal",
        "idempotency_key": idempotency_key,
        "request": request,
    })
}

/// A body serialized once, with a fixed-width decimal counter patched in place per request.
#[derive(Clone)]
pub struct Template {
    bytes: Vec<u8>,
    counter_at: Option<usize>,
}

impl Template {
    /// `marker` is the all-zero counter text that appears exactly once in `value`'s serialization
    /// (or `None` for a body that never varies).
    pub fn new(value: &Value, marker: Option<&str>) -> Self {
        let bytes = serde_json::to_vec(value).expect("a JSON value serializes");
        let counter_at = marker.map(|m| {
            let at = find(&bytes, m.as_bytes()).expect("the counter marker is in the body");
            assert!(find(&bytes[at + 1..], m.as_bytes()).is_none(), "the counter marker is unique");
            at + m.len() - COUNTER_DIGITS
        });
        Self { bytes, counter_at }
    }

    /// The body for request number `n`.
    #[cfg(test)]
    pub fn body(&self, n: u64) -> bytes::Bytes {
        let mut b = self.bytes.clone();
        if let Some(at) = self.counter_at {
            patch(&mut b[at..at + COUNTER_DIGITS], n);
        }
        bytes::Bytes::from(b)
    }

    /// The whole HTTP/1.1 request — `head_lines` (request line and headers, each ending in
    /// CRLF), `content-length`, the blank line, the body — as a template of its own, patched in
    /// place per request by [`Self::patch`].
    pub fn with_head(&self, head_lines: &str) -> Self {
        let head = format!("{head_lines}content-length: {}\r\n\r\n", self.bytes.len());
        let mut bytes = head.clone().into_bytes();
        bytes.extend_from_slice(&self.bytes);
        Self { bytes, counter_at: self.counter_at.map(|at| at + head.len()) }
    }

    /// Write request number `n`'s counter into the template and answer its bytes.
    pub fn patch(&mut self, n: u64) -> &[u8] {
        if let Some(at) = self.counter_at {
            patch(&mut self.bytes[at..at + COUNTER_DIGITS], n);
        }
        &self.bytes
    }
}

/// `n` as zero-padded decimal digits filling `slots`.
fn patch(slots: &mut [u8], mut n: u64) {
    for slot in slots.iter_mut().rev() {
        *slot = b'0' + u8::try_from(n % 10).unwrap_or(0);
        n /= 10;
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// The all-zero counter marker for a key prefix: `<prefix>-000000000000`.
pub fn counter_marker(prefix: &str) -> String {
    format!("{prefix}-{}", "0".repeat(COUNTER_DIGITS))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patches_the_counter_in_place() {
        let marker = counter_marker("bench-r1-c4w2");
        let t = Template::new(&ask("bot", "2026-01-01T00:00:00Z", &marker, None, None), Some(&marker));
        let body: Value = serde_json::from_slice(&t.body(4711)).unwrap();
        assert_eq!(body["idempotency_key"], "bench-r1-c4w2-000000004711");
        assert_eq!(t.body(1).len(), t.body(999_999).len());
        let n = Template::new(&notify("bot", "2026-01-01T00:00:00Z"), None);
        assert_eq!(n.body(1), n.body(2));
    }

    #[test]
    fn a_whole_request_carries_the_body_and_its_length_and_patches_the_same_counter() {
        let marker = counter_marker("bench-r1-c4w2");
        let t = Template::new(&ask("bot", "2026-01-01T00:00:00Z", &marker, None, None), Some(&marker));
        let mut req = t.with_head("POST /v1/messages HTTP/1.1\r\nhost: h\r\n");
        let bytes = req.patch(4711).to_vec();
        let text = String::from_utf8(bytes).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert_eq!(head, format!("POST /v1/messages HTTP/1.1\r\nhost: h\r\ncontent-length: {}", body.len()));
        assert_eq!(body.as_bytes(), &t.body(4711)[..]);
    }

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_454), (2026, 1, 1));
        assert_eq!(civil_from_days(11_016), (2000, 2, 29));
    }
}

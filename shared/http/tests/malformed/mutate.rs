//! The deterministic mutator: a xorshift PRNG, structural edits through `serde_json::Value`,
//! byte-level edits of the serialized body, and content types.

use serde_json::{Map, Value, json};

/// xorshift64* (Vigna): tiny, deterministic, good enough to spread mutations.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    pub(crate) fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    pub(crate) fn percent(&mut self, p: usize) -> bool {
        self.below(100) < p
    }
    pub(crate) fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// Field names of the envelope and resolve bodies: grafting them onto the wrong objects hits the
/// schema's conditionals and the cross-field rules instead of only "unknown field".
pub(crate) const FIELDS: &[&str] = &[
    "ma2h_version",
    "type",
    "agent",
    "id",
    "title",
    "body",
    "priority",
    "tags",
    "to",
    "expires_at",
    "created_at",
    "idempotency_key",
    "request",
    "action",
    "mode",
    "options",
    "value",
    "label",
    "schema",
    "permissions",
    "default_on_expire",
    "allowed_resolvers",
    "callback",
    "url",
    "auth",
    "scheme",
    "secret_ref",
    "checklist",
    "instructions",
    "context",
    "state",
    "sensitive",
    "session",
    "resolution",
    "comment",
    "done",
    "text",
    "properties",
    "required",
    "pattern",
    "enum",
];

/// A value of some (usually other) JSON type, biased towards the edges parsers get wrong.
pub(crate) fn wild(rng: &mut Rng) -> Value {
    match rng.below(22) {
        0 => Value::Null,
        1 => json!(true),
        2 => json!(0),
        3 => json!(-1),
        4 => json!(u64::MAX),
        5 => json!(i64::MIN),
        6 => json!(1.7976931348623157e308),
        7 => json!(5e-324),
        8 => json!(""),
        9 => json!("x"),
        10 => Value::String("A".repeat(70_000)),
        11 => json!("nul\u{0}inside\u{1}\u{1f}\u{7f}"),
        12 => json!("\u{202e}bidi😀\u{fffd}"),
        13 => json!([]),
        14 => json!({}),
        15 => json!(["a", 1, null, {}]),
        16 => json!({"type": "object", "properties": {"a": {"type": "string", "pattern": "(a+)+$"}}}),
        17 => json!("2026-13-45T25:61:61Z"),
        18 => json!("1999-01-01T00:00:00Z"),
        19 => json!("0.3"),
        20 => {
            // Nested 40 deep: deep enough to stress recursion, under serde_json's 128 limit.
            let mut v = json!("leaf");
            for _ in 0..40 {
                v = if rng.percent(50) { json!([v]) } else { json!({ "n": v }) };
            }
            v
        }
        _ => json!(*rng.pick(FIELDS)),
    }
}

pub(crate) fn count(v: &Value) -> usize {
    1 + match v {
        Value::Array(a) => a.iter().map(count).sum(),
        Value::Object(m) => m.values().map(count).sum(),
        _ => 0,
    }
}

/// The `n`th node in pre-order (0 = the root).
pub(crate) fn nth_mut(v: &mut Value, mut n: usize) -> &mut Value {
    if n == 0 {
        return v;
    }
    n -= 1;
    let children: Vec<&mut Value> = match v {
        Value::Array(a) => a.iter_mut().collect(),
        Value::Object(m) => m.values_mut().collect(),
        _ => Vec::new(),
    };
    for child in children {
        let size = count(child);
        if n < size {
            return nth_mut(child, n);
        }
        n -= size;
    }
    unreachable!("n is below count(v)")
}

/// A random object node (the root if a few draws find none).
pub(crate) fn some_object<'a>(rng: &mut Rng, v: &'a mut Value) -> Option<&'a mut Map<String, Value>> {
    let total = count(v);
    let pick = (0..8).map(|_| rng.below(total)).find(|&i| nth_mut(v, i).is_object()).unwrap_or(0);
    nth_mut(v, pick).as_object_mut()
}

/// Placeholder key prefix for a duplicated member: serde_json's map cannot hold the same key
/// twice, so the copy is renamed back textually after serialization.
pub(crate) const DUP: &str = "\u{0}DUP\u{0}";
pub(crate) const DUP_ESCAPED: &str = "\\u0000DUP\\u0000";

/// One to three structural edits through `serde_json::Value`, then serialization.
pub(crate) fn mutate_structure(rng: &mut Rng, mut v: Value) -> Vec<u8> {
    for _ in 0..=rng.below(3) {
        match rng.below(5) {
            // Type swap (or value swap) of any node.
            0 | 1 => {
                let total = count(&v);
                *nth_mut(&mut v, rng.below(total)) = wild(rng);
            }
            2 => {
                if let Some(obj) = some_object(rng, &mut v)
                    && !obj.is_empty()
                {
                    let key = obj.keys().nth(rng.below(obj.len())).unwrap().clone();
                    obj.shift_remove(&key);
                }
            }
            3 => {
                let value = wild(rng);
                if let Some(obj) = some_object(rng, &mut v) {
                    obj.insert(rng.pick(FIELDS).to_string(), value);
                }
            }
            _ => {
                let value = wild(rng);
                if let Some(obj) = some_object(rng, &mut v)
                    && !obj.is_empty()
                {
                    let key = obj.keys().nth(rng.below(obj.len())).unwrap().clone();
                    obj.insert(format!("{DUP}{key}"), value);
                }
            }
        }
    }
    let text = serde_json::to_string(&v).unwrap();
    text.replace(DUP_ESCAPED, "").into_bytes()
}

/// Text and bytes JSON parsers trip on.
pub(crate) const TOKENS: &[&[u8]] = &[
    b"\"",
    b"{",
    b"}",
    b"[",
    b"]",
    b",",
    b":",
    b"\\",
    b"\\u0000",
    b"\0",
    b"\\ud800",
    b"\\uDFFF\\uD800",
    b"1e999999",
    b"-1e999999",
    b"123456789012345678901234567890",
    b"-0",
    b"0.",
    b".5",
    b"NaN",
    b"Infinity",
    b"\xff\xfe",
    b"\xc3",
    b"\xed\xa0\x80",
    b"\xef\xbb\xbf",
    b"null",
    b"true",
    b"//",
    b"/*",
];

/// One to four byte-level edits of a serialized body.
pub(crate) fn mutate_bytes(rng: &mut Rng, mut b: Vec<u8>) -> Vec<u8> {
    for _ in 0..=rng.below(4) {
        let at = rng.below(b.len() + 1);
        let last = b.len().saturating_sub(1);
        match rng.below(8) {
            0 if !b.is_empty() => b[at.min(last)] ^= 1 << rng.below(8),
            1 if !b.is_empty() => b[at.min(last)] = rng.below(256) as u8,
            2 => b.truncate(at),
            3 | 4 => {
                let token = rng.pick(TOKENS);
                b.splice(at..at, token.iter().copied());
            }
            5 => {
                // Deep nesting, below and far beyond serde_json's recursion limit.
                let depth = *rng.pick(&[64, 127, 129, 1_000, 20_000]);
                let open = if rng.percent(50) { b"[".repeat(depth) } else { b"{\"a\":".repeat(depth) };
                b.splice(at..at, open);
            }
            6 => {
                let end = (at + rng.below(64)).min(b.len());
                b.drain(at..end);
            }
            _ => {
                let end = (at + rng.below(64)).min(b.len());
                let chunk = b[at..end].to_vec();
                let to = rng.below(b.len() + 1);
                b.splice(to..to, chunk);
            }
        }
    }
    b
}

/// A mutated body: structural edits, byte edits, or both.
pub(crate) fn mutate(rng: &mut Rng, seed: &Value) -> Vec<u8> {
    match rng.below(10) {
        0..=4 => mutate_structure(rng, seed.clone()),
        5..=7 => mutate_bytes(rng, serde_json::to_vec(seed).unwrap()),
        _ => {
            let b = mutate_structure(rng, seed.clone());
            mutate_bytes(rng, b)
        }
    }
}

/// Mostly the right content type; sometimes a wrong or missing one (the Hub reads JSON bodies
/// regardless, but whatever it decides must still be a 4xx envelope or a success).
pub(crate) fn content_type(rng: &mut Rng) -> Option<&'static str> {
    if rng.percent(85) {
        return Some("application/json");
    }
    *rng.pick(&[
        None,
        Some("text/plain"),
        Some("application/x-www-form-urlencoded"),
        Some("multipart/form-data; boundary=x"),
        Some("application/json; charset=utf-16"),
        Some("image/png"),
    ])
}

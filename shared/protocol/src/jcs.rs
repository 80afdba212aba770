//! RFC 8785 JSON Canonicalization Scheme (JCS) and the §9.2 `payload_sha256` digest.
//!
//! Every MA2H signature (§9.2 Response, §9.7 directive, §9.8 mailbox entries, §14.4 ack) is computed
//! over the JCS serialization of a small JSON object, so signer and verifier must agree byte for byte.
//! Spec §9.2 requires a *vetted* JCS implementation for non-JS signers; we delegate to `serde_jcs`, which
//!
//! - sorts object members by their UTF-16 code units (RFC 8785 §3.2.3),
//! - formats numbers as the IEEE-754 double's ECMAScript `Number::toString` form via `ryu-js`
//!   (RFC 8785 §3.2.2.3: `1e21` → `1e+21`, `1e-7` → `1e-7`, `-0.001` → `-0.001`),
//! - emits minimal string escapes with lowercase `\u00xx` for other control characters and leaves
//!   every other character as-is — string content is preserved, Unicode is **not** normalized
//!   (RFC 8785 §3.1, spec §9.2).
//!
//! Integers beyond ±(2^53−1) are serialized as the nearest double (spec §9.2 precision caveat: an
//! application needing such an integer exactly must carry it as a string).

use serde_json::Value;
use sha2::{Digest, Sha256};

/// RFC 8785 canonical bytes of `value`.
///
/// Infallible for `serde_json::Value`: the only failure mode of the JCS serializer is a non-finite
/// number, which a `Value` cannot hold (serde_json maps NaN/±∞ to `null` at construction).
pub fn canonicalize(value: &Value) -> Vec<u8> {
    serde_jcs::to_vec(value).expect("JCS of a serde_json::Value cannot fail (numbers are finite)")
}

/// RFC 8785 canonical form of `value` as a UTF-8 string (JCS output is always valid UTF-8).
pub fn canonicalize_to_string(value: &Value) -> String {
    String::from_utf8(canonicalize(value)).expect("JCS output is UTF-8")
}

/// Lowercase-hex SHA-256 of arbitrary bytes.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Lowercase-hex SHA-256 of the JCS serialization of `value` (the digest shape shared by §9.2
/// `payload_sha256`, §9.7 directive and §14.4 ack digests).
pub fn canonical_sha256(value: &Value) -> String {
    sha256_hex(&canonicalize(value))
}

/// The fixed-key object `{"response": <response|null>, "state": <state|null>}` that §9.2
/// `payload_sha256` is computed over. An absent `response` or `state` is JSON `null`, never a
/// dropped key (the same absent-as-null convention pinned for §9.8 by `dp-015`).
pub fn payload_object(response: Option<&Value>, state: Option<&Value>) -> Value {
    let mut map = serde_json::Map::with_capacity(2);
    map.insert("response".to_owned(), response.cloned().unwrap_or(Value::Null));
    map.insert("state".to_owned(), state.cloned().unwrap_or(Value::Null));
    Value::Object(map)
}

/// §9.2 `payload_sha256`: lowercase-hex SHA-256 of `JCS({"response": …, "state": …})`.
///
/// The Hub computes it over the payload it delivers; a verifier MUST recompute it from the payload it
/// actually received and never trust a transmitted digest (§9.2).
pub fn payload_sha256(response: Option<&Value>, state: Option<&Value>) -> String {
    canonical_sha256(&payload_object(response, state))
}

/// Stream the canonical bytes of `value` into `out` without building them — for digests of
/// large values (the §8.1 fingerprint of every submit). Byte-identical to [`canonicalize`]:
/// strings take serde_json's compact escaping (the same minimal escapes with lowercase `\u00xx`
/// RFC 8785 §3.2.2.2 asks for), numbers go through `serde_jcs` itself, members are sorted by
/// UTF-16 code units. The tests check it against [`canonicalize`] value by value.
pub fn write<W: std::io::Write>(value: &Value, out: &mut W) -> std::io::Result<()> {
    match value {
        Value::Object(map) => write_object(map, out),
        Value::Array(items) => {
            out.write_all(b"[")?;
            for (i, item) in items.iter().enumerate() {
                if i > 0 {
                    out.write_all(b",")?;
                }
                write(item, out)?;
            }
            out.write_all(b"]")
        }
        Value::String(s) => serde_json::to_writer(&mut *out, s).map_err(std::io::Error::other),
        Value::Number(_) => serde_jcs::to_writer(&mut *out, value).map_err(std::io::Error::other),
        Value::Bool(true) => out.write_all(b"true"),
        Value::Bool(false) => out.write_all(b"false"),
        Value::Null => out.write_all(b"null"),
    }
}

/// [`write`] for an object with the members named in `omit` left out of the object held by its
/// member `parent` (the §8.1 fingerprint: `agent` without `run_id` and `session`) — written as
/// if they were absent, without copying anything.
pub fn write_object_omitting<W: std::io::Write>(
    map: &serde_json::Map<String, Value>,
    parent: &str,
    omit: &[&str],
    out: &mut W,
) -> std::io::Result<()> {
    write_members(
        map,
        |_| false,
        |k, v, out| match v {
            Value::Object(inner) if k == parent => {
                write_members(inner, |m| omit.contains(&m), |_, v, out| write(v, out), out)
            }
            _ => write(v, out),
        },
        out,
    )
}

/// Lowercase-hex SHA-256 of the JCS of `value` with its top-level members named in `omit` left
/// out — as if absent — streamed through [`write`] into a [`HashWriter`]: no copy of the value
/// and no canonical buffer (the audit ledger's digest of every submit, issue 42).
pub fn canonical_sha256_omitting(value: &Value, omit: &[&str]) -> String {
    let mut w = HashWriter::default();
    let written = match value {
        Value::Object(map) => write_members(map, |k| omit.contains(&k), |_, v, out| write(v, out), &mut w),
        other => write(other, &mut w),
    };
    written.expect("a HashWriter never fails");
    w.hex()
}

fn write_object<W: std::io::Write>(map: &serde_json::Map<String, Value>, out: &mut W) -> std::io::Result<()> {
    write_members(map, |_| false, |_, v, out| write(v, out), out)
}

/// Members of an object held in a stack buffer while sorted: an envelope's objects are small,
/// and a `Vec` per object was most of the canonical writer's allocations.
const INLINE_MEMBERS: usize = 16;

/// The object's members but those `skip` names, sorted, each value written by `value`.
fn write_members<W: std::io::Write>(
    map: &serde_json::Map<String, Value>,
    skip: impl Fn(&str) -> bool,
    value: impl Fn(&str, &Value, &mut W) -> std::io::Result<()>,
    out: &mut W,
) -> std::io::Result<()> {
    static UNUSED: Value = Value::Null;
    let mut inline: [(&str, &Value); INLINE_MEMBERS] = [("", &UNUSED); INLINE_MEMBERS];
    let mut spilled: Vec<(&str, &Value)> = Vec::new();
    let members: &mut [(&str, &Value)] = if map.len() <= INLINE_MEMBERS {
        let mut n = 0;
        for (k, v) in map.iter().filter(|(k, _)| !skip(k)) {
            inline[n] = (k.as_str(), v);
            n += 1;
        }
        &mut inline[..n]
    } else {
        spilled.extend(map.iter().filter(|(k, _)| !skip(k)).map(|(k, v)| (k.as_str(), v)));
        &mut spilled
    };
    // RFC 8785 §3.2.3: by UTF-16 code units. UTF-8 byte order is code point order, which
    // differs from it only between a character at U+E000..U+FFFF and one above U+FFFF: never
    // for two ASCII names (the envelope's own), which are compared as bytes.
    members.sort_unstable_by(|a, b| {
        if a.0.is_ascii() && b.0.is_ascii() {
            a.0.as_bytes().cmp(b.0.as_bytes())
        } else {
            a.0.encode_utf16().cmp(b.0.encode_utf16())
        }
    });
    out.write_all(b"{")?;
    for (i, &(k, v)) in members.iter().enumerate() {
        if i > 0 {
            out.write_all(b",")?;
        }
        serde_json::to_writer(&mut *out, k).map_err(std::io::Error::other)?;
        out.write_all(b":")?;
        value(k, v, out)?;
    }
    out.write_all(b"}")
}

/// An [`std::io::Write`] that feeds SHA-256. The canonical writer hands it many tiny pieces (a
/// quote, a name, a colon): they are gathered in a 256-byte buffer and fed to the digest in
/// blocks, which halves the digest's share of a submit's fingerprint.
pub struct HashWriter {
    digest: Sha256,
    buf: [u8; 256],
    len: usize,
}

impl Default for HashWriter {
    fn default() -> Self {
        Self { digest: Sha256::default(), buf: [0; 256], len: 0 }
    }
}

impl HashWriter {
    /// The lowercase-hex digest of everything written.
    pub fn hex(mut self) -> String {
        self.digest.update(&self.buf[..self.len]);
        hex::encode(self.digest.finalize())
    }
}

impl std::io::Write for HashWriter {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        if self.len + data.len() > self.buf.len() {
            self.digest.update(&self.buf[..self.len]);
            self.len = 0;
        }
        if data.len() >= self.buf.len() {
            self.digest.update(data);
        } else {
            self.buf[self.len..self.len + data.len()].copy_from_slice(data);
            self.len += data.len();
        }
        Ok(data.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn the_streamed_digest_omitting_members_equals_the_digest_of_the_value_without_them() {
        let v = json!({"state": {"n": 1e21}, "b": [1, "é", {"z": null, "a": true}], "a": "\u{0001}x", "😀": 1, "\u{e000}": 2});
        let mut without = v.clone();
        without.as_object_mut().unwrap().remove("state");
        assert_eq!(canonical_sha256_omitting(&v, &["state"]), canonical_sha256(&without));
        assert_eq!(canonical_sha256_omitting(&v, &[]), canonical_sha256(&v));
        assert_eq!(canonical_sha256_omitting(&json!([1, 2]), &["state"]), canonical_sha256(&json!([1, 2])));
    }

    #[test]
    fn numbers_follow_rfc8785() {
        let v = json!({"b": 1e21, "a": 1e-7, "c": -0.001, "d": 1234.5, "e": 9007199254740991u64,
                       "f": 0.1, "g": -0.0, "h": 100, "i": 1e20});
        assert_eq!(
            canonicalize_to_string(&v),
            r#"{"a":1e-7,"b":1e+21,"c":-0.001,"d":1234.5,"e":9007199254740991,"f":0.1,"g":0,"h":100,"i":100000000000000000000}"#
        );
    }

    #[test]
    fn strings_preserved_and_minimally_escaped() {
        // "e\u0301" (decomposed) must not be normalized to "\u00e9"; DEL and non-ASCII stay raw.
        let v = json!({"s": "e\u{301}\u{e9}\u{7f}\u{1f}\n\"\\/€😀"});
        assert_eq!(canonicalize_to_string(&v), "{\"s\":\"e\u{301}\u{e9}\u{7f}\\u001f\\n\\\"\\\\/€😀\"}");
    }

    #[test]
    fn keys_sorted_by_utf16_code_units() {
        // UTF-16 code units: 0x000D < 0x0031 < 0x00FF < 0x20AC < 0xD83D (😀's high surrogate).
        let v = json!({"😀": 1, "€": 2, "\r": 3, "1": 4, "\u{ff}": 5});
        assert_eq!(canonicalize_to_string(&v), "{\"\\r\":3,\"1\":4,\"\u{ff}\":5,\"€\":2,\"😀\":1}");
        // A BMP character above the surrogate range sorts AFTER an astral one in UTF-16 order
        // (0xFB33 > 0xD83D) even though its code point is smaller — the case UTF-8 order gets wrong.
        let v = json!({"\u{fb33}": 1, "😀": 2});
        assert_eq!(canonicalize_to_string(&v), "{\"😀\":2,\"\u{fb33}\":1}");
    }

    #[test]
    fn the_streaming_writer_is_byte_identical_to_canonicalize() {
        let cases = [
            json!({"b": 1e21, "a": 1e-7, "c": -0.001, "d": 1234.5, "e": 9007199254740993u64, "f": 0.1,
                   "g": -0.0, "h": 100, "i": 1e20, "j": -42, "k": u64::MAX, "l": i64::MIN}),
            json!({"s": "e\u{301}\u{e9}\u{7f}\u{1f}\u{0}\u{8}\u{c}\t\r\n\"\\/€😀\u{2028}\u{2029}"}),
            json!({"😀": 1, "€": 2, "\r": 3, "1": 4, "\u{ff}": 5, "\u{fb33}": 6, "": 7, "a\"b": 8}),
            json!([null, true, false, [], {}, [[1, [2]], {"z": {"y": [{"x": null}]}}], "", 0]),
            json!({"ma2h_version": "0.5", "type": "ask", "agent": {"id": "bot", "run_id": "r1"},
                   "request": {"mode": "select", "options": [{"value": "a", "label": "A"}]},
                   "state": {"nested": {"deep": [1.5, "x", {"b": 2, "a": 1}]}}}),
            json!("top-level string"),
            json!(3.25),
            json!(null),
        ];
        for v in cases {
            let mut streamed = Vec::new();
            write(&v, &mut streamed).unwrap();
            assert_eq!(String::from_utf8(streamed).unwrap(), canonicalize_to_string(&v), "for {v}");
            let mut h = HashWriter::default();
            write(&v, &mut h).unwrap();
            assert_eq!(h.hex(), canonical_sha256(&v));
        }
    }

    #[test]
    fn the_hash_writer_digests_any_split_of_the_input_alike() {
        use std::io::Write as _;
        let data: Vec<u8> = (0..2000u32).map(|i| (i * 7 % 251) as u8).collect();
        let want = sha256_hex(&data);
        for piece in [1, 3, 255, 256, 257, 700, 2000] {
            let mut h = HashWriter::default();
            for chunk in data.chunks(piece) {
                h.write_all(chunk).unwrap();
            }
            assert_eq!(h.hex(), want, "pieces of {piece}");
        }
        assert_eq!(HashWriter::default().hex(), sha256_hex(b""));
    }

    #[test]
    fn write_object_omitting_leaves_out_the_named_members_of_the_parent_only() {
        let v = json!({"b": {"keep": 1, "drop": 2, "also": 3}, "a": {"drop": 0}, "drop": 4});
        let mut out = Vec::new();
        write_object_omitting(v.as_object().unwrap(), "b", &["drop", "also"], &mut out).unwrap();
        assert_eq!(out, br#"{"a":{"drop":0},"b":{"keep":1},"drop":4}"#);
    }

    #[test]
    fn a_parent_that_is_not_an_object_is_written_whole() {
        let v = json!({"agent": ["run_id", "session"], "run_id": 1});
        let mut out = Vec::new();
        write_object_omitting(v.as_object().unwrap(), "agent", &["run_id", "session"], &mut out).unwrap();
        assert_eq!(out, br#"{"agent":["run_id","session"],"run_id":1}"#);
    }

    #[test]
    fn objects_at_and_past_the_inline_buffer_sort_alike() {
        // the buffer's size, one more (the spilled path), and many more; names out of order
        for size in [INLINE_MEMBERS - 1, INLINE_MEMBERS, INLINE_MEMBERS + 1, 40] {
            let map: serde_json::Map<String, Value> =
                (0..size).rev().map(|i| (format!("k{i:02}"), json!({"n": i, "€": [i]}))).collect();
            let v = Value::Object(map);
            let mut streamed = Vec::new();
            write(&v, &mut streamed).unwrap();
            assert_eq!(String::from_utf8(streamed).unwrap(), canonicalize_to_string(&v), "{size} members");
        }
    }

    #[test]
    fn absent_payload_parts_are_null() {
        assert_eq!(canonicalize_to_string(&payload_object(None, None)), r#"{"response":null,"state":null}"#);
        assert_eq!(payload_sha256(None, None), sha256_hex(br#"{"response":null,"state":null}"#));
    }
}

//! Fuzz target `canonicalize`: arbitrary bytes → `serde_json::Value` → RFC 8785 JCS
//! (`ma2h_protocol::jcs::canonicalize`), the byte string every §9.2 signature is computed over.
//!
//! Asserts: nothing panics; the canonical output is UTF-8 JSON; canonicalization is idempotent
//! (re-parsing the output and canonicalizing again gives identical bytes — signer and verifier
//! agree even when one of them starts from the other's canonical bytes); the output contains no
//! insignificant whitespace, sorts every object's members by UTF-16 code units (RFC 8785 §3.2.3),
//! and denotes the same value as the input (strings verbatim, numbers equal as IEEE-754 doubles).
#![no_main]

use libfuzzer_sys::fuzz_target;
use ma2h_protocol::jcs;
use serde_json::Value;

fuzz_target!(|data: &[u8]| {
    let Ok(value) = serde_json::from_slice::<Value>(data) else { return };
    let canonical = jcs::canonicalize(&value);
    let text = std::str::from_utf8(&canonical).expect("JCS output is UTF-8");
    assert_eq!(jcs::canonicalize_to_string(&value), text);

    let reparsed: Value = serde_json::from_slice(&canonical).expect("JCS output is valid JSON");
    assert_eq!(jcs::canonicalize(&reparsed), canonical, "JCS is idempotent");
    assert!(same_value(&value, &reparsed), "JCS preserves the value");
    assert_sorted(&reparsed);
    assert_no_whitespace(text);
});

/// Structural equality where numbers compare as the doubles JCS serializes (RFC 8785 §3.2.2.3):
/// `1.0` and `1`, or a u64 beyond 2^53 and its nearest double, are the same number.
fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => x.len() == y.len() && x.iter().zip(y).all(|(p, q)| same_value(p, q)),
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len() && x.iter().all(|(k, v)| y.get(k).is_some_and(|w| same_value(v, w)))
        }
        _ => a == b,
    }
}

/// With `preserve_order`, a parsed object keeps the members in document order: they must already
/// be strictly ascending by UTF-16 code units.
fn assert_sorted(v: &Value) {
    match v {
        Value::Object(map) => {
            let keys: Vec<Vec<u16>> = map.keys().map(|k| k.encode_utf16().collect()).collect();
            assert!(keys.windows(2).all(|w| w[0] < w[1]), "members not in UTF-16 order: {:?}", map.keys());
            map.values().for_each(assert_sorted);
        }
        Value::Array(items) => items.iter().for_each(assert_sorted),
        _ => {}
    }
}

/// Outside string literals the canonical form has no whitespace at all (RFC 8785 §3.2.1).
fn assert_no_whitespace(text: &str) {
    let (mut in_string, mut escaped) = (false, false);
    for c in text.chars() {
        if in_string {
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                // U+0000..U+001F are always escaped; DEL and C1 controls stay raw (RFC 8785 §3.2.2.2).
                _ => assert!(c >= ' ', "unescaped C0 control character in a string"),
            }
        } else {
            assert!(!c.is_whitespace(), "insignificant whitespace in canonical output");
            in_string = c == '"';
        }
    }
}

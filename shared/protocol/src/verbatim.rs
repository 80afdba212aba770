//! `state` returned exactly as submitted (§4: opaque to the Hub, echoed verbatim).
//!
//! The Hub reads JSON into `serde_json::Value`, whose numbers are 64-bit: an integer beyond that
//! (`123456789012345678901234567890`) or a decimal with more digits than a double holds would come
//! back altered. So when — and only when — re-serializing the parsed `state` would change it, its
//! submitted text is kept beside the message ([`lossy_state_text`]) and spliced back into the GET
//! and push bodies ([`to_vec_with_state`]). Signatures are unaffected: they are over the RFC 8785
//! canonical form of the parsed document, whose numbers are IEEE-754 doubles by definition — what
//! any verifier computes from the bytes it received.

use serde::ser::{Serialize, SerializeMap, SerializeSeq, Serializer};
use serde_json::Value;
use serde_json::value::RawValue;

/// Where `state` sits in a GET body (§8.2: the message, and its embedded Response).
pub const GET_BODY_STATE: &[&[&str]] = &[&["state"], &["response", "state"]];
/// Where `state` sits in a §6 Response.
pub const RESPONSE_STATE: &[&[&str]] = &[&["state"]];

/// The submitted text of the top-level `state` of `body`, if parsing it into `parsed` lost
/// something (whitespace aside); `None` when the parsed value re-serializes to the same text.
/// Only a number parsed as a double can lose anything (64-bit integers are exact), so a `state`
/// without one costs nothing here: the body is not scanned a second time on the submit path.
pub fn lossy_state_text(body: &[u8], parsed: &Value) -> Option<String> {
    if !has_double(parsed) {
        return None;
    }
    #[derive(serde::Deserialize)]
    struct StateOnly<'a> {
        #[serde(borrow)]
        state: Option<&'a RawValue>,
    }
    // A body with a duplicated `state` key fails here: the parsed value (last one wins) is kept.
    let raw = serde_json::from_slice::<StateOnly<'_>>(body).ok()?.state?.get();
    let parsed: Value = serde_json::from_str(raw).ok()?;
    let compact = strip_whitespace(raw);
    (serde_json::to_string(&parsed).ok()? != compact).then_some(compact)
}

fn has_double(v: &Value) -> bool {
    match v {
        Value::Number(n) => n.is_f64(),
        Value::Array(items) => items.iter().any(has_double),
        Value::Object(map) => map.values().any(has_double),
        _ => false,
    }
}

/// JSON text without the insignificant whitespace between tokens.
fn strip_whitespace(json: &str) -> String {
    let mut out = String::with_capacity(json.len());
    let (mut in_string, mut escaped) = (false, false);
    for c in json.chars() {
        if in_string {
            out.push(c);
            match (escaped, c) {
                (true, _) => escaped = false,
                (false, '\\') => escaped = true,
                (false, '"') => in_string = false,
                _ => {}
            }
        } else if !matches!(c, ' ' | '\t' | '\n' | '\r') {
            in_string = c == '"';
            out.push(c);
        }
    }
    out
}

/// Serialize `value` as JSON, with `state_text` (when given) in place of the value at each of
/// `paths` that exists.
pub fn to_vec_with_state(value: &Value, state_text: Option<&str>, paths: &[&[&str]]) -> Vec<u8> {
    let raw = state_text.and_then(|t| RawValue::from_string(t.to_owned()).ok());
    match raw {
        Some(raw) => serde_json::to_vec(&Spliced { value, raw: &raw, paths, depth: 0 }),
        None => serde_json::to_vec(value),
    }
    .unwrap_or_default()
}

/// A `Value` being serialized `depth` keys below the root, splicing `raw` at `paths` (the
/// paths that still match the keys above).
struct Spliced<'a> {
    value: &'a Value,
    raw: &'a RawValue,
    paths: &'a [&'a [&'a str]],
    depth: usize,
}

impl Serialize for Spliced<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.value {
            Value::Object(map) => {
                let mut m = s.serialize_map(Some(map.len()))?;
                for (k, v) in map {
                    // the paths still possible below this key
                    let here: Vec<&[&str]> =
                        self.paths.iter().copied().filter(|p| p.get(self.depth) == Some(&k.as_str())).collect();
                    if here.iter().any(|p| p.len() == self.depth + 1) {
                        m.serialize_entry(k, self.raw)?;
                    } else if here.is_empty() {
                        m.serialize_entry(k, v)?;
                    } else {
                        let child = Spliced { value: v, raw: self.raw, paths: &here, depth: self.depth + 1 };
                        m.serialize_entry(k, &child)?;
                    }
                }
                m.end()
            }
            Value::Array(items) => {
                let mut seq = s.serialize_seq(Some(items.len()))?;
                for item in items {
                    seq.serialize_element(item)?;
                }
                seq.end()
            }
            other => other.serialize(s),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const BIG: &str =
        r#"{"ma2h_version":"0.5","state": {"n": 123456789012345678901234567890, "f": 0.10000000000000000555}}"#;

    fn state_of(body: &str) -> Value {
        serde_json::from_str::<Value>(body).map(|v| v["state"].clone()).unwrap_or(Value::Null)
    }

    #[test]
    fn a_state_a_double_cannot_hold_is_kept_as_submitted() {
        let text = lossy_state_text(BIG.as_bytes(), &state_of(BIG)).unwrap();
        assert_eq!(text, r#"{"n":123456789012345678901234567890,"f":0.10000000000000000555}"#);
    }

    #[test]
    fn an_ordinary_state_needs_no_copy() {
        for body in [r#"{"state": {"a": [1, 2.5, "x y"], "b": null}}"#, r#"{"title":"no state"}"#, "not json"] {
            assert_eq!(lossy_state_text(body.as_bytes(), &state_of(body)), None, "{body}");
        }
    }

    #[test]
    fn the_kept_text_is_spliced_at_each_path_and_nowhere_else() {
        let parsed: Value = serde_json::from_str(BIG).unwrap();
        let text = lossy_state_text(BIG.as_bytes(), &parsed["state"]).unwrap();
        let body = json!({"state": parsed["state"], "id": "msg_1",
            "response": {"state": parsed["state"], "value": {"state": 1}}, "other": [{"state": 2}]});
        let out = String::from_utf8(to_vec_with_state(&body, Some(&text), GET_BODY_STATE)).unwrap();
        assert_eq!(out.matches("123456789012345678901234567890").count(), 2, "{out}");
        assert!(out.contains(r#""value":{"state":1}"#) && out.contains(r#"[{"state":2}]"#), "{out}");
        let reparsed: Value = serde_json::from_str(&out).unwrap();
        assert_eq!(reparsed, body, "the same document, number precision aside");
        assert_eq!(to_vec_with_state(&body, None, GET_BODY_STATE), serde_json::to_vec(&body).unwrap());
    }

    #[test]
    fn whitespace_inside_strings_is_kept() {
        assert_eq!(strip_whitespace("{ \"a b\" : \"c \\\" d\" }"), "{\"a b\":\"c \\\" d\"}");
    }
}

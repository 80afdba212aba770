//! The envelope a hook sent for a tool call, kept so a replayed event (the same `tool_use_id`)
//! re-sends the same bytes: §8.1 compares payloads, and `expires_at` — now + timeout — would
//! differ on a second build. Files live in `<state dir>/hook/`, one per key, and are removed
//! once their ask has expired.

use std::io::Write;
use std::path::Path;

use ma2h_client::ClientError;
use serde_json::Value;

/// The stored envelope for `key` if it has not expired yet, else `build()`'s, stored.
pub fn envelope(
    dir: &Path,
    key: &str,
    build: impl FnOnce() -> Result<Value, ClientError>,
) -> Result<Value, ClientError> {
    let name: String = key.chars().map(|c| if c.is_ascii_alphanumeric() || c == '-' { c } else { '_' }).collect();
    let path = dir.join(format!("{name}.json"));
    let now = chrono::Utc::now();
    let live = |v: &Value| {
        v.get("expires_at")
            .and_then(Value::as_str)
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
            .is_some_and(|t| t > now)
    };
    if let Some(v) = std::fs::read(&path).ok().and_then(|b| serde_json::from_slice::<Value>(&b).ok())
        && live(&v)
        && v.get("idempotency_key").and_then(Value::as_str) == Some(key)
    {
        return Ok(v);
    }
    prune(dir, &live);
    let v = build()?;
    // best effort: without the file a replay is a new ask (a 409 at worst), never a wrong answer
    let _ = ma2h_private_fs::create_dir(dir)
        .and_then(|()| ma2h_private_fs::create_file(&path)?.write_all(v.to_string().as_bytes()));
    Ok(v)
}

/// Remove stored envelopes whose ask has expired.
fn prune(dir: &Path, live: &dyn Fn(&Value) -> bool) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for e in entries.flatten() {
        let keep = std::fs::read(e.path())
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
            .is_some_and(|v| live(&v));
        if !keep {
            let _ = std::fs::remove_file(e.path());
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_replay_gets_the_first_envelope_until_it_expires() {
        let dir = tempfile::tempdir().unwrap();
        let at = |secs: i64| (chrono::Utc::now() + chrono::Duration::seconds(secs)).to_rfc3339();
        let first = json!({"idempotency_key": "k1", "expires_at": at(60), "n": 1});
        assert_eq!(envelope(dir.path(), "k1", || Ok(first.clone())).unwrap(), first);
        let again = envelope(dir.path(), "k1", || Ok(json!({"idempotency_key": "k1", "expires_at": at(90), "n": 2})));
        assert_eq!(again.unwrap(), first, "the stored bytes are re-sent");
        let stale = json!({"idempotency_key": "k2", "expires_at": at(-5), "n": 3});
        envelope(dir.path(), "k2", || Ok(stale)).unwrap();
        let fresh = envelope(dir.path(), "k2", || Ok(json!({"idempotency_key": "k2", "expires_at": at(60), "n": 4})));
        assert_eq!(fresh.unwrap()["n"], 4, "an expired envelope is built anew");
    }
}

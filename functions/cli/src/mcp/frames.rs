//! JSON-RPC 2.0 framing in front of the MCP SDK's stdio transport. The SDK skips a line that is
//! not JSON, unanswered; JSON-RPC 2.0 (§5) answers `-32700 Parse error` — and `-32600 Invalid
//! Request` for an object that does not say `"jsonrpc": "2.0"` — with a null id when none can be
//! read (found by a black-box pass, session 19). This filter answers those lines itself and
//! passes every other line to the SDK unchanged; the SDK's output and these answers reach stdout
//! whole lines at a time, through one writer.
//!
//! A request nested deeper than the JSON parser's limit (128 levels, the SDK's too) is valid JSON
//! the SDK would drop unanswered; it gets `-32602 Invalid params` with its own id, read by a
//! shallow scan of the top level (issue 36).

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncRead, AsyncWrite, AsyncWriteExt, BufReader, DuplexStream};
use tokio::sync::mpsc;

/// What the filter answers for one input line itself, if anything.
fn refusal(line: &[u8]) -> Option<Value> {
    let Ok(text) = std::str::from_utf8(line) else { return Some(error(Value::Null, -32700, "Parse error")) };
    // The SDK strips a UTF-8 byte-order mark; so does this check.
    let text = text.trim_start_matches('\u{feff}').trim();
    if text.is_empty() {
        return None;
    }
    match serde_json::from_str::<Value>(text) {
        Err(e) if e.to_string().starts_with("recursion limit exceeded") => {
            Some(error(top_level_id(text), -32602, "Invalid params: nested deeper than 128 levels"))
        }
        Err(_) => Some(error(Value::Null, -32700, "Parse error")),
        Ok(Value::Object(o)) if o.get("jsonrpc") != Some(&json!("2.0")) => {
            let id = o.get("id").filter(|id| id.is_string() || id.is_number()).cloned().unwrap_or(Value::Null);
            Some(error(id, -32600, "Invalid Request: `jsonrpc` must be \"2.0\""))
        }
        Ok(_) => None,
    }
}

/// The `id` member of the top-level object (a string or a number), found without parsing what
/// is nested — the line is too deep to parse whole. `null` if there is none.
fn top_level_id(text: &str) -> Value {
    let b = text.as_bytes();
    let (mut depth, mut i) = (0usize, 0usize);
    while i < b.len() {
        match b[i] {
            b'"' => {
                // the string's end: past escapes, to the closing quote
                let mut j = i + 1;
                while j < b.len() && b[j] != b'"' {
                    j += if b[j] == b'\\' { 2 } else { 1 };
                }
                let key = text.get(i + 1..j.min(b.len()));
                i = j + 1;
                let rest = text.get(i..).unwrap_or_default().trim_start();
                if depth == 1 && key == Some("id") && rest.starts_with(':') {
                    let value = serde_json::Deserializer::from_str(&rest[1..]).into_iter::<Value>().next();
                    return match value {
                        Some(Ok(id)) if id.is_string() || id.is_number() => id,
                        _ => Value::Null,
                    };
                }
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    Value::Null
}

fn error(id: Value, code: i64, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}})
}

/// The SDK's side of the filtered streams, and the task that writes stdout (await it after the
/// service ends, so that its last answers are flushed).
pub struct Filtered {
    pub reader: DuplexStream,
    pub writer: DuplexStream,
    pub output: tokio::task::JoinHandle<()>,
}

/// Filter `input` for the SDK and merge its output with the filter's answers into `output`.
pub fn filter(
    input: impl AsyncRead + Send + Unpin + 'static,
    output: impl AsyncWrite + Send + Unpin + 'static,
) -> Filtered {
    const BUFFER: usize = 1 << 20;
    let (reader, mut feed) = tokio::io::duplex(BUFFER);
    let (writer, from_sdk) = tokio::io::duplex(BUFFER);
    let (lines, mut out) = mpsc::unbounded_channel::<Vec<u8>>();

    let answers = lines.clone();
    tokio::spawn(async move {
        let mut input = BufReader::new(input);
        let mut line = Vec::new();
        // EOF or a read error ends the input; dropping `feed` then ends the SDK's session.
        while matches!(input.read_until(b'\n', &mut line).await, Ok(n) if n > 0) {
            match refusal(&line) {
                Some(answer) => {
                    let _ = answers.send(format!("{answer}\n").into_bytes());
                }
                None if feed.write_all(&line).await.is_err() => break,
                None => {}
            }
            line.clear();
        }
    });
    tokio::spawn(async move {
        let mut from_sdk = BufReader::new(from_sdk);
        let mut line = Vec::new();
        while matches!(from_sdk.read_until(b'\n', &mut line).await, Ok(n) if n > 0) {
            if lines.send(std::mem::take(&mut line)).is_err() {
                break;
            }
        }
    });
    let output = tokio::spawn(async move {
        let mut output = output;
        while let Some(line) = out.recv().await {
            if output.write_all(&line).await.is_err() || output.flush().await.is_err() {
                break;
            }
        }
    });
    Filtered { reader, writer, output }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_that_are_no_json_rpc_are_answered_and_the_rest_pass() {
        assert_eq!(refusal(b"hello\n").unwrap()["error"]["code"], -32700);
        assert_eq!(refusal(b"{\"jsonrpc\":\"2.0\",\"id\":1\n").unwrap()["id"], Value::Null, "truncated");
        assert_eq!(refusal(&[0xff, b'\n']).unwrap()["error"]["code"], -32700, "not UTF-8");
        let no_version = refusal(b"{\"id\":7,\"method\":\"tools/list\"}\n").unwrap();
        assert_eq!((no_version["id"].clone(), no_version["error"]["code"].clone()), (json!(7), json!(-32600)));
        assert_eq!(refusal(b"{\"id\":{},\"method\":\"x\"}").unwrap()["id"], Value::Null, "an id that cannot be one");
        for fine in [
            &b"{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n"[..],
            b"\xef\xbb\xbf{\"jsonrpc\":\"2.0\"}",
            b"\n",
            b"[]",
        ] {
            assert_eq!(refusal(fine), None, "{}", String::from_utf8_lossy(fine));
        }
    }

    #[test]
    fn a_request_nested_too_deep_gets_invalid_params_with_its_own_id() {
        let deep = |id: &str| {
            format!(
                r#"{{"jsonrpc":"2.0","method":"tools/call","params":{{"name":"x","arguments":{}{}}},"id":{id}}}"#,
                "[".repeat(200),
                "]".repeat(200)
            )
        };
        let answer = refusal(deep("42").as_bytes()).unwrap();
        assert_eq!((answer["id"].clone(), answer["error"]["code"].clone()), (json!(42), json!(-32602)));
        let answer = refusal(deep(r#""req-\"7\"""#).as_bytes()).unwrap();
        assert_eq!(answer["id"], json!("req-\"7\""));
        // an `id` key nested inside the params is not the request's
        let nested = format!(r#"{{"jsonrpc":"2.0","params":{{"id":5,"a":{}{}}}}}"#, "[".repeat(200), "]".repeat(200));
        assert_eq!(refusal(nested.as_bytes()).unwrap()["id"], Value::Null);
        // 100 levels is fine: the SDK gets it
        let ok = format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"x","params":{{"a":{}{}}}}}"#,
            "[".repeat(100),
            "]".repeat(100)
        );
        assert_eq!(refusal(ok.as_bytes()), None);
    }

    #[tokio::test]
    async fn answers_and_passed_lines_reach_their_sides_whole() {
        let input = &b"garbage\n{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n"[..];
        let (sink, mut seen) = tokio::io::duplex(4096);
        let mut f = filter(input, sink);
        let mut passed = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut f.reader, &mut passed).await.unwrap();
        assert_eq!(passed, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\"}\n");
        f.writer.write_all(b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n").await.unwrap();
        drop(f.writer);
        f.output.await.unwrap();
        let mut written = String::new();
        tokio::io::AsyncReadExt::read_to_string(&mut seen, &mut written).await.unwrap();
        let lines: Vec<Value> = written.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
        assert_eq!(lines.len(), 2, "{written}");
        assert!(lines.iter().any(|l| l["error"]["code"] == -32700));
        assert!(lines.iter().any(|l| l["result"] == json!({})));
    }
}

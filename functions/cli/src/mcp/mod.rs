//! `ma2h mcp`: an MCP server over stdio (the official `rmcp` SDK) that lets any coding agent ask
//! a human through the Hub and resume later — without holding a tool call open for minutes.
//!
//! The two-tool pattern: `ask_human` files the ask and returns at once with its id;
//! `wait_for_answer` long-polls (§8.2) for at most 50 s per call — well inside every client's
//! tool timeout — sending progress notifications while it waits, and returns the §6 outcome or
//! "still open: call again". Configuration is the CLI's `MA2H_*` environment. Tool failures are
//! tool results with `isError` and the Hub's §8.5 `{code, message}`; nothing secret (API key,
//! signing secret, state key, `state`) ever appears in a result or on stderr.

mod frames;
mod ledger;
mod outcome;
mod params;
mod tools;

use anyhow::Result;
use ma2h_client::{Client, ClientError, Config, ReplayCache};
use rmcp::ServiceExt;
use serde_json::{Value, json};

pub use tools::HubTools;

/// Serve MCP on stdin/stdout until the client closes the stream.
pub async fn serve(config: Config) -> Result<u8> {
    let tools = HubTools::new(config, ReplayCache::default_dir());
    if let Some(problem) = tools.config_problem() {
        // stderr is the client's log; the tools report the same to the model on every call.
        eprintln!("ma2h mcp: {problem}");
    }
    // JSON-RPC framing errors are answered in front of the SDK (`frames`).
    let stdio = frames::filter(tokio::io::stdin(), tokio::io::stdout());
    let running = tools.serve((stdio.reader, stdio.writer)).await?;
    running.waiting().await?;
    // The SDK has dropped its writer: the last answers are flushed once the writer task ends.
    let _ = tokio::time::timeout(std::time::Duration::from_secs(5), stdio.output).await;
    Ok(crate::exit::OK)
}

/// A tool failure as the structured body the model reads: the §8.5 code and message for a Hub
/// error, a local code otherwise. Never carries a credential (ClientError's texts hold none).
pub fn error_body(e: &ClientError) -> Value {
    let (code, message, status) = match e {
        // the hint names what to fix (a key, a resolver); a validation message already does
        ClientError::Hub(h) if h.code == "validation_error" => (h.code.clone(), h.message.clone(), Some(h.status)),
        ClientError::Hub(h) => (h.code.clone(), format!("{} ({})", h.message, h.hint()), Some(h.status)),
        ClientError::Config(m) => ("configuration_error".to_owned(), m.clone(), None),
        ClientError::Unreachable { url, reason } => {
            let url = without_userinfo(url);
            ("hub_unreachable".to_owned(), format!("the Hub at {url} could not be reached: {reason}"), None)
        }
        ClientError::Protocol(m) => ("unexpected_response".to_owned(), m.clone(), None),
    };
    let mut v = json!({"error": {"code": code, "message": message}});
    if let Some(s) = status {
        v["error"]["http_status"] = s.into();
    }
    v
}

/// A URL without `user:password@` (a Hub URL may carry basic-auth credentials for a proxy).
fn without_userinfo(url: &str) -> String {
    match url.split_once("://") {
        Some((scheme, rest)) => {
            let end = rest.find('/').unwrap_or(rest.len());
            match rest[..end].rfind('@') {
                Some(at) => format!("{scheme}://{}", &rest[at + 1..]),
                None => url.to_owned(),
            }
        }
        None => url.to_owned(),
    }
}

/// The Hub client for `config`, or the configuration error the tools report. A tool call must
/// end well inside a client's tool timeout (60–300 s) even against a Hub that accepts and never
/// answers: 10 s per exchange, a submit retried for at most ~20 s (a black-box pass saw 195 s).
fn client(config: &Config) -> Result<Client, ClientError> {
    config.api_key()?;
    config.agent_id()?;
    let mut client = Client::from_config(config)?;
    client.request_timeout = std::time::Duration::from_secs(10);
    client.retry = ma2h_client::RetryPolicy {
        max_attempts: 3,
        base_delay: std::time::Duration::from_millis(500),
        max_delay: std::time::Duration::from_secs(2),
        max_total: std::time::Duration::from_secs(20),
    };
    Ok(client)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_unreachable_hub_is_named_without_its_credentials() {
        let e = ClientError::Unreachable { url: "https://u:pw@hub.example/base".into(), reason: "refused".into() };
        let body = error_body(&e).to_string();
        assert!(body.contains("https://hub.example/base") && !body.contains("pw"), "{body}");
        assert_eq!(without_userinfo("http://127.0.0.1:8080"), "http://127.0.0.1:8080");
    }
}

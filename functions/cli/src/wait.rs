//! `--wait`: re-issue §8.2 long-polls until the message is terminal, with a live spinner
//! (elapsed time + status) on a TTY and plain progress lines otherwise; then print the outcome
//! and pick the exit code.

use std::io::{IsTerminal, Write};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::Result;
use ma2h_client::{Client, MessageRead};
use serde_json::Value;

use crate::exit;

const FRAMES: [&str; 10] = ["⠋", "⠙", "⠹", "⠸", "⠼", "⠴", "⠦", "⠧", "⠇", "⠏"];

/// `limit` 0 = until terminal.
pub async fn wait(client: &Client, id: &str, limit_secs: u64) -> Result<Value> {
    let limit = (limit_secs > 0).then(|| Duration::from_secs(limit_secs));
    let started = Instant::now();
    let status = Arc::new(Mutex::new("open".to_owned()));
    let tty = std::io::stderr().is_terminal();
    let spinner = tty.then(|| {
        let (status, id) = (status.clone(), id.to_owned());
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(Duration::from_millis(100));
            for frame in FRAMES.iter().cycle() {
                tick.tick().await;
                let s = status.lock().expect("status lock").clone();
                eprint!("\r\x1b[2K{frame} {id} · {s} · {}s", started.elapsed().as_secs());
                let _ = std::io::stderr().flush();
            }
        })
    });
    if !tty {
        eprintln!("waiting for {id} (status open)");
    }
    let result = client
        .wait_terminal(id, limit, |body| {
            let s = exit::resolution_of(body).to_owned();
            if !tty {
                eprintln!("{id}: {s} after {}s", started.elapsed().as_secs());
            }
            *status.lock().expect("status lock") = s;
        })
        .await;
    if let Some(handle) = spinner {
        handle.abort();
        eprint!("\r\x1b[2K");
    }
    result.map_err(exit::client)
}

/// Print a GET body (or cancel result) and return its exit code.
pub fn report(body: &Value, json: bool) -> u8 {
    let read = MessageRead::from_json(body);
    let resolution = read.resolution();
    if let Some(note) = push_trouble(&read) {
        eprintln!("{note}"); // stderr: a diagnostic for the person, also beside --json
    }
    if json {
        println!("{body}");
    } else {
        let id = read.id.as_deref().unwrap_or_default();
        let r = read.response.as_ref().and_then(|r| r.response.as_ref());
        let mut line = format!("{id} {resolution}");
        // an explicit `null` value prints as one; an absent value not at all
        if let Some(v) = r.and_then(|r| r.value.as_ref()) {
            line.push_str(&format!(" value={v}"));
        }
        if let Some(a) = r.map(|r| r.actor.as_str()) {
            line.push_str(&format!(" actor={a}"));
        }
        if let Some(c) = r.and_then(|r| r.comment.as_deref()) {
            line.push_str(&format!(" comment={}", Value::String(c.to_owned())));
        }
        // §8.2: an addressed message's outbound track — did the addressee see it?
        if let Some(m) = &read.mailbox {
            line.push_str(&format!(" mailbox={}", m.state.as_str()));
            if let Some(p) = m.prior {
                line.push_str(&format!(" prior={}", p.as_str()));
            }
        }
        println!("{line}");
    }
    exit::for_resolution(resolution)
}

/// The Hub's push track, when the push failed for good: the Response is still here to pull, but
/// the callback never got it.
pub fn push_trouble(read: &MessageRead) -> Option<String> {
    // The Hub reports only a push that failed for good (§8.2: a terminal body does not change).
    let push = read.failed_push()?;
    let (attempts, error) = (push.attempts, push.last_error.as_deref().unwrap_or_default());
    Some(format!("push failed after {attempts} attempt(s): {error} — the Response is still available here (pull)"))
}

#[cfg(test)]
mod push_tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_failed_push_is_explained_and_nothing_else_is() {
        let failed = json!({"push": {"status": "failed", "attempts": 5, "last_error": "receiver answered 500"}});
        assert!(
            push_trouble(&MessageRead::from_json(&failed))
                .unwrap()
                .contains("push failed after 5 attempt(s): receiver answered 500")
        );
        assert_eq!(
            push_trouble(&MessageRead::from_json(
                &json!({"push": {"status": "delivered", "attempts": 1, "last_error": null}})
            )),
            None
        );
        assert_eq!(
            push_trouble(&MessageRead::from_json(
                &json!({"push": {"status": "pending", "attempts": 0, "last_error": null}})
            )),
            None
        );
        assert_eq!(push_trouble(&MessageRead::from_json(&json!({"status": "open"}))), None);
    }
}

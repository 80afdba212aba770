//! `ma2h send|ask --to`, `ma2h inbox --session --accept-from`, `ma2h resolve` and `ma2h get`
//! end to end against an in-process Hub: two agents exchange an ask, and the sender sees the
//! whole track (§4 `to`, §8.1 destination, §8.7.1 message entries, §8.8, §8.2 `mailbox`).

mod support;

use serde_json::json;
use support::*;

fn session(out: std::process::Output) -> String {
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    stdout(&out)
}

#[test]
fn two_agents_exchange_an_ask_and_the_sender_sees_the_whole_track() {
    let hub = TestHub::start();
    let off = hub.run(&["send", "--to", "agent:worker", "hello"]);
    assert_eq!(code(&off), 4, "not opted in: a hub error ({})", stderr(&off));
    let (status, _) =
        http(&hub.addr, "PATCH", "/v1/operator/inter-agent", &hub.op_key, Some(&json!({"enabled": true})));
    assert_eq!(status, 200);

    let ws = session(hub.worker(&["session", "start", "--label", "worker"]));
    let bs = session(hub.run(&["session", "start", "--label", "asker"]));
    let to = format!("agent:worker#{ws}");
    let out =
        hub.run(&["ask", "Restart the consumer?", "--option", "yes", "--option", "no", "--to", &to, "--session", &bs]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let id = stdout(&out);
    assert!(stderr(&out).contains("destination: unknown"), "{}", stderr(&out));

    // No sender policy: an addressed ask is refused (exit 5), never acked.
    let refused = hub.worker(&["inbox", "--session", &ws]);
    assert_eq!(code(&refused), 5, "{}", stderr(&refused));
    assert!(stderr(&refused).contains("not in the sender policy"), "{}", stderr(&refused));
    std::thread::sleep(std::time::Duration::from_millis(100));

    let (_, read) = http(&hub.addr, "GET", &format!("/v1/messages/{id}"), &hub.agent_key, None);
    assert_eq!(read["mailbox"]["state"], "delivered", "the refused drain still saw it");

    let out = hub.worker(&["resolve", &id, "--answer", "yes", "--comment", "done", "--session", &ws]);
    assert_eq!((code(&out), stdout(&out).contains("answered")), (0, true), "{}", stderr(&out));
    let out = hub.worker(&["ack", &id, "--session", &ws]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));

    let out = hub.run(&["get", &id]);
    let line = stdout(&out);
    assert_eq!(code(&out), 0, "{line}");
    assert!(line.contains(&format!("answered value=\"yes\" actor=agent:worker#{ws}")), "{line}");
    assert!(line.ends_with("mailbox=acknowledged"), "{line}");
    let back = hub.run(&["inbox", "--session", &bs, "--ack"]);
    assert_eq!(code(&back), 0, "{}", stderr(&back));
    assert!(stdout(&back).contains(&format!("{id} (new) response answered")), "{}", stdout(&back));

    // A notify by `send`: queued until the worker drains it (with a policy naming the sender).
    let sent = hub.run(&["send", "--to", "agent:worker", "deploy finished", "--body", "all green"]);
    assert_eq!(code(&sent), 0, "{}", stderr(&sent));
    let n = stdout(&sent);
    assert_eq!(code(&hub.run(&["get", &n])), 13, "queued reads as still open");
    let out = hub.worker(&["inbox", "--session", &ws, "--accept-from", "bot", "--ack"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert!(stdout(&out).contains(&format!("{n} (new) notify from agent:bot: deploy finished")), "{}", stdout(&out));
    let out = hub.run(&["get", &n]);
    assert_eq!((code(&out), stdout(&out).ends_with("mailbox=acknowledged")), (0, true), "{}", stdout(&out));
    let bad = hub.run(&["send", "--to", "human:alice", "x"]);
    assert_eq!(code(&bad), 2, "{}", stderr(&bad));
}

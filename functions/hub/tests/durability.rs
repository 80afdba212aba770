//! §3.1 durability: `kill -9` the real binary while it is accepting and resolving, restart it on
//! the same data directory, and check that nothing it acknowledged was lost.

mod support;

use std::time::Duration;

use serde_json::json;
use support::*;

#[test]
fn a_kill_9_loses_no_accepted_message_or_committed_resolution() {
    let dir = tempfile::tempdir().unwrap();
    let agent = admin_json(dir.path(), &["create-agent", "--account", "acme", "--agent", "bot"]);
    let operator = admin_json(dir.path(), &["create-operator", "--account", "acme", "--human", "alice"]);
    let agent_key = agent["api_key"].as_str().unwrap().to_owned();
    let op_key = operator["api_key"].as_str().unwrap().to_owned();

    let mut hub = Hub::start(dir.path());
    let notify_id = submit(&hub, &agent_key, &notify_envelope()).1["id"].as_str().unwrap().to_owned();
    let answered = submit(&hub, &agent_key, &ask_envelope("answered")).1["id"].as_str().unwrap().to_owned();
    let (status, body) = post(
        &hub,
        &format!("/v1/messages/{answered}/resolve"),
        &op_key,
        &json!({"resolution": "answered", "value": "ship"}),
    );
    assert_eq!(status, 200, "{body}");
    let resolution_id = body["resolution_id"].clone();

    // Keep submitting from another thread and kill -9 mid-stream.
    let addr = hub.addr.clone();
    let key = agent_key.clone();
    let writer = std::thread::spawn(move || {
        let mut acked = Vec::new();
        for i in 0..10_000 {
            match try_request(&addr, "POST", "/v1/messages", Some(&key), Some(&ask_envelope(&format!("load-{i}")))) {
                Some((202, body)) => acked.push(body["id"].as_str().unwrap().to_owned()),
                Some((status, body)) => panic!("unexpected {status}: {body}"),
                None => break, // the hub died under us
            }
        }
        acked
    });
    std::thread::sleep(Duration::from_millis(700));
    hub.kill9();
    let acked = writer.join().unwrap();
    assert!(acked.len() > 5, "the load ran before the kill ({} acked)", acked.len());

    let hub = Hub::start(dir.path());
    let (s, n) = get(&hub, &format!("/v1/messages/{notify_id}"), &agent_key);
    assert_eq!((s, n["status"].as_str()), (200, Some("delivered")));
    let (s, a) = get(&hub, &format!("/v1/messages/{answered}"), &agent_key);
    assert_eq!((s, a["status"].as_str()), (200, Some("answered")));
    assert_eq!(a["response"]["resolution_id"], resolution_id);
    for id in &acked {
        let (s, m) = get(&hub, &format!("/v1/messages/{id}"), &agent_key);
        assert_eq!((s, m["status"].as_str()), (200, Some("open")), "acked {id} was lost");
    }
    // the old credentials still work and the idempotency claims survived too
    let (s, replay) = submit(&hub, &agent_key, &ask_envelope("answered"));
    assert_eq!((s, replay["id"].as_str()), (202, Some(answered.as_str())));
}

//! `ma2h inbox` / `ma2h ack` end to end against an in-process Hub: verified directives, the
//! redelivery dedup, acks, and the exit codes (0 verified, 5 rejected, 6 not all acked, 14 empty).

mod support;

use serde_json::json;
use support::*;

fn send(hub: &TestHub, title: &str) -> String {
    let (status, body) = http(
        &hub.addr,
        "POST",
        "/v1/operator/directives",
        &hub.op_key,
        Some(&json!({"to": "agent:bot", "title": title, "body": "line one\nline two", "priority": "urgent"})),
    );
    assert_eq!(status, 201, "{body}");
    body["id"].as_str().unwrap().to_owned()
}

#[test]
fn inbox_prints_verified_directives_and_ack_consumes_them() {
    let hub = TestHub::start();
    assert_eq!(code(&hub.run(&["inbox"])), 14, "empty mailbox");
    let id = send(&hub, "Pause deploys");
    let out = hub.run(&["inbox"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    assert!(text.contains(&id) && text.contains("(new) from human:alice [urgent]: Pause deploys"), "{text}");
    assert!(text.contains("    line two"), "{text}");
    let out = hub.run(&["ack", &id, "--note", "paused"]);
    assert_eq!((code(&out), stdout(&out)), (0, "acknowledged 1 of 1".to_owned()), "{}", stderr(&out));
    assert_eq!(code(&hub.run(&["ack", &id])), 6, "already acknowledged");
    let (_, track) = http(&hub.addr, "GET", &format!("/v1/operator/directives/{id}"), &hub.op_key, None);
    assert_eq!(
        (track["delivery"]["state"].as_str(), track["delivery"]["ack"]["note"].as_str()),
        (Some("acknowledged"), Some("paused"))
    );
    assert_eq!(code(&hub.run(&["ack", "ticket_x"])), 2, "only ack keys (dir_/msg_/res_/rcpt_)");
}

#[test]
fn inbox_wait_and_ack_in_one_call_and_json_lines() {
    let hub = TestHub::start();
    let id = send(&hub, "Rotate keys");
    let out = hub.run(&["inbox", "--wait", "2", "--ack", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let line = json_out(&out);
    assert_eq!((line["verdict"].as_str(), line["directive"]["id"].as_str()), (Some("new"), Some(id.as_str())));
    assert!(stderr(&out).contains("acknowledged 1 of 1"), "{}", stderr(&out));
    assert_eq!(code(&hub.run(&["inbox", "--wait", "1"])), 14, "acked: never delivered again");
}

#[test]
fn a_wrong_signing_secret_rejects_every_entry_with_exit_5_and_acks_nothing() {
    let hub = TestHub::start();
    let id = send(&hub, "Trust me");
    let out = hub.ma2h(&["inbox", "--ack"]).env("MA2H_SIGNING_SECRET", "whsec_wrong").output().unwrap();
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert!(stderr(&out).contains(&format!("rejected {id}: signature mismatch")), "{}", stderr(&out));
    let (_, track) = http(&hub.addr, "GET", &format!("/v1/operator/directives/{id}"), &hub.op_key, None);
    assert_eq!(track["delivery"]["state"], "delivered", "a rejected entry is never acked");
}

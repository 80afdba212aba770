//! `ma2h session start|list|show|close`, `ma2h inbox --session` and `ask --session` end to end
//! against an in-process Hub (§16): registration and listing, a session-bound ask answered into
//! the session's inbox as a verified response entry (§8.7.1, §9.8), the ended-session exit (15),
//! the operator's kill-switch and hard stop (16, §16.4.1) — and the library's `SessionLease`
//! re-registering through a self-close but never through a stop.

mod support;

use ma2h_client::builder::AgentRef;
use ma2h_client::{
    Client, DrainVerdict, EntryVerifier, MessageBuilder, RegisterSession, SessionError, SessionLease, VerifiedEntry,
    verify,
};
use ma2h_protocol::envelope::Mode;
use serde_json::{Value, json};
use support::*;

/// `ma2h session start` → the new id.
fn start(hub: &TestHub, args: &[&str]) -> String {
    let mut all = vec!["session", "start"];
    all.extend_from_slice(args);
    let out = hub.run(&all);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let id = stdout(&out);
    assert!(id.starts_with("sess_"), "{id}");
    id
}

fn directive(hub: &TestHub, to: &str, title: &str) -> String {
    let (status, body) =
        http(&hub.addr, "POST", "/v1/operator/directives", &hub.op_key, Some(&json!({"to": to, "title": title})));
    assert_eq!(status, 201, "{body}");
    body["id"].as_str().unwrap().to_owned()
}

/// The message's §14.2 response track, as its submitter reads it.
fn delivery_state(hub: &TestHub, id: &str) -> String {
    let (_, body) = http(&hub.addr, "GET", &format!("/v1/messages/{id}"), &hub.agent_key, None);
    body["delivery"]["state"].as_str().unwrap_or_default().to_owned()
}

#[test]
fn sessions_are_started_listed_shown_and_closed_and_an_ended_one_exits_15() {
    let hub = TestHub::start();
    let a = start(&hub, &["--label", "dev · #612", "--kind", "worker", "--project", "web", "--ttl", "120"]);
    let out = hub.run(&["session", "start", "--label-kv", "repo=acme/web", "--label-kv", "lane=2", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let b = json_out(&out)["session"].clone();
    assert_eq!((b["state"].as_str(), b["agent_id"].as_str()), (Some("active"), Some("bot")));
    assert_eq!(b["labels"], json!({"lane": "2", "repo": "acme/web"}));
    let b = b["id"].as_str().unwrap().to_owned();

    let out = hub.run(&["session", "list"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let line_a = text.lines().find(|l| l.starts_with(&a)).unwrap_or_else(|| panic!("{text}"));
    assert!(
        line_a.contains(" active expires ")
            && line_a.contains(r#"label="dev · #612" kind="worker" project="web""#)
            && line_a.contains("last_seen="),
        "{line_a}"
    );
    assert!(text.contains(&b), "{text}");
    assert!(stderr(&out).contains("2 session(s); scope: own"), "{}", stderr(&out));
    let listed = json_out(&hub.run(&["session", "list", "--json"]));
    assert_eq!((listed["sessions"].as_array().unwrap().len(), listed["scope"].as_str()), (2, Some("own")));
    let shown = json_out(&hub.run(&["session", "show", &a, "--json"]));
    assert_eq!(shown["session"]["ttl_seconds"], 120);
    assert_eq!(code(&hub.run(&["session", "show", &a])), 0, "active");

    // The owner closes it: 410 `gone` on its touchpoints → exit 15 ("start a new one").
    let out = hub.run(&["session", "close", &a]);
    assert_eq!((code(&out), stdout(&out)), (0, format!("{a} closed")), "{}", stderr(&out));
    assert_eq!(code(&hub.run(&["session", "close", &a])), 0, "idempotent");
    assert_eq!(code(&hub.run(&["session", "show", &a])), 15);
    let out = hub.run(&["inbox", "--session", &a]);
    assert_eq!(code(&out), 15, "{}", stderr(&out));
    assert!(stderr(&out).contains("register a new session and continue"), "{}", stderr(&out));
    let out = hub.run(&["ask", "Ship?", "--option", "ship", "--option", "hold", "--session", &a]);
    assert_eq!(code(&out), 15, "submit naming an ended session: {}", stderr(&out));
    // Unknown (never ours, or purged) reads the same way; a malformed id is a usage error.
    assert_eq!(code(&hub.run(&["inbox", "--session", "sess_01JZZZZZZZZZZZZZZZZZZZZZZZ"])), 15);
    assert_eq!(code(&hub.run(&["session", "close", "msg_01"])), 2);
    assert_eq!(code(&hub.run(&["inbox", "--session", "nope"])), 2);
    // The other session is untouched: an empty session drain exits 14.
    assert_eq!(code(&hub.run(&["inbox", "--session", &b])), 14);
}

#[test]
fn a_session_bound_ask_is_answered_into_the_session_inbox_as_a_verified_response_entry() {
    let hub = TestHub::start();
    let s = start(&hub, &["--label", "worker"]);
    let out = hub.run(&["ask", "Ship build 412?", "--option", "ship", "--option", "hold", "--session", &s]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let m = stdout(&out);
    assert_eq!(code(&hub.run(&["inbox", "--session", &s])), 14, "nothing yet");
    assert_eq!(hub.resolve(&m, answered("ship")).0, 200);
    let d = directive(&hub, "agent:bot", "Also rotate the keys");

    // A session-less drain keeps the v0.4 shape: only the directive.
    let out = hub.run(&["inbox", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(json_out(&out)["directive"]["id"], d.as_str());

    // The session drain delivers the answer, verified over the §9.8 context for this session,
    // and the directives addressed to this session.
    let s2 = start(&hub, &[]);
    let only_s = directive(&hub, &format!("agent:bot#{s}"), "Only for this session");
    let m2 = stdout(&hub.run(&["ask", "Drop it?", "--option", "yes", "--option", "no", "--session", &s2]));
    let out = hub.run(&["inbox", "--session", &s]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let text = stdout(&out);
    let line = text.lines().find(|l| l.starts_with(&m)).unwrap_or_else(|| panic!("{text}"));
    assert!(
        line.contains(r#"(new) response answered value="ship" actor=human:alice comment="LGTM" ack=res_"#),
        "{line}"
    );
    let res = line.rsplit("ack=").next().unwrap().to_owned();
    assert!(text.contains(&format!("{only_s} (new) from human:alice: Only for this session")), "{text}");
    assert_eq!(delivery_state(&hub, &m), "delivered-to-agent", "the drain is delivery evidence");

    // `ma2h ack` takes the response's ack key (its resolution id) and renews the session.
    let out = hub.run(&["ack", &res, &only_s, "--session", &s]);
    assert_eq!((code(&out), stdout(&out)), (0, "acknowledged 2 of 2".to_owned()), "{}", stderr(&out));
    assert_eq!(delivery_state(&hub, &m), "acknowledged");
    assert_eq!(code(&hub.run(&["inbox", "--session", &s, "--wait", "1"])), 14, "acked: gone from the mailbox");

    // Another session's answer never reaches this one; MA2H_SESSION stands in for --session, and
    // --ack acknowledges what verified.
    assert_eq!(hub.resolve(&m2, json!({"resolution": "declined"})).0, 200);
    let out = hub.ma2h(&["inbox", "--ack", "--json"]).env("MA2H_SESSION", &s2).output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let line = json_out(&out);
    assert_eq!(
        (line["verdict"].as_str(), line["response"]["in_reply_to"].as_str(), line["response"]["resolution"].as_str()),
        (Some("new"), Some(m2.as_str()), Some("declined"))
    );
    assert!(stderr(&out).contains("acknowledged 1 of 1"), "{}", stderr(&out));
    assert_eq!(delivery_state(&hub, &m2), "acknowledged");
    assert_eq!(code(&hub.run(&["inbox", "--session", &s])), 14);
}

#[test]
fn a_response_entry_signed_with_another_key_is_rejected_with_exit_5_and_not_acked() {
    let hub = TestHub::start();
    let s = start(&hub, &[]);
    let m = stdout(&hub.run(&["ask", "Ship?", "--option", "ship", "--option", "hold", "--session", &s]));
    assert_eq!(hub.resolve(&m, answered("ship")).0, 200);
    let out =
        hub.ma2h(&["inbox", "--session", &s, "--ack"]).env("MA2H_SIGNING_SECRET", "whsec_wrong").output().unwrap();
    assert_eq!(code(&out), 5, "{}", stderr(&out));
    assert!(stderr(&out).contains("rejected response res_") && stderr(&out).contains("signature mismatch"));
    assert_eq!(delivery_state(&hub, &m), "delivered-to-agent", "a rejected entry is never acked");
}

#[test]
fn the_operator_kill_switch_stops_the_agent_with_exit_16_until_a_human_lifts_it() {
    let hub = TestHub::start();
    let s = start(&hub, &[]);
    let (status, body) = http(&hub.addr, "DELETE", &format!("/v1/sessions/{s}"), &hub.op_key, None);
    assert_eq!((status, body["session"]["closed_by_operator"].as_bool()), (200, Some(true)), "{body}");

    // Every touchpoint of the killed session, and a new registration, say "stop" (16).
    let out = hub.run(&["inbox", "--session", &s]);
    assert_eq!(code(&out), 16, "{}", stderr(&out));
    assert!(stderr(&out).contains("stopped by the operator"), "{}", stderr(&out));
    assert!(stderr(&out).contains("do not retry or re-register"), "{}", stderr(&out));
    assert_eq!(code(&hub.run(&["ask", "Ship?", "--option", "a", "--option", "b", "--session", &s])), 16);
    assert_eq!(code(&hub.run(&["ack", "res_01JX", "--session", &s])), 16);
    assert_eq!(code(&hub.run(&["session", "show", &s])), 16);
    let out = hub.run(&["session", "start", "--label", "again"]);
    assert_eq!(code(&out), 16, "the hard stop gates registration: {}", stderr(&out));
    assert!(stdout(&out).is_empty());

    // Reads and the owner's idempotent close still work, and say what happened.
    let out = hub.run(&["session", "list"]);
    assert_eq!(code(&out), 0);
    assert!(stdout(&out).contains(&format!("{s} closed (by the operator) at ")), "{}", stdout(&out));
    let out = hub.run(&["session", "close", &s]);
    assert_eq!(code(&out), 0);
    assert!(stderr(&out).contains("closed by the operator"), "{}", stderr(&out));

    // Only the account's human lifts the stop; then registration works again.
    let (status, _) = http(&hub.addr, "DELETE", "/v1/agents/bot/stop", &hub.op_key, None);
    assert_eq!(status, 200);
    start(&hub, &[]);
}

#[test]
fn over_the_live_session_cap_start_is_a_hub_error_with_the_retry_delay() {
    let hub = TestHub::start();
    for _ in 0..16 {
        let (status, body) = http(&hub.addr, "POST", "/v1/sessions", &hub.agent_key, Some(&json!({})));
        assert_eq!(status, 201, "{body}");
    }
    let out = hub.run(&["session", "start"]);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    assert!(stderr(&out).contains("retry after 60s"), "{}", stderr(&out));
}

fn ask(title: &str) -> Value {
    MessageBuilder::ask(title, Mode::Select)
        .option("ship", "Ship", None)
        .option("hold", "Hold", None)
        .allowed_resolver("human:alice")
        .build(&AgentRef::new("bot", Some("run_lease".into()), "cli"))
        .unwrap()
}

#[tokio::test]
async fn a_session_lease_is_renewed_by_use_re_registers_after_an_end_and_latches_an_operator_stop() {
    let hub = TestHub::start();
    let client = Client::new(&hub.url, &hub.agent_key).unwrap();
    let request = RegisterSession { label: Some("lease".into()), ..Default::default() };
    let lease = SessionLease::register(client.clone(), request).await.unwrap();
    let first = lease.id();
    assert_eq!(lease.address(), format!("agent:bot#{first}"));

    // A submit through the lease names the session; the answer comes back on its drain.
    let ack = lease.submit(ask("Ship?")).await.unwrap();
    assert_eq!(hub.resolve(&ack.id, answered("ship")).0, 200);
    let drained = lease.drain(None, Some(2)).await.unwrap();
    assert_eq!((drained.session.as_str(), drained.entries.len()), (first.as_str(), 1));
    let dir = hub.state_dir();
    let cache = ma2h_client::ReplayCache::open(&dir).unwrap();
    let verifier = EntryVerifier::new("bot", vec![verify::hmac_key(&hub.signing_secret)], Some(cache));
    let verdict = verifier.verify_drained(&drained.entries[0], Some(&drained.session), ma2h_client::now_unix());
    let Ok(DrainVerdict::Accepted(VerifiedEntry::Response(r))) = verdict else { panic!("{verdict:?}") };
    assert_eq!((r.in_reply_to.as_str(), r.resolution.as_str()), (ack.id.as_str(), "answered"));
    assert_eq!(lease.ack(std::slice::from_ref(&r.resolution_id), None).await.unwrap(), 1);

    // Self-closed behind the lease's back: the next drain re-registers and carries on.
    client.close_session(&first).await.unwrap();
    let drained = lease.drain(None, None).await.unwrap();
    assert_ne!(drained.session, first);
    assert_eq!((lease.id(), lease.previous_ids()), (drained.session.clone(), vec![first.clone()]));
    // …and so does a submit (410 destination_gone, confirmed by reading the session).
    let second = lease.id();
    client.close_session(&second).await.unwrap();
    lease.submit(ask("Again?")).await.unwrap();
    assert_eq!(lease.previous_ids(), vec![first.clone(), second.clone()]);
    let third = lease.id();
    assert!(client.get_session(&third).await.unwrap().is_active());

    // The operator's kill-switch: typed, latched, never re-registered through.
    let (status, _) = http(&hub.addr, "DELETE", &format!("/v1/sessions/{third}"), &hub.op_key, None);
    assert_eq!(status, 200);
    let before = client.list_sessions().await.unwrap().sessions.len();
    let e = lease.drain(None, None).await.unwrap_err();
    assert!(matches!(&e, SessionError::StoppedByOperator { error, .. } if error.status == 410), "{e:?}");
    assert!(lease.submit(ask("Still there?")).await.unwrap_err().is_stopped_by_operator());
    assert_eq!(lease.id(), third, "no new session");
    assert_eq!(client.list_sessions().await.unwrap().sessions.len(), before);
    let e = client.register_session(&RegisterSession::default()).await.unwrap_err();
    assert!(matches!(&e, SessionError::StoppedByOperator { error, .. } if error.status == 403), "{e:?}");
}

//! `ma2h notify|ask|task|get|cancel` end to end against an in-process Hub: one exit code per
//! outcome (§7), long-poll waits (§8.2), cancel races (§8.4), and clear config/transport/Hub errors.

mod support;

use std::process::Stdio;

use serde_json::json;
use support::*;

#[test]
fn ask_prints_an_id_and_get_wait_exits_0_with_the_answer() {
    let hub = TestHub::start();
    let out =
        hub.run(&["ask", "Ship build 412?", "--option", "ship=Ship now", "--option", "hold=Hold", "--tag", "deploy"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let id = stdout(&out);
    assert!(id.starts_with("msg_"), "{id}");
    // issue 39: where to answer it, on stderr (stdout stays the id alone)
    assert!(stderr(&out).contains("review: ") && stderr(&out).contains(&format!("/inbox/{id}")), "{}", stderr(&out));
    // still open: exit 13
    assert_eq!(code(&hub.run(&["get", &id])), 13);
    let waiter = hub.ma2h(&["get", &id, "--wait", "30", "--json"]).stdout(Stdio::piped()).spawn().unwrap();
    std::thread::sleep(std::time::Duration::from_millis(600));
    // MA2H_RESOLVERS=human:alice made the ask answerable without a --resolver flag
    assert_eq!(hub.resolve(&id, answered("ship")).0, 200);
    let out = waiter.wait_with_output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let body = json_out(&out);
    assert_eq!(body["response"]["resolution"], "answered");
    assert_eq!(body["response"]["response"]["value"], "ship");
    // the plain form names the outcome
    let plain = hub.run(&["get", &id]);
    assert_eq!(code(&plain), 0);
    assert!(stdout(&plain).contains("answered value=\"ship\" actor=human:alice"), "{}", stdout(&plain));
}

#[test]
fn ask_wait_exits_10_when_declined_with_plain_progress_lines_off_a_tty() {
    let hub = TestHub::start();
    let child =
        hub.ma2h(&["ask", "Drop the table?", "--wait"]).stdout(Stdio::piped()).stderr(Stdio::piped()).spawn().unwrap();
    let id = hub.wait_for_open();
    assert_eq!(hub.resolve(&id, json!({"resolution": "declined"})).0, 200);
    let out = child.wait_with_output().unwrap();
    assert_eq!(code(&out), 10, "{}", stderr(&out));
    assert!(stdout(&out).contains("declined"));
    let err = stderr(&out);
    assert!(err.contains(&format!("waiting for {id}")) && !err.contains('\r'), "no spinner off a TTY: {err:?}");
}

#[test]
fn an_expired_ask_exits_11_and_reports_the_default() {
    let hub = TestHub::start();
    let out = hub.run(&[
        "ask",
        "Ship?",
        "--option",
        "ship",
        "--option",
        "hold",
        "--default-on-expire",
        "hold",
        "--expires-in",
        "2s",
        "--wait",
        "20",
        "--json",
    ]);
    assert_eq!(code(&out), 11, "{}", stderr(&out));
    let body = json_out(&out);
    assert_eq!(body["response"]["response"]["value"], "hold");
    assert_eq!(body["response"]["response"]["actor"], "system:default_on_expire");
}

#[test]
fn cancel_exits_12_and_a_lost_race_reports_the_winner() {
    let hub = TestHub::start();
    let id = stdout(&hub.run(&["ask", "Rotate?"]));
    let out = hub.run(&["cancel", &id]);
    assert_eq!(code(&out), 12, "{}", stderr(&out));
    assert_eq!(code(&hub.run(&["get", &id])), 12);

    let id2 = stdout(&hub.run(&["ask", "Rotate again?"]));
    assert_eq!(hub.resolve(&id2, json!({"resolution": "answered", "value": "approve"})).0, 200);
    let out = hub.run(&["cancel", &id2, "--json"]);
    assert_eq!(code(&out), 0, "answered won the race: {}", stderr(&out));
    assert_eq!(json_out(&out)["resolution"], "answered");
}

#[test]
fn a_task_exits_0_when_completed_and_13_while_wait_n_elapses() {
    let hub = TestHub::start();
    let id = stdout(&hub.run(&["task", "Rotate the key", "--instructions", "rotate it", "--check", "new key"]));
    let out = hub.run(&["get", &id, "--wait", "1"]);
    assert_eq!(code(&out), 13, "{}", stderr(&out));
    assert_eq!(hub.resolve(&id, json!({"resolution": "completed"})).0, 200);
    assert_eq!(code(&hub.run(&["get", &id, "--wait"])), 0);
}

#[test]
fn notify_is_delivered_and_get_once_acts_at_most_once() {
    let hub = TestHub::start();
    let out = hub.run(&["notify", "Nightly is green", "--body", "412 tests", "--json"]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    assert_eq!(json_out(&out)["status"], "delivered");

    let id = stdout(&hub.run(&["ask", "Ship?"]));
    hub.resolve(&id, json!({"resolution": "answered", "value": "approve"}));
    assert_eq!(code(&hub.run(&["get", &id, "--once"])), 0);
    assert_eq!(code(&hub.run(&["get", &id, "--once"])), 6, "the scheduled pull must not act twice");
}

#[test]
fn missing_config_unreachable_hub_and_hub_errors_have_their_own_exit_codes() {
    let hub = TestHub::start();
    let out = hub.ma2h(&["ask", "x"]).env_remove("MA2H_API_KEY").output().unwrap();
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("MA2H_API_KEY is not set"), "{}", stderr(&out));

    let valid = "msg_01J00000000000000000000000";
    let out = hub.ma2h(&["get", valid]).env("MA2H_HUB_URL", "http://127.0.0.1:9").output().unwrap();
    assert_eq!(code(&out), 3);
    assert!(stderr(&out).contains("hub unreachable"), "{}", stderr(&out));

    // Never a message id: a usage error, never a request.
    let out = hub.ma2h(&["get", ".."]).env("MA2H_HUB_URL", "http://127.0.0.1:9").output().unwrap();
    assert_eq!(code(&out), 2);
    assert!(stderr(&out).contains("is not a message id"), "{}", stderr(&out));

    let out = hub.run(&["get", "msg_01J00000000000000000000000"]);
    assert_eq!(code(&out), 4);
    assert!(stderr(&out).contains("404 not_found"), "{}", stderr(&out));

    let out = hub.ma2h(&["ask", "x"]).env("MA2H_API_KEY", "nope").output().unwrap();
    assert_eq!(code(&out), 4);
    assert!(stderr(&out).contains("unauthenticated"), "{}", stderr(&out));

    let out = hub.run(&["ask", "x", "--idempotency-key", "k1"]);
    assert_eq!(code(&out), 0);
    let out = hub.run(&["ask", "y", "--idempotency-key", "k1"]);
    assert_eq!(code(&out), 4);
    assert!(stderr(&out).contains("idempotency_conflict"), "{}", stderr(&out));

    let out = hub.run(&["ask", "x", "--mode", "select"]);
    assert_eq!(code(&out), 2, "select without options fails locally: {}", stderr(&out));
}

#[test]
fn an_ask_nobody_may_answer_is_refused_unless_self_resolvable() {
    let hub = TestHub::start();
    let out = hub.ma2h(&["ask", "Drop the table?"]).env_remove("MA2H_RESOLVERS").output().unwrap();
    assert_eq!(code(&out), 2, "{}", stderr(&out));
    assert!(stderr(&out).contains("--resolver") && stderr(&out).contains("--self-resolvable"), "{}", stderr(&out));
    let out = hub.ma2h(&["ask", "Drop the table?", "--self-resolvable"]).env_remove("MA2H_RESOLVERS").output().unwrap();
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let out =
        hub.ma2h(&["ask", "Drop it?", "--resolver", "human:alice"]).env_remove("MA2H_RESOLVERS").output().unwrap();
    assert_eq!(code(&out), 0, "an explicit resolver is enough: {}", stderr(&out));
}

#[test]
fn envelope_flags_reach_the_hub_and_a_proposal_is_a_schema_default() {
    let hub = TestHub::start();
    let schema =
        r#"{"type":"object","properties":{"replicas":{"type":"integer","minimum":1},"ticket":{"type":"string"}}}"#;
    let out = hub.run(&[
        "ask",
        "Scale up?",
        "--schema",
        schema,
        "--proposed",
        "replicas=3",
        "--proposed",
        "ticket=1234",
        "--no-edit",
        "--project",
        "payments",
        "--tag",
        "deploy",
        "--sensitive",
        "--run-id",
        "run-77",
        "--client-ref",
        "JIRA-9",
    ]);
    assert_eq!(code(&out), 0, "{}", stderr(&out));
    let id = stdout(&out);
    let got = json_out(&hub.run(&["get", &id, "--json"]));
    assert_eq!(got["agent"]["project"], "payments");
    assert_eq!(got["sensitive"], true);
    assert_eq!(got["agent"]["run_id"], "run-77");
    assert_eq!(got["client_ref"], "JIRA-9", "the agent's own read returns its label");
    assert_eq!(got["tags"], json!(["deploy"]));
    assert_eq!(got["request"]["schema"]["properties"]["replicas"]["default"], 3);
    assert_eq!(got["request"]["schema"]["properties"]["ticket"]["default"], "1234", "a string field stays text");
    assert_eq!(got["request"]["permissions"]["allow_edit"], false);
    assert_eq!(got["request"]["permissions"]["allow_accept"], true);
    let out = hub.run(&["ask", "Scale?", "--schema", schema, "--proposed", "nodes=3"]);
    assert_eq!(code(&out), 2, "an unknown field is a usage error: {}", stderr(&out));
    let out = hub.run(&["ask", "Ship?", "--option", "a", "--option", "b", "--proposed", "x=1"]);
    assert_eq!(code(&out), 2, "a proposal needs an input ask: {}", stderr(&out));
}

#[test]
fn an_unbound_callback_host_names_the_admin_command() {
    let hub = TestHub::start();
    let out = hub.run(&["ask", "Resume?", "--callback-url", "http://unbound.example/cb"]);
    assert_eq!(code(&out), 4, "{}", stderr(&out));
    let err = stderr(&out);
    assert!(err.contains("bind-callback --account acme --agent bot --host unbound.example"), "{err}");
    assert!(err.contains("bound to this agent by an operator"), "the specific hint: {err}");
}

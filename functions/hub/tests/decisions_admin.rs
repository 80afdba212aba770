//! `ma2h-hub admin approvals|away|grants` (issue 40) through the binary: what an operator of a
//! local Hub types, on the SQLite store.

mod support;

use serde_json::json;
use support::*;

#[test]
fn approval_policies_absences_and_grants_are_administered_from_the_command_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();
    admin_json(path, &["create-operator", "--account", "acme", "--human", "alice"]);
    admin_json(path, &["create-operator", "--account", "acme", "--human", "bob"]);

    let add = [
        "approvals",
        "add",
        "--account",
        "acme",
        "--id",
        "prod",
        "--approvals",
        "2",
        "--tag",
        "prod",
        "--exclude-label",
        "requested_by",
    ];
    let shown = admin_json(path, &add);
    assert_eq!(shown["approval_policies"][0]["approvals"], 2, "{shown}");
    assert_eq!(shown["approval_policies"][0]["exclude_label"], "requested_by");
    let bad = base_command(path)
        .arg("admin")
        .args(["approvals", "add", "--account", "acme", "--id", "x", "--approvals", "0"])
        .output()
        .unwrap();
    assert!(!bad.status.success() && String::from_utf8_lossy(&bad.stderr).contains("approvals"));
    assert_eq!(
        admin_json(path, &["approvals", "remove", "--account", "acme", "--id", "prod"])["approval_policies"],
        json!([])
    );

    let until = (chrono::Utc::now() + chrono::Duration::hours(4)).to_rfc3339();
    let away = admin_json(
        path,
        &["away", "set", "--account", "acme", "--human", "alice", "--delegate", "bob", "--until", &until],
    );
    assert_eq!(
        (away["away"][0]["human"].as_str(), away["away"][0]["delegate"].as_str()),
        (Some("human:alice"), Some("human:bob"))
    );
    let nobody = base_command(path)
        .arg("admin")
        .args(["away", "set", "--account", "acme", "--human", "alice", "--delegate", "zed", "--until", &until])
        .output()
        .unwrap();
    assert!(!nobody.status.success(), "a delegate must hold an operator credential");
    assert_eq!(admin_json(path, &["away", "lift", "--account", "acme", "--human", "alice"])["away"], json!([]));

    assert_eq!(admin_json(path, &["grants", "show", "--account", "acme"])["grants"], json!([]));
    let missing = base_command(path)
        .arg("admin")
        .args(["grants", "revoke", "--account", "acme", "--id", "grt_x"])
        .output()
        .unwrap();
    assert!(!missing.status.success(), "an unknown grant is an error");
}

#[test]
fn an_on_call_ladder_is_set_on_a_route_and_presence_lists_the_team() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();
    admin_json(path, &["create-operator", "--account", "acme", "--human", "alice"]);
    let hook = base_command(path)
        .env("MA2H_WEBHOOK_SECRET", "whk")
        .arg("admin")
        .args(["channels", "add-webhook", "--account", "acme", "--id", "pager", "--url", "https://pager.example.com/"])
        .output()
        .unwrap();
    assert!(hook.status.success(), "{}", String::from_utf8_lossy(&hook.stderr));
    let route = [
        "channels",
        "add-route",
        "--account",
        "acme",
        "--id",
        "oncall",
        "--to",
        "pager",
        "--ladder",
        "human:alice",
        "--ladder",
        "bob",
        "--ladder-minutes",
        "5",
    ];
    let shown = admin_json(path, &route);
    let r = &shown["routes"][0];
    assert_eq!((&r["ladder"], &r["ladder_minutes"]), (&json!(["alice", "bob"]), &json!(5)), "{shown}");
    assert!(r.get("offline_minutes").is_none(), "the default is not stored");
    let twice = base_command(path)
        .arg("admin")
        .args(["channels", "add-route", "--account", "acme", "--id", "x", "--to", "pager"])
        .args(["--ladder", "bob", "--ladder", "human:bob"])
        .output()
        .unwrap();
    assert!(!twice.status.success() && String::from_utf8_lossy(&twice.stderr).contains("listed twice"));

    let team = admin_json(path, &["presence", "--account", "acme"]);
    assert_eq!(
        team,
        json!({"operators": [{"human": "human:alice", "state": "unknown"}, {"human": "human:bob", "state": "unknown"}]}),
        "the ladder's operators, never seen yet"
    );
}

#[test]
fn a_passkey_policy_is_set_from_the_command_line_and_an_operators_passkeys_are_listed() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();
    admin_json(path, &["create-operator", "--account", "acme", "--human", "alice"]);
    let add =
        ["approvals", "add", "--account", "acme", "--id", "keyed", "--approvals", "1", "--passkey", "--sensitive"];
    let shown = admin_json(path, &add);
    let policy = &shown["approval_policies"][0];
    assert_eq!((policy["passkey"].as_bool(), policy["sensitive"].as_bool()), (Some(true), Some(true)), "{shown}");
    // one approval that neither excludes nor asks a passkey is no policy at all
    let idle = base_command(path)
        .arg("admin")
        .args(["approvals", "add", "--account", "acme", "--id", "idle", "--approvals", "1"])
        .output()
        .unwrap();
    assert!(!idle.status.success() && String::from_utf8_lossy(&idle.stderr).contains("passkey"));
    // passkeys are added in the browser; the admin lists and removes them
    let listed = admin_json(path, &["passkeys", "list", "--account", "acme", "--human", "human:alice"]);
    assert_eq!(listed["passkeys"], json!([]));
    let missing = base_command(path)
        .arg("admin")
        .args(["passkeys", "remove", "--account", "acme", "--human", "alice", "--id", "nope"])
        .output()
        .unwrap();
    assert!(!missing.status.success(), "an unknown passkey is not removed");
}

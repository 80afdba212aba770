//! `ma2h audit verify` (issue 42) on an export built as the Hub builds one: exit 0 when it
//! verifies; exit 5 naming the first bad line when an entry is edited or the Hub's key is not
//! the one given; and on a running Hub's own export, with the keys it publishes.

mod support;

use std::process::Command;

use base64::Engine as _;
use ma2h_protocol::audit::{Chainer, Entry, Line};
use ma2h_protocol::signature::{SigningKey, VerifyingKey};

const BIN: &str = env!("CARGO_BIN_EXE_ma2h");

fn export(key: &SigningKey) -> Vec<String> {
    let mut chains = Chainer::new("acme");
    let mut lines = Vec::new();
    for (i, kind) in ["message.submitted", "message.resolved", "credential.revoked"].iter().enumerate() {
        let entry = Entry {
            account: "acme".into(),
            shard: u16::try_from(i % 2).unwrap(),
            seq: 0,
            id: format!("aud_{i}"),
            at: format!("2026-12-07T10:00:0{i}Z"),
            kind: (*kind).into(),
            principal: "human:alice".into(),
            target: Some("msg_01".into()),
            digest: None,
            detail: serde_json::Map::new(),
        };
        lines.push(Line::Entry(chains.push(entry)));
        if i == 1 {
            lines.push(Line::Checkpoint(chains.checkpoint("2026-12-07T10:01:00Z", "k1", key)));
        }
    }
    lines.push(Line::Export(chains.seal("2026-12-07T10:02:00Z", "k1", key)));
    lines.iter().map(Line::to_json).collect()
}

fn public(key: &SigningKey) -> String {
    let VerifyingKey::Ed25519(k) = key.verifying_key() else { unreachable!() };
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(k.as_bytes())
}

fn verify(lines: &[String], key: &str) -> (i32, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("audit.jsonl");
    std::fs::write(&path, lines.join("\n") + "\n").unwrap();
    let out = Command::new(BIN).args(["audit", "verify"]).arg(&path).args(["--ed25519-key", key]).output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned() + &String::from_utf8_lossy(&out.stderr);
    (out.status.code().unwrap_or(-1), text)
}

#[test]
fn an_export_verifies_and_an_edited_entry_is_named_with_exit_5() {
    let key = SigningKey::ed25519_from_seed(&[3; 32]);
    let lines = export(&key);
    let (code, out) = verify(&lines, &public(&key));
    assert_eq!(code, 0, "{out}");
    assert!(out.contains("verified: account acme, 3 entries in 2 shard chains, 1 checkpoints"), "{out}");

    let mut edited = lines.clone();
    edited[1] = edited[1].replace("message.resolved", "message.cancelled");
    let (code, out) = verify(&edited, &public(&key));
    assert_eq!(code, 5, "{out}");
    assert!(out.contains("line 2 (entry aud_1)") && out.contains("edited"), "{out}");

    let other = SigningKey::ed25519_from_seed(&[4; 32]);
    let (code, out) = verify(&lines, &public(&other));
    assert_eq!(code, 5, "{out}");
    assert!(out.contains("signature"), "{out}");
}

#[test]
fn a_hubs_export_verifies_with_the_keys_it_publishes() {
    let hub = support::TestHub::start();
    let (status, body) = support::http_text(&hub.addr, "GET", "/v1/operator/audit", &hub.op_key, None);
    assert_eq!(status, 200, "{body}");
    // the Hub's credentials were recorded as they were made; the last line is the export seal
    let lines: Vec<serde_json::Value> = body.lines().map(|l| serde_json::from_str(l).unwrap()).collect();
    assert_eq!(lines.last().unwrap()["type"], "export", "{body}");
    let entries = lines.iter().filter(|l| l["type"] == "entry").count() as u64;
    assert!(entries >= 1, "{body}");
    let path = hub.tmp.path().join("export.jsonl");
    std::fs::write(&path, &body).unwrap();
    let out = hub.run(&["audit", "verify", path.to_str().unwrap(), "--discover-keys", "--json"]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}{}", String::from_utf8_lossy(&out.stderr));
    let verdict: serde_json::Value = serde_json::from_str(text.trim()).unwrap();
    assert_eq!((verdict["verified"].as_bool(), verdict["entries"].as_u64()), (Some(true), Some(entries)));
}

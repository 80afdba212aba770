//! An edited, deleted, reordered or truncated entry is caught, and named (issue 42).

use serde_json::json;

use super::*;

const SEED: [u8; 32] = [7; 32];

/// Builds a ledger the way the Hub exports one.
struct Ledger {
    key: SigningKey,
    chains: Chainer,
    lines: Vec<Line>,
    n: u64,
}

impl Ledger {
    fn new() -> Self {
        Self { key: SigningKey::ed25519_from_seed(&SEED), chains: Chainer::new("acme"), lines: Vec::new(), n: 0 }
    }

    fn add(&mut self, shard: u16, kind: &str) -> &mut Self {
        self.n += 1;
        let entry = Entry {
            account: "acme".into(),
            shard,
            seq: 0,
            id: format!("aud_{:04}", self.n),
            at: format!("2026-12-07T10:00:{:02}Z", self.n % 60),
            kind: kind.into(),
            principal: "human:alice".into(),
            target: Some("msg_01".into()),
            digest: Some(crate::jcs::sha256_hex(b"body")),
            detail: json!({"resolution": "answered"}).as_object().unwrap().clone(),
        };
        self.lines.push(Line::Entry(self.chains.push(entry)));
        self
    }

    fn checkpoint(&mut self) -> &mut Self {
        let cp = self.chains.checkpoint("2026-12-07T10:05:00Z", "k1", &self.key);
        self.lines.push(Line::Checkpoint(cp));
        self
    }

    fn seal(&mut self) -> Vec<String> {
        self.lines.push(Line::Export(self.chains.seal("2026-12-07T10:06:00Z", "k1", &self.key)));
        self.lines.iter().map(Line::to_json).collect()
    }

    fn keys(&self) -> Vec<VerifyingKey> {
        vec![self.key.verifying_key()]
    }
}

fn sample() -> (Ledger, Vec<String>) {
    let mut l = Ledger::new();
    l.add(0, "message.submitted").add(1, "message.approved").add(0, "message.resolved").checkpoint();
    l.add(1, "push.delivered").add(2, "login").add(1, "logout").checkpoint();
    l.add(0, "credential.revoked");
    let lines = l.seal();
    (l, lines)
}

fn run(lines: &[String], keys: &[VerifyingKey]) -> Result<Report, Failure> {
    verify(lines.iter().map(String::as_str), keys)
}

#[test]
fn a_whole_export_verifies_and_says_what_it_holds() {
    let (l, lines) = sample();
    let report = run(&lines, &l.keys()).unwrap();
    assert_eq!((report.entries, report.checkpoints, report.shards), (7, 2, 3));
    assert_eq!(report.account, "acme");
}

#[test]
fn an_edited_entry_is_named() {
    let (l, mut lines) = sample();
    lines[1] = lines[1].replace("message.approved", "message.declined");
    let f = run(&lines, &l.keys()).unwrap_err();
    assert_eq!((f.line, f.entry.as_deref()), (2, Some("aud_0002")), "{f}");
    assert!(f.reason.contains("edited"), "{f}");
}

#[test]
fn an_edit_with_its_hash_recomputed_breaks_the_next_link_or_the_signed_head() {
    let (l, mut lines) = sample();
    // rewrite entry 1 (shard 0, seq 0) and recompute its hash: entry 3 (shard 0, seq 1) no longer links
    let Line::Entry(mut e) = Line::parse(&lines[0]).unwrap() else { panic!() };
    e.entry.principal = "human:mallory".into();
    lines[0] = Line::Entry(e.entry.chained(&GENESIS)).to_json();
    let f = run(&lines, &l.keys()).unwrap_err();
    assert_eq!((f.line, f.entry.as_deref()), (3, Some("aud_0003")), "{f}");

    // the last entry before a checkpoint, rehashed: the checkpoint's signed head disagrees
    let (l, mut lines) = sample();
    let Line::Entry(e) = Line::parse(&lines[2]).unwrap() else { panic!() };
    let prev = parse_hash(&e.prev).unwrap();
    let mut edited = e.entry.clone();
    edited.detail.insert("resolution".into(), json!("declined"));
    lines[2] = Line::Entry(edited.chained(&prev)).to_json();
    let f = run(&lines, &l.keys()).unwrap_err();
    assert_eq!(f.line, 4, "{f}");
    assert!(f.reason.contains("signed head"), "{f}");
}

#[test]
fn a_deleted_entry_is_caught_at_the_gap() {
    let (l, mut lines) = sample();
    lines.remove(4); // push.delivered: shard 1, seq 1
    let f = run(&lines, &l.keys()).unwrap_err();
    assert_eq!(f.entry.as_deref(), Some("aud_0006"), "{f}");
    assert!(f.reason.contains("missing or out of order"), "{f}");
}

#[test]
fn reordered_entries_are_caught() {
    let (l, mut lines) = sample();
    lines.swap(0, 2); // two entries of shard 0
    let f = run(&lines, &l.keys()).unwrap_err();
    assert_eq!(f.line, 1, "{f}");
}

#[test]
fn a_truncated_file_is_caught_with_or_without_its_seal() {
    let (l, lines) = sample();
    let f = run(&lines[..lines.len() - 1], &l.keys()).unwrap_err();
    assert!(f.reason.contains("truncated"), "{f}");
    // the tail entry dropped, the seal kept: the seal's heads say what is missing
    let mut cut = lines.clone();
    cut.remove(lines.len() - 2);
    let f = run(&cut, &l.keys()).unwrap_err();
    assert!(f.reason.contains("export seal") && f.reason.contains("shard 0"), "{f}");
    // a checkpoint dropped
    let mut cut = lines.clone();
    cut.remove(3);
    assert!(run(&cut, &l.keys()).is_err());
}

#[test]
fn a_checkpoint_signed_by_another_key_or_moved_is_refused() {
    let (_, lines) = sample();
    let other = vec![SigningKey::ed25519_from_seed(&[9; 32]).verifying_key()];
    let f = run(&lines, &other).unwrap_err();
    assert_eq!(f.line, 4, "{f}");
    assert!(f.reason.contains("signature"), "{f}");
    // an export seal cannot stand in for a checkpoint (or the reverse): the type is signed
    let (l, mut lines) = sample();
    let last = lines.len() - 1;
    lines[last] = lines[last].replace("\"type\":\"export\"", "\"type\":\"checkpoint\"");
    assert!(run(&lines, &l.keys()).is_err());
}

#[test]
fn an_export_may_start_at_a_checkpoint_and_continue_its_chains() {
    let (l, lines) = sample();
    // from the first checkpoint on (a `since` window): the checkpoint anchors the chains
    let report = run(&lines[3..], &l.keys()).unwrap();
    assert_eq!(report.entries, 4);
    // but not from the middle of a chain without one
    let f = run(&lines[4..], &l.keys()).unwrap_err();
    assert!(f.reason.contains("anchor"), "{f}");
}

#[test]
fn an_unsigned_member_or_another_account_is_refused() {
    let (l, mut lines) = sample();
    lines[1] = lines[1].replacen('{', "{\"note\":\"trust me\",", 1);
    assert!(run(&lines, &l.keys()).unwrap_err().reason.contains("unexpected member"));
    let (l, mut lines) = sample();
    lines[1] = lines[1].replace("\"account\":\"acme\"", "\"account\":\"other\"");
    assert!(run(&lines, &l.keys()).unwrap_err().reason.contains("account"));
}

#[test]
fn chains_continue_from_a_checkpoint_as_the_sealer_resumes_them() {
    let (l, lines) = sample();
    let Line::Checkpoint(first) = Line::parse(&lines[3]).unwrap() else { panic!() };
    // resumed from the first checkpoint, the same entries chain to the same hashes
    let mut resumed = Chainer::after(&first).unwrap();
    for text in &lines[4..7] {
        let Line::Entry(e) = Line::parse(text).unwrap() else { panic!() };
        assert_eq!(resumed.push(e.entry.clone()), e, "{text}");
    }
    let Line::Checkpoint(second) = Line::parse(&lines[7]).unwrap() else { panic!() };
    assert_eq!(resumed.checkpoint(&second.body.at, "k1", &l.key), second);
}

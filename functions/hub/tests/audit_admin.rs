//! `ma2h-hub admin audit …` (issue 42) through the binary: `seal` reports per account, `export`
//! writes JSON Lines ending with a seal signed by the Hub key the capability document publishes.

mod support;

use ma2h_protocol::audit::verify;
use ma2h_protocol::signature::VerifyingKey;
use support::*;

#[test]
fn audit_seal_reports_and_export_writes_a_file_that_verifies_with_the_published_key() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path();
    admin_json(path, &["create-operator", "--account", "acme", "--human", "alice"]);
    let sealed = admin_json(path, &["audit", "seal", "--account", "acme"]);
    assert_eq!(sealed["sealed"][0]["outcome"], "nothing_new", "{sealed}");

    let text = audit_export(path, "acme");

    let hub = Hub::start(path);
    let cap = try_request(&hub.addr, "GET", "/.well-known/ma2h", None, None).unwrap().1;
    let keys = VerifyingKey::published(&cap);
    assert!(!keys.is_empty(), "{cap}");
    let report = verify(text.lines(), &keys).unwrap_or_else(|f| panic!("{f}\n{text}"));
    // the operator's credential was recorded as it was created; nothing is sealed yet
    assert_eq!((report.entries, report.checkpoints), (1, 0));
    assert!(text.contains("\"credential.created\""), "{text}");

    let bad = base_command(path).args(["admin", "audit", "export", "--account", "acme", "--since", "soon"]).output();
    assert!(!bad.unwrap().status.success(), "a bad --since is refused");
}

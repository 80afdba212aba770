//! Issue 42 on every backend (`MA2H_TEST_STORE`): the audit ledger's records are sealed by
//! signed checkpoints once settled, and an export — whole, or anchored at a checkpoint — verifies
//! with the Hub's published keys; an export edited afterwards does not.

mod common;

use axum::http::{Method, StatusCode};
use chrono::Duration;
use common::*;
use ma2h_core::audit::seal::{Sealed, seal_account};
use ma2h_core::audit::{Event, SETTLE, export::export, record};
use ma2h_protocol::audit::verify;
use ma2h_protocol::ids::AccountId;
use ma2h_protocol::signature::VerifyingKey;

fn event(kind: &'static str, who: &str, target: &str) -> Event {
    Event { kind, principal: who.into(), target: Some(target.into()), ..Event::default() }
}

async fn append(t: &TestHub, account: &AccountId, n: usize, kind: &'static str) {
    for i in 0..n {
        let r = record(&t.hub, account, event(kind, "human:alice", &format!("msg_{i}")));
        t.hub.audit.append_audit(&[r]).await.unwrap();
        t.advance(Duration::milliseconds(10));
    }
}

#[tokio::test]
async fn settled_entries_are_checkpointed_and_an_export_verifies_whole_or_from_a_checkpoint() {
    let t = hub().await;
    let acct = AccountId::parse("initech").unwrap(); // no fixture entries
    let keys: Vec<VerifyingKey> = t.hub.keys.verifying_keys();

    append(&t, &acct, 12, "message.resolved").await;
    assert_eq!(seal_account(&t.hub, &acct).await.unwrap(), Sealed::NothingNew, "not settled yet");
    t.advance(SETTLE + Duration::seconds(1));
    assert_eq!(seal_account(&t.hub, &acct).await.unwrap(), Sealed::Checkpoint { seq: 0, entries: 12 });
    assert_eq!(seal_account(&t.hub, &acct).await.unwrap(), Sealed::NothingNew, "nothing new since");
    let first = t.hub.clock.now();

    append(&t, &acct, 5, "login").await;
    t.advance(SETTLE + Duration::seconds(1));
    assert_eq!(seal_account(&t.hub, &acct).await.unwrap(), Sealed::Checkpoint { seq: 1, entries: 5 });
    append(&t, &acct, 3, "logout").await; // not sealed: covered by the export seal only

    let lines = export(&t.hub, &acct, None, None).await.unwrap();
    let report = verify(lines.iter().map(String::as_str), &keys).unwrap_or_else(|f| panic!("{f}\n{lines:#?}"));
    assert_eq!((report.entries, report.checkpoints), (20, 2));
    assert_eq!(lines.len(), 20 + 2 + 1, "entries, checkpoints, the seal");

    // from the first checkpoint on: anchored by it
    let anchored = export(&t.hub, &acct, Some(first), None).await.unwrap();
    let report = verify(anchored.iter().map(String::as_str), &keys).unwrap();
    assert_eq!((report.entries, report.checkpoints), (8, 2));

    // an edited line is caught
    let mut edited = lines.clone();
    edited[4] = edited[4].replace("human:alice", "human:mallory");
    assert!(verify(edited.iter().map(String::as_str), &keys).is_err());

    // another account's export holds none of these
    let other = export(&t.hub, &AccountId::parse("other").unwrap(), None, None).await.unwrap();
    assert_eq!(verify(other.iter().map(String::as_str), &keys).unwrap().entries, 0);
}

#[tokio::test]
async fn an_operator_reads_the_export_over_http_and_others_may_not() {
    let t = hub().await;
    let acct = AccountId::parse("acme").unwrap();
    // the fixture's credentials are in the ledger already
    let fixture = export(&t.hub, &acct, None, None).await.unwrap();
    let base = verify(fixture.iter().map(String::as_str), &t.hub.keys.verifying_keys()).unwrap().entries;
    append(&t, &acct, 3, "credential.created").await;
    t.advance(SETTLE + Duration::seconds(1));
    assert!(matches!(seal_account(&t.hub, &acct).await.unwrap(), Sealed::Checkpoint { .. }));
    append(&t, &acct, 2, "login").await;

    let r = t.call(Method::GET, "/v1/operator/audit", Some(&t.operator), None).await;
    assert_eq!(r.status, StatusCode::OK, "{:?}", r.body);
    assert_eq!(r.headers["content-type"], "application/jsonl");
    let text = r.body.as_str().map_or_else(|| r.body.to_string(), str::to_owned);
    let report = verify(text.lines(), &t.hub.keys.verifying_keys()).unwrap_or_else(|f| panic!("{f}\n{text}"));
    assert_eq!((report.entries, report.checkpoints, report.account.as_str()), (base + 5, 1, "acme"));

    let r = t.call(Method::GET, "/v1/operator/audit", Some(&t.agent), None).await;
    assert_eq!((r.status, &r.body["error"]["code"]), (StatusCode::FORBIDDEN, &serde_json::json!("not_authorized")));
    let r = t.call(Method::GET, "/v1/operator/audit?since=yesterday", Some(&t.operator), None).await;
    assert_eq!(r.status, StatusCode::BAD_REQUEST, "{:?}", r.body);
    let r = t.call(Method::GET, "/v1/operator/audit", None, None).await;
    assert_eq!(r.status, StatusCode::UNAUTHORIZED);
}

#[tokio::test]
async fn the_sweeper_seals_settled_entries_once_per_window_whichever_sweep_comes_first() {
    let t = hub().await;
    let acct = AccountId::parse("acme").unwrap();
    append(&t, &acct, 4, "message.submitted").await;
    let sweep = || async { ma2h_core::messages::sweep::sweep_once(&t.hub).await.unwrap().audit_checkpoints };
    // the window's first sweep claims it: nothing is settled yet, so nothing is sealed
    assert_eq!(sweep().await, 0, "nothing settled");
    t.advance(SETTLE + Duration::seconds(1));
    // settled now, but this window was claimed (the test clock starts on a window's first minute)
    assert_eq!(sweep().await, 0, "the window is claimed");
    assert!(t.hub.audit.last_audit_checkpoint(&acct).await.unwrap().is_none());
    // the next window's first sweep seals every account with settled entries (the fixture's
    // credentials made two), and no other sweep of that window does
    t.advance(Duration::minutes(i64::from(t.hub.settings.audit.seal_minutes)));
    assert_eq!(sweep().await, 2, "acme and globex");
    assert_eq!(sweep().await, 0, "once a window");
    let cp = t.hub.audit.last_audit_checkpoint(&acct).await.unwrap().expect("a checkpoint");
    assert_eq!(cp.seq(), 0);
    let lines = export(&t.hub, &acct, None, None).await.unwrap();
    let report = verify(lines.iter().map(String::as_str), &t.hub.keys.verifying_keys()).unwrap();
    assert_eq!(report.checkpoints, 1);
}

#[tokio::test]
async fn a_paged_export_ends_each_page_at_a_checkpoint_and_every_page_verifies_on_its_own() {
    let t = hub().await;
    let acct = AccountId::parse("acme").unwrap();
    let keys = t.hub.keys.verifying_keys();
    // three sealed batches of 4, then 2 unsealed
    for _ in 0..3 {
        append(&t, &acct, 4, "message.resolved").await;
        t.advance(SETTLE + Duration::seconds(1));
        assert!(matches!(seal_account(&t.hub, &acct).await.unwrap(), Sealed::Checkpoint { .. }));
    }
    append(&t, &acct, 2, "login").await;
    let whole = export(&t.hub, &acct, None, None).await.unwrap();
    let total = verify(whole.iter().map(String::as_str), &keys).unwrap().entries;

    let mut uri = "/v1/operator/audit?limit=4".to_owned();
    let (mut pages, mut seen) = (0, 0);
    loop {
        let r = t.call(Method::GET, &uri, Some(&t.operator), None).await;
        assert_eq!(r.status, StatusCode::OK, "{uri}: {:?}", r.body);
        let text = r.body.as_str().map_or_else(|| r.body.to_string(), str::to_owned);
        let report =
            verify(text.lines(), &keys).unwrap_or_else(|f| panic!("page {pages} does not verify: {f}\n{text}"));
        seen += report.entries;
        pages += 1;
        match r.headers.get("link").map(|v| v.to_str().unwrap().to_owned()) {
            Some(link) => {
                assert!(link.ends_with(">; rel=\"next\""), "{link}");
                uri = link.trim_start_matches('<').split('>').next().unwrap().to_owned();
                assert!(uri.contains("after=") && uri.contains("limit=4"), "{uri}");
            }
            None => break,
        }
        assert!(pages < 10, "the pages end");
    }
    assert!(pages >= 3, "the fixture's entries and three batches over pages of 4: {pages}");
    assert_eq!(seen, total, "the pages hold every entry once");

    for bad in ["limit=0", "limit=10001", "after=x", "after=99", "after=0&since=2026-06-04T12:00:00Z"] {
        let r = t.call(Method::GET, &format!("/v1/operator/audit?{bad}"), Some(&t.operator), None).await;
        assert_eq!(r.status, StatusCode::BAD_REQUEST, "{bad}: {:?}", r.body);
    }
}

#[tokio::test]
async fn retention_prunes_what_an_old_checkpoint_covers_and_the_export_starts_at_it() {
    let mut settings = common::settings();
    settings.audit.retention_days = 1;
    let t = hub_with(settings).await;
    let acct = AccountId::parse("initech").unwrap(); // no fixture entries
    let keys = t.hub.keys.verifying_keys();
    append(&t, &acct, 4, "message.resolved").await;
    t.advance(SETTLE + Duration::seconds(1));
    assert_eq!(seal_account(&t.hub, &acct).await.unwrap(), Sealed::Checkpoint { seq: 0, entries: 4 });
    // nothing is older than the retention yet
    assert_eq!(ma2h_core::audit::retention::prune(&t.hub, &acct).await.unwrap(), 0);

    t.advance(Duration::days(1) + Duration::hours(1));
    append(&t, &acct, 2, "login").await;
    t.advance(SETTLE + Duration::seconds(1));
    assert_eq!(seal_account(&t.hub, &acct).await.unwrap(), Sealed::Checkpoint { seq: 1, entries: 2 });
    append(&t, &acct, 1, "logout").await; // unsealed: never pruned

    assert_eq!(ma2h_core::audit::retention::prune(&t.hub, &acct).await.unwrap(), 4, "what checkpoint 0 covers");
    assert_eq!(ma2h_core::audit::retention::prune(&t.hub, &acct).await.unwrap(), 0, "once");
    let lines = export(&t.hub, &acct, None, None).await.unwrap();
    assert!(lines[0].contains("\"checkpoint\""), "anchored at the kept checkpoint: {}", lines[0]);
    let report = verify(lines.iter().map(String::as_str), &keys).unwrap_or_else(|f| panic!("{f}\n{lines:#?}"));
    assert_eq!(report.entries, 3, "the entries after the anchor");
    // a page from the beginning starts there too
    let r = t.call(Method::GET, "/v1/operator/audit", Some(&t.operator), None).await;
    assert_eq!(r.status, StatusCode::OK);
}

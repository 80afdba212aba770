//! [`SessionStore`](ma2h_core::ports::SessionStore) checks: registration with the live cap and
//! the stop gate, the lease CAS, session-addressed mail and its bounce, the sweeper's indexes,
//! and a `response` entry committed with its terminal.

use std::sync::Arc;

use chrono::Duration;
use ma2h_core::mailbox::model::{Audience, Claimer, EntryKind, Track};
use ma2h_core::sessions::model::{EndKind, Ended, Registered, SessionEnd, SessionRecord, StopRecord};
use ma2h_protocol::ids::SessionId;
use ma2h_protocol::time::Timestamp;
use serde_json::Map;

use crate::Store;
use crate::fixtures::{at, next_sequence, t0};
use crate::mailbox::{directive, mailbox};

/// A client-requested drain without a session (delivery evidence).
const DRAIN: Claimer = Claimer { session: None, evidence: true };

/// A fresh live session of `acct`/`bot` registered at `when` with a 60 s lease.
pub fn session(acct: &str, bot: &str, when: Timestamp) -> SessionRecord {
    let m = mailbox(acct, bot);
    SessionRecord {
        account: m.account,
        agent: m.agent,
        id: SessionId::from_parts(t0().timestamp_millis() as u64, u128::from(next_sequence())),
        created_at: when,
        expires_at: when + Duration::seconds(60),
        ttl_seconds: 60,
        last_seen: Some(when),
        meta: Map::from_iter([("label".to_owned(), serde_json::json!("ci · ünïcode"))]),
        end: None,
        retain_until: None,
        bounce_pending: false,
    }
}

fn stop(when: Timestamp) -> StopRecord {
    StopRecord { by: "human:alice".into(), at: when, session: None }
}

pub async fn sessions_register_renew_and_end_by_compare_and_set<S: Store>(store: S) {
    let a = session("acct-a", "bot", at(0));
    assert_eq!(store.register(&a, 2).await.unwrap(), Registered::New);
    assert_eq!(store.get_session(&a.account, &a.id).await.unwrap(), Some(a.clone()), "round trip");
    assert_eq!(store.get_session(&mailbox("acct-b", "bot").account, &a.id).await.unwrap(), None, "per account");
    let b = session("acct-a", "bot", at(1));
    assert_eq!(store.register(&b, 2).await.unwrap(), Registered::New);
    assert_eq!(store.register(&session("acct-a", "bot", at(2)), 2).await.unwrap(), Registered::Full, "cap of 2");
    assert_eq!(store.register(&session("acct-a", "other", at(2)), 2).await.unwrap(), Registered::New, "per agent");
    // A lapsed lease does not count against the cap.
    assert_eq!(store.register(&session("acct-a", "bot", at(61)), 2).await.unwrap(), Registered::New);

    let listed: Vec<_> = store.list_sessions(&a.account, Some(&a.agent), 10).await.unwrap();
    assert_eq!(listed.len(), 3, "newest first: {listed:?}");
    assert_eq!(listed[2].id, a.id);
    let account_wide = store.list_sessions(&a.account, None, 10).await.unwrap();
    assert_eq!(account_wide.len(), 4, "the whole account");
    let created: Vec<_> = account_wide.iter().map(|s| s.created_at).collect();
    assert!(created.windows(2).all(|w| w[0] >= w[1]), "newest first across the account: {created:?}");
    let newest = store.list_sessions(&a.account, None, 2).await.unwrap();
    assert_eq!(
        newest.iter().map(|s| s.created_at).collect::<Vec<_>>(),
        created[..2].to_vec(),
        "limit keeps the newest"
    );

    // Renewal: only the owner, only while live; it moves the lease to now + ttl.
    let other = mailbox("acct-a", "other").agent;
    assert_eq!(store.renew_session(&a.account, &other, &a.id, at(30)).await.unwrap(), None, "not the owner's");
    let renewed = store.renew_session(&a.account, &a.agent, &a.id, at(30)).await.unwrap().expect("renewed");
    assert_eq!((renewed.expires_at, renewed.last_seen), (at(90), Some(at(30))));
    assert_eq!(store.renew_session(&b.account, &b.agent, &b.id, at(62)).await.unwrap(), None, "lapsed at 61");

    // The terminal CAS: first wins; a lapsed lease refuses a close; terminals are immutable.
    let closed = SessionEnd { at: at(40), kind: EndKind::Closed };
    let Ended::Applied(rec) = store.end_session(&a.account, &a.id, closed, at(1000), None).await.unwrap() else {
        panic!("first close applies")
    };
    assert_eq!((rec.end, rec.retain_until, rec.bounce_pending), (Some(closed), Some(at(1000)), true));
    let op = SessionEnd { at: at(41), kind: EndKind::ClosedByOperator };
    match store.end_session(&a.account, &a.id, op, at(2000), Some(&stop(at(41)))).await.unwrap() {
        Ended::AlreadyTerminal(r) => assert_eq!(r.end, Some(closed), "the first terminal stands"),
        other => panic!("second close: {other:?}"),
    }
    assert_eq!(store.get_stop(&a.mailbox()).await.unwrap(), None, "a losing close writes no stop");
    assert_eq!(store.renew_session(&a.account, &a.agent, &a.id, at(42)).await.unwrap(), None, "no resurrection");
    match store.end_session(&b.account, &b.id, SessionEnd { at: at(62), kind: EndKind::Closed }, at(1000), None).await {
        Ok(Ended::AlreadyTerminal(r)) => assert_eq!(r.end, None, "lapsed, not yet marked by the sweeper"),
        other => panic!("close after lapse: {other:?}"),
    }
    let missing = SessionId::from_parts(1, 1);
    assert!(matches!(store.end_session(&a.account, &missing, closed, at(1000), None).await.unwrap(), Ended::Missing));
}

pub async fn an_operator_close_records_a_stop_that_gates_registration_until_lifted<S: Store>(store: S) {
    let s = session("acct-a", "bot", at(0));
    store.register(&s, 16).await.unwrap();
    let op = SessionEnd { at: at(5), kind: EndKind::ClosedByOperator };
    let record = StopRecord { by: "human:alice".into(), at: at(5), session: Some(s.id.clone()) };
    assert!(matches!(store.end_session(&s.account, &s.id, op, at(6), Some(&record)).await.unwrap(), Ended::Applied(_)));
    assert_eq!(store.get_stop(&s.mailbox()).await.unwrap(), Some(record), "written with the close");
    assert_eq!(store.register(&session("acct-a", "bot", at(7)), 16).await.unwrap(), Registered::Stopped);
    assert_eq!(store.register(&session("acct-b", "bot", at(7)), 16).await.unwrap(), Registered::New, "per account");
    // The terminal session is purged after retention (its bounce done); the stop outlives it.
    store.bounce_done(&s.account, &s.id).await.unwrap();
    if store.native_ttl() {
        assert_eq!(store.purge_sessions(at(10), 10).await.unwrap(), 0, "the TTL's to delete");
    } else {
        assert_eq!(store.purge_sessions(at(10), 10).await.unwrap(), 1);
        assert_eq!(store.get_session(&s.account, &s.id).await.unwrap(), None);
    }
    assert!(store.get_stop(&s.mailbox()).await.unwrap().is_some(), "§16.4.1: the stop survives the purge");
    assert_eq!(store.register(&session("acct-a", "bot", at(11)), 16).await.unwrap(), Registered::Stopped);
    assert!(store.lift_stop(&s.mailbox()).await.unwrap());
    assert!(!store.lift_stop(&s.mailbox()).await.unwrap(), "nothing left to lift");
    assert_eq!(store.register(&session("acct-a", "bot", at(12)), 16).await.unwrap(), Registered::New);
    store.put_stop(&s.mailbox(), &stop(at(13))).await.unwrap();
    assert_eq!(store.register(&session("acct-a", "bot", at(14)), 16).await.unwrap(), Registered::Stopped);
}

pub async fn concurrent_session_transitions_leave_exactly_one_terminal<S: Store>(store: S) {
    let store = Arc::new(store);
    for round in 0..6 {
        let s = session("acct-a", &format!("bot-{round}"), at(0));
        store.register(&s, 16).await.unwrap();
        let mut tasks = Vec::new();
        for i in 0..8 {
            let (store, s) = (store.clone(), s.clone());
            tasks.push(tokio::spawn(async move {
                let end = |kind| SessionEnd { at: at(30), kind };
                match i % 4 {
                    0 => store.renew_session(&s.account, &s.agent, &s.id, at(30)).await.map(|_| 0),
                    1 => store.end_session(&s.account, &s.id, end(EndKind::Closed), at(999), None).await.map(won),
                    2 => store
                        .end_session(&s.account, &s.id, end(EndKind::ClosedByOperator), at(999), None)
                        .await
                        .map(won),
                    _ => store.expire_due_sessions(at(61), Duration::seconds(100), 10).await,
                }
            }));
        }
        let mut wins = 0;
        for t in tasks {
            wins += t.await.unwrap().unwrap();
        }
        let after = store.get_session(&s.account, &s.id).await.unwrap().unwrap();
        assert_eq!(wins, 1, "round {round}: exactly one terminal wins: {after:?}");
        let end = after.end.expect("ended");
        if end.kind == EndKind::Expired {
            assert_eq!((end.at, after.expires_at), (at(60), at(60)), "never renewed after the lapse");
        }
    }
}

fn won(e: Ended) -> usize {
    usize::from(matches!(e, Ended::Applied(_)))
}

pub async fn session_addressed_entries_reach_only_their_session_and_bounce_with_prior<S: Store>(store: S) {
    let (one, two) = (session("acct-a", "bot", at(0)), session("acct-a", "bot", at(0)));
    let mb = one.mailbox();
    let any = directive(&mb, at(1));
    let (mut seen, mut unseen, mut acked) = (directive(&mb, at(2)), directive(&mb, at(3)), directive(&mb, at(4)));
    seen.audience = Audience::Session(one.id.clone());
    unseen.audience = Audience::Session(one.id.clone());
    acked.audience = Audience::Session(one.id.clone());
    let mut elsewhere = directive(&mb, at(5));
    elsewhere.audience = Audience::Session(two.id.clone());
    for e in [&any, &seen, &unseen, &acked, &elsewhere] {
        store.enqueue(e, 100).await.unwrap();
    }
    let plain = store.claim(&mb, &[Audience::Any], &DRAIN, at(10), at(70), 10).await.unwrap();
    assert_eq!(plain.entries.iter().map(|e| &e.key).collect::<Vec<_>>(), vec![&any.key], "session-less: v0.4 only");
    let mine = [Audience::Any, Audience::Session(one.id.clone())];
    let claimed = store.claim(&mb, &mine, &DRAIN, at(11), at(71), 2).await.unwrap();
    assert_eq!(claimed.entries.iter().map(|e| &e.key).collect::<Vec<_>>(), vec![&seen.key, &unseen.key]);
    store.claim(&mb, &mine, &DRAIN, at(72), at(130), 10).await.unwrap();
    let ack = ma2h_core::mailbox::model::AckRecord { by: "agent:bot".into(), acked_at: at(73), note: None };
    assert_eq!(store.ack_entries(&mb, std::slice::from_ref(&acked.key), &ack, at(999)).await.unwrap().len(), 1);
    // `unseen` was claimed in the second claim: make a never-delivered one for the queued prior.
    let mut fresh = directive(&mb, at(74));
    fresh.audience = Audience::Session(one.id.clone());
    store.enqueue(&fresh, 100).await.unwrap();

    let mut bounced = 0;
    loop {
        let n = store.bounce_entries(&mb, &one.id, at(80), at(999), 2).await.unwrap().len();
        if n == 0 {
            break;
        }
        bounced += n;
    }
    assert_eq!(bounced, 3, "seen, unseen (delivered) and fresh; not the acked one");
    let track = |key: String| {
        let store = &store;
        async move { store.get_entry(&mb_account(), &key).await.unwrap().unwrap().track(at(100)) }
    };
    assert_eq!(track(seen.key.clone()).await.prior().map(|p| p.as_str()), Some("delivered"));
    assert_eq!(track(fresh.key.clone()).await.prior().map(|p| p.as_str()), Some("queued"));
    assert!(matches!(track(fresh.key.clone()).await, Track::Bounced { at: t, .. } if t == at(80)));
    assert_eq!(track(acked.key.clone()).await.as_str(), "acknowledged", "an ack beats a later bounce");
    assert_eq!(track(elsewhere.key.clone()).await.as_str(), "queued", "another session's mail is untouched");
    assert_eq!(track(any.key.clone()).await.as_str(), "delivered", "principal-addressed mail never bounces");
}

fn mb_account() -> ma2h_protocol::ids::AccountId {
    crate::fixtures::account("acct-a")
}

/// §16.2/§16.3: the lease is what a renewal set, whatever a store's index still says. (A store
/// may move its expiry index lazily — issue 38: DynamoDB moves it once per half lease — but the
/// sweep must re-check the lease before it expires anything.)
pub async fn a_session_renewed_early_is_not_expired_at_its_first_lease_end<S: Store>(store: S) {
    let s = session("acct-a", "bot", at(0));
    store.register(&s, 16).await.unwrap();
    // renewed with most of the lease left: its lease ends at 70, not 60
    let renewed = store.renew_session(&s.account, &s.agent, &s.id, at(10)).await.unwrap().expect("renewed");
    assert_eq!(renewed.expires_at, at(70));
    assert_eq!(store.expire_due_sessions(at(61), Duration::seconds(100), 10).await.unwrap(), 0, "live until 70");
    let live = store.get_session(&s.account, &s.id).await.unwrap().unwrap();
    assert_eq!((live.end, live.expires_at), (None, at(70)));
    // and renewing again still works after the sweep looked at it
    store.renew_session(&s.account, &s.agent, &s.id, at(65)).await.unwrap().expect("renewed again");
    assert_eq!(store.expire_due_sessions(at(124), Duration::seconds(100), 10).await.unwrap(), 0, "live until 125");
    assert_eq!(store.expire_due_sessions(at(126), Duration::seconds(100), 10).await.unwrap(), 1);
    let ended = store.get_session(&s.account, &s.id).await.unwrap().unwrap();
    assert_eq!(ended.end, Some(SessionEnd { at: at(125), kind: EndKind::Expired }), "ended at its last lease end");
}

pub async fn lapsed_sessions_expire_from_an_index_and_are_purged_once_bounced<S: Store>(store: S) {
    let (lapsing, renewed) = (session("acct-a", "bot", at(0)), session("acct-a", "bot", at(0)));
    store.register(&lapsing, 16).await.unwrap();
    store.register(&renewed, 16).await.unwrap();
    store.renew_session(&renewed.account, &renewed.agent, &renewed.id, at(50)).await.unwrap().expect("renewed");
    assert_eq!(store.expire_due_sessions(at(60), Duration::seconds(100), 10).await.unwrap(), 0, "60 is still live");
    assert_eq!(store.expire_due_sessions(at(61), Duration::seconds(100), 10).await.unwrap(), 1);
    let gone = store.get_session(&lapsing.account, &lapsing.id).await.unwrap().unwrap();
    assert_eq!(gone.end, Some(SessionEnd { at: at(60), kind: EndKind::Expired }), "ended at its lease end");
    assert_eq!(gone.retain_until, Some(at(160)));
    let pending: Vec<_> = store.pending_bounces(10).await.unwrap().into_iter().map(|s| s.id).collect();
    assert_eq!(pending, vec![lapsing.id.clone()], "the outbox holds the ended session only");
    assert_eq!(store.purge_sessions(at(200), 10).await.unwrap(), 0, "not while its bounce is owed");
    store.bounce_done(&lapsing.account, &lapsing.id).await.unwrap();
    assert!(store.pending_bounces(10).await.unwrap().is_empty());
    assert_eq!(store.purge_sessions(at(159), 10).await.unwrap(), 0, "retained until 160");
    let purged = if store.native_ttl() { 0 } else { 1 };
    assert_eq!(store.purge_sessions(at(160), 10).await.unwrap(), purged);
    assert!(store.get_session(&renewed.account, &renewed.id).await.unwrap().is_some(), "the live one stays");
}

pub async fn a_response_entry_commits_with_its_terminal_only<S: Store>(store: S) {
    use ma2h_core::messages::records::{Completion, Inserted};
    use ma2h_protocol::lifecycle::Status;

    use crate::fixtures::{ask, terminal};
    let s = session("acct-a", "bot", at(0));
    let msg = ask(&s.account, &s.agent, at(0));
    assert_eq!(store.insert_message(&msg, None, None, at(0)).await.unwrap(), Inserted::New);
    let entry_for = |write: &ma2h_core::messages::records::TerminalWrite| ma2h_core::mailbox::model::MailboxEntry {
        key: write.resolution_id.to_string(),
        kind: EntryKind::Response,
        audience: Audience::Session(s.id.clone()),
        payload: write.response.clone(),
        author: "system:hub".into(),
        ..directive(&s.mailbox(), write.resolved_at)
    };
    let mut first = terminal(Status::Answered, at(10));
    first.entry = Some(Box::new(entry_for(&first)));
    let mut second = terminal(Status::Declined, at(11));
    second.entry = Some(Box::new(entry_for(&second)));
    assert!(matches!(store.complete(&s.account, &msg.id, &first).await.unwrap(), Completion::Applied(_)));
    assert!(matches!(store.complete(&s.account, &msg.id, &second).await.unwrap(), Completion::AlreadyTerminal(_)));
    let written = store.get_entry(&s.account, first.resolution_id.as_str()).await.unwrap().expect("entry written");
    assert_eq!((written.kind, written.payload), (EntryKind::Response, first.response.clone()));
    assert!(store.get_entry(&s.account, second.resolution_id.as_str()).await.unwrap().is_none(), "loser writes none");
    let claimed = store.claim(&s.mailbox(), &[Audience::Any], &DRAIN, at(12), at(72), 10).await.unwrap();
    assert!(claimed.entries.is_empty(), "a response entry is never shown to a session-less drain");
}

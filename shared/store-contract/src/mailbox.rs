//! Checks for the §8.7 mailbox and §15 presence: round trips, FIFO claims that hide an entry for
//! its visibility window, isolation between mailboxes, exactly-once claims under concurrency,
//! acks that cannot fabricate receipts, and deadline expiry / purge from indexes.

use std::collections::HashSet;
use std::sync::Arc;

use chrono::Duration;
use ma2h_core::mailbox::model::{
    AckRecord, Audience, Claimer, CloseReason, Enqueued, EntryKind, Mailbox, MailboxEntry, Track,
};
use ma2h_core::messages::records::Lookup;
use ma2h_protocol::ids::DirectiveId;
use ma2h_protocol::time::Timestamp;
use serde_json::json;

use crate::Store;
use crate::fixtures::{account, agent, at, next_sequence, t0};

/// A client-requested drain without a session (delivery evidence).
const DRAIN: Claimer = Claimer { session: None, evidence: true };

pub fn mailbox(acct: &str, agent_id: &str) -> Mailbox {
    Mailbox { account: account(acct), agent: agent(agent_id) }
}

/// A fresh directive entry for `mailbox`, enqueued at `when`, live for a day.
pub fn directive(mailbox: &Mailbox, when: Timestamp) -> MailboxEntry {
    let id = DirectiveId::from_parts(t0().timestamp_millis() as u64, u128::from(next_sequence()));
    MailboxEntry {
        mailbox: mailbox.clone(),
        key: id.to_string(),
        kind: EntryKind::Directive,
        audience: Audience::Any,
        payload: json!({"ma2h_version": "0.5", "type": "directive", "id": id.as_str(), "from": "human:alice",
                        "to": format!("agent:{}", mailbox.agent), "created_at": "2030-01-01T00:00:00.000Z",
                        "title": "Pause — ünïcode \"quoted\"", "tags": ["a", "b"], "context": [{"kind": "text", "text": "x"}]}),
        author: "human:alice".into(),
        enqueued_at: when,
        visible_at: when,
        deadline: when + Duration::days(1),
        deliveries: 0,
        delivered_at: None,
        claimant: None,
        closed: None,
        retain_until: None,
    }
}

/// A session-less drain's audiences.
const ANY: &[Audience] = &[Audience::Any];

fn keys(entries: &[MailboxEntry]) -> Vec<String> {
    entries.iter().map(|e| e.key.clone()).collect()
}

fn ack(by: &Mailbox, when: Timestamp) -> AckRecord {
    AckRecord { by: format!("agent:{}", by.agent), acked_at: when, note: Some("on it — ✓".into()) }
}

async fn enqueue_all<S: Store>(store: &S, entries: &[&MailboxEntry]) {
    for e in entries {
        assert_eq!(store.enqueue(e, 1000).await.unwrap(), Enqueued::New, "enqueue {}", e.key);
    }
}

pub async fn mailbox_entries_round_trip_and_the_depth_cap_writes_nothing<S: Store>(store: S) {
    let mb = mailbox("acct-a", "bot");
    let e = directive(&mb, at(0));
    enqueue_all(&store, &[&e]).await;
    assert_eq!(store.get_entry(&mb.account, &e.key).await.unwrap(), Some(e.clone()), "every field round-trips");
    assert_eq!(store.get_entry(&account("acct-b"), &e.key).await.unwrap(), None, "another account's key is missing");
    let second = directive(&mb, at(1));
    assert_eq!(store.enqueue(&second, 1).await.unwrap(), Enqueued::Full, "one live entry fills a cap of 1");
    assert_eq!(store.get_entry(&mb.account, &second.key).await.unwrap(), None, "a full mailbox writes nothing");
    // An entry past its deadline no longer counts against the cap.
    let mut late = directive(&mb, at(0) + Duration::days(2));
    late.visible_at = late.enqueued_at;
    assert_eq!(store.enqueue(&late, 1).await.unwrap(), Enqueued::New);
    let recent = store.recent_entries(&mb, 10).await.unwrap();
    assert_eq!(keys(&recent), vec![late.key.clone(), e.key.clone()], "newest first");
}

pub async fn claims_are_fifo_bounded_isolated_and_hidden_for_the_window<S: Store>(store: S) {
    let (mine, sibling, twin) = (mailbox("acct-a", "bot"), mailbox("acct-a", "other"), mailbox("acct-b", "bot"));
    let (a, b, c) = (directive(&mine, at(0)), directive(&mine, at(1)), directive(&mine, at(2)));
    let (s, t) = (directive(&sibling, at(0)), directive(&twin, at(0)));
    enqueue_all(&store, &[&a, &b, &c, &s, &t]).await;

    let first = store.claim(&mine, ANY, &DRAIN, at(10), at(70), 2).await.unwrap();
    assert_eq!(keys(&first.entries), vec![a.key.clone(), b.key.clone()], "FIFO, at most max");
    for e in &first.entries {
        assert_eq!((e.deliveries, e.delivered_at, e.visible_at), (1, Some(at(10)), at(70)));
    }
    assert_eq!(first.next_visible_at, Some(at(70)), "the claimed entries' window end");
    let second = store.claim(&mine, ANY, &DRAIN, at(11), at(71), 10).await.unwrap();
    assert_eq!(keys(&second.entries), vec![c.key.clone()], "claimed entries stay hidden; never another mailbox's");
    assert_eq!(second.next_visible_at, Some(at(70)), "the earliest lapsing window");
    let empty = store.claim(&mine, ANY, &DRAIN, at(69), at(129), 10).await.unwrap();
    assert!(empty.entries.is_empty(), "hidden until invisible_until");
    assert_eq!(empty.next_visible_at, Some(at(70)));

    let again = store.claim(&mine, ANY, &DRAIN, at(70), at(130), 10).await.unwrap();
    assert_eq!(keys(&again.entries), vec![a.key.clone(), b.key.clone()], "redelivered at the window's end");
    for e in &again.entries {
        assert_eq!((e.deliveries, e.delivered_at), (2, Some(at(10))), "a redelivery keeps the first delivered_at");
    }
    assert_eq!(
        keys(&store.claim(&sibling, ANY, &DRAIN, at(10), at(70), 10).await.unwrap().entries),
        vec![s.key.clone()]
    );
    assert_eq!(keys(&store.claim(&twin, ANY, &DRAIN, at(10), at(70), 10).await.unwrap().entries), vec![t.key.clone()]);

    // The deadline instant is still deliverable; after it, never.
    let edge = mailbox("acct-a", "edge");
    let mut d = directive(&edge, at(0));
    d.deadline = at(5);
    enqueue_all(&store, &[&d]).await;
    assert!(store.claim(&edge, ANY, &DRAIN, at(6), at(66), 10).await.unwrap().entries.is_empty(), "past its deadline");
    assert_eq!(keys(&store.claim(&edge, ANY, &DRAIN, at(5), at(65), 10).await.unwrap().entries), vec![d.key.clone()]);
}

pub async fn concurrent_claims_never_deliver_one_entry_twice_in_a_window<S: Store>(store: S) {
    let store = Arc::new(store);
    let mb = mailbox("acct-a", "busy");
    let entries: Vec<MailboxEntry> = (0..50).map(|i| directive(&mb, at(i))).collect();
    for e in &entries {
        store.enqueue(e, 1000).await.unwrap();
    }
    let drain = |now: Timestamp, until: Timestamp| {
        let tasks: Vec<_> = (0..8)
            .map(|_| {
                let (store, mb) = (store.clone(), mb.clone());
                tokio::spawn(async move {
                    let mut got = Vec::new();
                    loop {
                        let claim = store.claim(&mb, ANY, &DRAIN, now, until, 3).await.unwrap();
                        if claim.entries.is_empty() {
                            return got;
                        }
                        got.extend(claim.entries);
                    }
                })
            })
            .collect();
        async move {
            let mut all = Vec::new();
            for t in tasks {
                all.extend(t.await.unwrap());
            }
            all
        }
    };
    let expect: HashSet<String> = entries.iter().map(|e| e.key.clone()).collect();
    for (round, (now, until)) in [(at(100), at(160)), (at(160), at(220))].into_iter().enumerate() {
        let got = drain(now, until).await;
        let distinct: HashSet<String> = got.iter().map(|e| e.key.clone()).collect();
        assert_eq!(got.len(), distinct.len(), "round {round}: an entry was delivered twice inside one window");
        assert_eq!(distinct, expect, "round {round}: every entry delivered");
        assert!(got.iter().all(|e| e.deliveries == round as u32 + 1), "round {round}: one delivery each");
    }
}

pub async fn acks_close_only_own_delivered_live_entries<S: Store>(store: S) {
    let (mine, other) = (mailbox("acct-a", "bot"), mailbox("acct-a", "other"));
    let (delivered, queued, foreign) = (directive(&mine, at(0)), directive(&mine, at(1)), directive(&other, at(0)));
    enqueue_all(&store, &[&delivered, &queued, &foreign]).await;
    store.claim(&mine, ANY, &DRAIN, at(2), at(62), 1).await.unwrap();
    store.claim(&other, ANY, &DRAIN, at(2), at(62), 1).await.unwrap();

    let wanted = vec![delivered.key.clone(), queued.key.clone(), foreign.key.clone(), "dir_unknown".into()];
    let acked = store.ack_entries(&mine, &wanted, &ack(&mine, at(3)), at(1000)).await.unwrap();
    assert_eq!(keys(&acked), vec![delivered.key.clone()], "only the own, delivered entry");
    assert!(acked[0].closed.is_some(), "the entry is returned as written");
    let stored = store.get_entry(&mine.account, &delivered.key).await.unwrap().unwrap();
    match stored.track(at(4)) {
        Track::Acknowledged { ack: a, delivered_at } => {
            assert_eq!((a, delivered_at), (ack(&mine, at(3)), Some(at(2))));
        }
        other => panic!("acked entry reads {other:?}"),
    }
    assert_eq!(stored.retain_until, Some(at(1000)));
    assert!(matches!(stored.closed.as_ref().map(|c| &c.reason), Some(CloseReason::Acked(_))));
    assert_eq!(store.get_entry(&mine.account, &queued.key).await.unwrap().unwrap().track(at(4)), Track::Queued);
    assert_eq!(store.get_entry(&other.account, &foreign.key).await.unwrap().unwrap().closed, None, "foreign untouched");
    let again = store.ack_entries(&mine, std::slice::from_ref(&delivered.key), &ack(&mine, at(5)), at(2000)).await;
    assert!(again.unwrap().is_empty(), "a repeat ack changes nothing");
    let later = store.claim(&mine, ANY, &DRAIN, at(100), at(160), 10).await.unwrap();
    assert_eq!(keys(&later.entries), vec![queued.key.clone()], "an acked entry never comes back");

    // Past its deadline an entry can no longer be acked.
    let mut short = directive(&mine, at(0));
    short.deadline = at(200);
    enqueue_all(&store, &[&short]).await;
    store.claim(&mine, ANY, &DRAIN, at(190), at(250), 10).await.unwrap();
    let late = store.ack_entries(&mine, std::slice::from_ref(&short.key), &ack(&mine, at(201)), at(3000)).await;
    assert!(late.unwrap().is_empty());
}

pub async fn due_entries_close_and_purge_from_indexes_and_presence_keeps_the_latest<S: Store>(store: S) {
    let mb = mailbox("acct-a", "bot");
    // Distinct enqueue instants: FIFO ties may break by key (DynamoDB) or insertion (SQLite).
    let (mut seen, mut queued, mut fresh) = (directive(&mb, at(0)), directive(&mb, at(1)), directive(&mb, at(2)));
    queued.deadline = at(10);
    seen.deadline = at(10);
    // Its own expiry is the deadline: seen, then unanswered, stays `delivered` (§14.2).
    seen.payload["expires_at"] = json!("2030-01-01T00:00:10Z");
    fresh.deadline = at(1000);
    enqueue_all(&store, &[&seen, &queued, &fresh]).await;
    assert_eq!(keys(&store.claim(&mb, ANY, &DRAIN, at(3), at(4), 1).await.unwrap().entries), vec![seen.key.clone()]);
    assert_eq!(store.close_due_entries(at(20), at(100), 10).await.unwrap().len(), 2, "both past-deadline entries");
    assert_eq!(store.close_due_entries(at(20), at(100), 10).await.unwrap().len(), 0, "idempotent");
    let q = store.get_entry(&mb.account, &queued.key).await.unwrap().unwrap();
    let s = store.get_entry(&mb.account, &seen.key).await.unwrap().unwrap();
    let f = store.get_entry(&mb.account, &fresh.key).await.unwrap().unwrap();
    assert_eq!(q.track(at(20)), Track::Expired, "never delivered → expired");
    assert_eq!(s.track(at(20)).as_str(), "delivered", "seen stays delivered");
    assert_eq!((q.closed.as_ref().map(|c| c.at), q.retain_until), (Some(at(20)), Some(at(100))));
    assert_eq!(f.closed, None);
    assert_eq!(store.purge_entries(at(99), 10).await.unwrap(), 0, "not yet");
    if store.native_ttl() {
        // closed entries are the TTL's to delete, at `retain_until` (the store's own tests)
        assert_eq!(store.purge_entries(at(100), 10).await.unwrap(), 0);
    } else {
        assert_eq!(store.purge_entries(at(100), 10).await.unwrap(), 2);
        assert_eq!(store.get_entry(&mb.account, &queued.key).await.unwrap(), None);
    }
    assert!(store.get_entry(&mb.account, &fresh.key).await.unwrap().is_some());

    assert_eq!(store.last_seen(&mb).await.unwrap(), None);
    store.touch_presence(&mb, at(50)).await.unwrap();
    store.touch_presence(&mb, at(40)).await.unwrap();
    assert_eq!(store.last_seen(&mb).await.unwrap(), Some(at(50)), "never moves backwards");
    store.touch_presence(&mb, at(60)).await.unwrap();
    assert_eq!(store.last_seen(&mb).await.unwrap(), Some(at(60)));
    assert_eq!(store.last_seen(&mailbox("acct-b", "bot")).await.unwrap(), None, "per account");
}

pub async fn responses_are_stamped_once_and_the_first_ack_wins<S: Store>(store: S) {
    use ma2h_core::messages::records::{Completion, Inserted, PushStatus};
    use ma2h_protocol::lifecycle::Status;

    use crate::fixtures::{ask, notify, terminal};
    let (acct, bot) = (account("acct-a"), agent("bot"));
    let (open, pulled, pushed) = (ask(&acct, &bot, at(0)), ask(&acct, &bot, at(1)), ask(&acct, &bot, at(2)));
    let note = notify(&acct, &bot, at(3));
    for m in [&open, &pulled, &pushed, &note] {
        assert_eq!(store.insert_message(m, None, None, m.created_at).await.unwrap(), Inserted::New);
    }
    for m in [&pulled, &pushed] {
        assert!(matches!(
            store.complete(&acct, &m.id, &terminal(Status::Answered, at(10))).await.unwrap(),
            Completion::Applied(_)
        ));
    }
    let by = |t: i64, n: &str| AckRecord { by: "agent:bot".into(), acked_at: at(t), note: Some(n.into()) };

    // Not acknowledgeable: open, a notify, a terminal Response nobody received, unknown.
    for id in [&open.id, &note.id, &pulled.id] {
        assert_eq!(store.ack_response(&acct, id, &by(11, "x")).await.unwrap(), None, "{id}");
    }
    assert_eq!(store.mark_delivered(&acct, &open.id, at(12)).await.unwrap(), None, "open: no stamp");
    assert_eq!(store.mark_delivered(&acct, &note.id, at(12)).await.unwrap(), None, "notify: no stamp");

    // The first read stamps; a later read keeps the first stamp; updated_at never moves.
    assert_eq!(store.mark_delivered(&acct, &pulled.id, at(20)).await.unwrap(), Some(at(20)));
    assert_eq!(store.mark_delivered(&acct, &pulled.id, at(30)).await.unwrap(), Some(at(20)));
    let Lookup::Found(after) = store.get_message(&acct, &pulled.id).await.unwrap() else { panic!("found") };
    assert_eq!((after.delivered_at, after.updated_at), (Some(at(20)), at(10)));

    assert_eq!(store.ack_response(&acct, &pulled.id, &by(40, "first")).await.unwrap(), Some(by(40, "first")));
    assert_eq!(
        store.ack_response(&acct, &pulled.id, &by(50, "second")).await.unwrap(),
        Some(by(40, "first")),
        "first wins"
    );
    assert_eq!(store.ack_response(&account("acct-b"), &pulled.id, &by(50, "x")).await.unwrap(), None, "other account");
    let Lookup::Found(acked) = store.get_message(&acct, &pulled.id).await.unwrap() else { panic!("found") };
    assert_eq!((acked.ack, acked.updated_at), (Some(by(40, "first")), at(10)));

    // A 2xx push is delivery evidence too.
    let Lookup::Found(p) = store.get_message(&acct, &pushed.id).await.unwrap() else { panic!("found") };
    let mut track = ma2h_core::messages::records::PushTrack::pending(at(10));
    track.status = PushStatus::Delivered;
    track.delivered_at = Some(at(11));
    track.next_attempt_at = None;
    store.record_push(&acct, &p.id, &track).await.unwrap();
    let noteless = AckRecord { note: None, ..by(60, "") };
    assert_eq!(store.ack_response(&acct, &pushed.id, &noteless).await.unwrap(), Some(noteless.clone()));
}

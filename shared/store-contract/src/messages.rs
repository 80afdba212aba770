//! Checks for writing and reading messages: the round trip, account scoping, §8.1 idempotency
//! claims and the §7 terminal compare-and-set.

use std::sync::Arc;

use chrono::Duration;
use ma2h_core::messages::records::{Completion, Inserted, Lookup, MessageRecord};
use ma2h_protocol::envelope::Priority;
use ma2h_protocol::lifecycle::Status;

use crate::Store;
use crate::fixtures::{
    account, agent, ask, at, claim, completed, expiring_ask, message_id, notify, resolution_id, response, t0, task,
    terminal, with_seen,
};

async fn found<S: Store>(store: &S, m: &MessageRecord) -> MessageRecord {
    match store.get_message(&m.account, &m.id).await.expect("get_message") {
        Lookup::Found(r) => r,
        other => panic!("{} should be found, got {other:?}", m.id),
    }
}

async fn insert_new<S: Store>(store: &S, m: &MessageRecord) {
    let outcome = store.insert_message(m, None, None, m.created_at).await.expect("insert_message");
    assert_eq!(outcome, Inserted::New, "inserting {} without a claim", m.id);
}

/// Every field of a stored message reads back unchanged — open, terminal and delivered alike —
/// and the envelope is the same JSON, member order included (§8.2 GET returns it verbatim).
pub async fn insert_then_get_round_trips_every_field<S: Store>(store: S) {
    let (acct, bot) = (account("acme"), agent("deploybot/dev"));
    let open = expiring_ask(&acct, &bot, t0(), at(3600));

    let mut answered = task(&acct, &bot, at(-60));
    answered.priority = Priority::Urgent;
    answered.expires_at = Some(at(600));
    let rid = resolution_id();
    answered.status = Status::Completed;
    answered.response = Some(response(Status::Completed, &rid, at(-30)));
    answered.resolution_id = Some(rid);
    answered.updated_at = at(-30);
    answered.retain_until = Some(at(86_400));

    let delivered = notify(&acct, &bot, at(-10));

    for m in [&open, &answered, &delivered] {
        insert_new(&store, m).await;
        let got = found(&store, m).await;
        assert_eq!(&got, m, "round trip of {:?} {}", m.kind, m.id);
        assert_eq!(
            serde_json::to_string(&got.envelope).unwrap(),
            serde_json::to_string(&m.envelope).unwrap(),
            "envelope JSON must be byte-equal after the round trip"
        );
        assert_eq!(
            got.response.as_ref().map(|r| r.to_string()),
            m.response.as_ref().map(|r| r.to_string()),
            "response JSON must be byte-equal after the round trip"
        );
    }
}

/// Reads and writes are scoped to the account: another account's id — and an id nobody stored —
/// is `Missing`, and a foreign `complete` changes nothing (§9.1 id-enumeration guard).
pub async fn another_accounts_id_is_missing<S: Store>(store: S) {
    let (mine, theirs, bot) = (account("acme"), account("globex"), agent("bot"));
    let m = ask(&mine, &bot, t0());
    insert_new(&store, &m).await;

    assert_eq!(store.get_message(&theirs, &m.id).await.unwrap(), Lookup::Missing);
    assert_eq!(store.get_message(&mine, &message_id()).await.unwrap(), Lookup::Missing);
    let foreign = store.complete(&theirs, &m.id, &terminal(Status::Answered, at(1))).await.unwrap();
    assert_eq!(foreign, Completion::Missing, "complete from another account");
    assert_eq!(found(&store, &m).await, m, "a foreign complete must not touch the message");
    let unknown = store.complete(&mine, &message_id(), &terminal(Status::Answered, at(1))).await.unwrap();
    assert_eq!(unknown, Completion::Missing, "complete of an unknown id");
}

/// §8.1: while a claim is live, a second insert under the same `(account, agent, key)` returns
/// that claim and writes nothing; the same key under another agent or account is independent.
pub async fn live_claim_returns_existing_and_writes_nothing<S: Store>(store: S) {
    let (acct, other_acct, bot, other_bot) = (account("acme"), account("globex"), agent("bot"), agent("bot-2"));
    let first = ask(&acct, &bot, t0());
    let first_claim = claim(&first, "k-1", "fp-a", at(86_400));
    let out = store.insert_message(&first, Some(&first_claim), None, t0()).await.unwrap();
    assert_eq!(out, Inserted::New);
    assert_eq!(store.get_claim(&acct, &bot, "k-1", at(60)).await.unwrap(), Some(first_claim.clone()));

    let second = ask(&acct, &bot, at(3600));
    let second_claim = claim(&second, "k-1", "fp-b", at(90_000));
    let out = store.insert_message(&second, Some(&second_claim), None, at(3600)).await.unwrap();
    assert_eq!(out, Inserted::Existing(first_claim.clone()), "the live claim wins");
    assert_eq!(store.get_message(&acct, &second.id).await.unwrap(), Lookup::Missing, "nothing written");
    assert_eq!(store.count_open(&acct, &bot).await.unwrap(), 1);
    assert_eq!(store.get_claim(&acct, &bot, "k-1", at(3600)).await.unwrap(), Some(first_claim), "claim unchanged");

    // The same key for another agent, or in another account, is a different claim.
    for m in [ask(&acct, &other_bot, at(10)), ask(&other_acct, &bot, at(10))] {
        let c = claim(&m, "k-1", "fp-a", at(86_400));
        assert_eq!(store.insert_message(&m, Some(&c), None, at(10)).await.unwrap(), Inserted::New);
        assert_eq!(store.get_claim(&m.account, &m.agent_id, "k-1", at(10)).await.unwrap(), Some(c));
    }
    assert_eq!(store.get_claim(&acct, &bot, "k-2", at(10)).await.unwrap(), None, "unknown key");
}

/// A claim is live strictly before its `expires_at`; once expired it is no longer returned and a
/// new insert under the key replaces it (the earlier message itself stays).
pub async fn expired_claim_is_replaced<S: Store>(store: S) {
    let (acct, bot) = (account("acme"), agent("bot"));
    let first = ask(&acct, &bot, t0());
    let first_claim = claim(&first, "k", "fp-a", at(3600));
    assert_eq!(store.insert_message(&first, Some(&first_claim), None, t0()).await.unwrap(), Inserted::New);
    let just_before = at(3600) - Duration::milliseconds(1);
    assert_eq!(store.get_claim(&acct, &bot, "k", just_before).await.unwrap(), Some(first_claim));
    assert_eq!(store.get_claim(&acct, &bot, "k", at(3600)).await.unwrap(), None, "expired at expires_at");

    let second = ask(&acct, &bot, at(7200));
    let second_claim = claim(&second, "k", "fp-b", at(7200 + 86_400));
    let out = store.insert_message(&second, Some(&second_claim), None, at(7200)).await.unwrap();
    assert_eq!(out, Inserted::New, "an expired claim does not block the key");
    assert_eq!(store.get_claim(&acct, &bot, "k", at(7200)).await.unwrap(), Some(second_claim));
    assert_eq!(found(&store, &second).await, second);
    assert_eq!(found(&store, &first).await, first, "the first message is untouched");
}

/// §7: the first terminal write wins and is immutable; a later one gets `AlreadyTerminal` with
/// the winner's record. A delivered notify is already terminal.
pub async fn first_complete_wins_second_sees_already_terminal<S: Store>(store: S) {
    let (acct, bot) = (account("acme"), agent("bot"));
    let m = expiring_ask(&acct, &bot, t0(), at(3600));
    insert_new(&store, &m).await;

    let first = terminal(Status::Answered, at(60));
    let expected = completed(&m, &first);
    let applied = store.complete(&acct, &m.id, &first).await.unwrap();
    assert_eq!(applied, Completion::Applied(expected.clone()), "first write wins");

    let second = terminal(Status::Cancelled, at(61));
    match store.complete(&acct, &m.id, &second).await.unwrap() {
        Completion::AlreadyTerminal(r) => {
            assert_eq!(r, expected, "the loser sees the winner's record");
            assert_eq!(r.resolution_id, Some(first.resolution_id.clone()));
        }
        other => panic!("second complete: expected AlreadyTerminal, got {other:?}"),
    }
    assert_eq!(found(&store, &m).await, expected, "the terminal state is immutable");

    let n = notify(&acct, &bot, t0());
    insert_new(&store, &n).await;
    let on_notify = store.complete(&acct, &n.id, &terminal(Status::Answered, at(1))).await.unwrap();
    assert_eq!(on_notify, Completion::AlreadyTerminal(n), "a delivered notify is terminal");
}

/// §7 expiry vs answer in ONE atomic transition: a non-expiry terminal stamped after
/// `expires_at` is refused (the record comes back still open); one stamped exactly at it wins;
/// the expiry itself is never refused.
pub async fn complete_after_expires_at_is_refused_unless_it_is_the_expiry<S: Store>(store: S) {
    let (acct, bot) = (account("acme"), agent("bot"));
    let late = expiring_ask(&acct, &bot, t0(), at(60));
    let on_time = expiring_ask(&acct, &bot, t0(), at(60));
    insert_new(&store, &late).await;
    insert_new(&store, &on_time).await;

    let answer = terminal(Status::Answered, at(60) + Duration::milliseconds(1));
    match store.complete(&acct, &late.id, &answer).await.unwrap() {
        Completion::AlreadyTerminal(r) => assert_eq!(r.status, Status::Open, "refused, still open"),
        other => panic!("an answer after expires_at must be refused, got {other:?}"),
    }
    let expiry = terminal(Status::Expired, at(61));
    assert!(matches!(store.complete(&acct, &late.id, &expiry).await.unwrap(), Completion::Applied(_)));
    assert_eq!(found(&store, &late).await.status, Status::Expired);

    let at_deadline = terminal(Status::Answered, at(60));
    assert!(matches!(store.complete(&acct, &on_time.id, &at_deadline).await.unwrap(), Completion::Applied(_)));
}

/// §7 atomic single-writer: 8 concurrent `complete`s on one message yield exactly one `Applied`,
/// and every caller and every later read agree on its `resolution_id` (50 messages).
pub async fn concurrent_completes_have_exactly_one_winner<S: Store>(store: S) {
    let store = Arc::new(store);
    let (acct, bot) = (account("acme"), agent("bot"));
    for round in 0..50 {
        let m = ask(&acct, &bot, at(round));
        insert_new(&*store, &m).await;
        let tasks: Vec<_> = (0..8)
            .map(|i| {
                let (store, acct, id) = (Arc::clone(&store), acct.clone(), m.id.clone());
                let status = if i % 2 == 0 { Status::Answered } else { Status::Declined };
                // half the racers hand over their read of the message (the store may skip its own)
                let write = terminal(status, at(1000 + round));
                let write = if i % 2 == 0 { write } else { with_seen(write, &m) };
                tokio::spawn(async move { (write.resolution_id.clone(), store.complete(&acct, &id, &write).await) })
            })
            .collect();
        let mut winners = Vec::new();
        let mut observed = Vec::new();
        for t in tasks {
            let (mine, outcome) = t.await.expect("task");
            match outcome.expect("complete") {
                Completion::Applied(r) => {
                    assert_eq!(r.resolution_id.as_ref(), Some(&mine), "Applied carries the caller's write");
                    winners.push(mine);
                    observed.push(r.resolution_id);
                }
                Completion::AlreadyTerminal(r) => observed.push(r.resolution_id),
                Completion::Missing => panic!("{} went missing", m.id),
            }
        }
        assert_eq!(winners.len(), 1, "round {round}: exactly one complete may win, got {winners:?}");
        let winner = Some(winners[0].clone());
        assert!(observed.iter().all(|r| *r == winner), "round {round}: all observers see one resolution_id");
        assert_eq!(found(&*store, &m).await.resolution_id, winner, "round {round}: the store agrees");
    }
    assert_eq!(store.count_open(&acct, &bot).await.unwrap(), 0);
}

/// A caller's read handed to `complete` (`TerminalWrite::seen`) only saves a re-read: a current
/// copy gives the same result as none, a stale one (changed since, or already terminal) never
/// overwrites what is stored, and a copy of another message or account is not trusted.
pub async fn a_callers_read_of_the_message_never_overrides_the_store<S: Store>(store: S) {
    let (acct, bot) = (account("acme"), agent("bot"));
    let [fresh, stale, won, foreign] = [0, 1, 2, 3].map(|i| ask(&acct, &bot, at(i)));
    for m in [&fresh, &stale, &won, &foreign] {
        insert_new(&store, m).await;
    }

    let write = with_seen(terminal(Status::Answered, at(60)), &fresh);
    let expected = completed(&fresh, &write);
    assert_eq!(store.complete(&acct, &fresh.id, &write).await.unwrap(), Completion::Applied(expected.clone()));
    assert_eq!(found(&store, &fresh).await, expected, "a current copy: as if re-read");

    // stale: the caller's copy differs from what is stored (another title, another updated_at)
    let mut old = stale.clone();
    old.title = "an outdated title".into();
    old.updated_at = at(-5);
    let write = with_seen(terminal(Status::Declined, at(61)), &old);
    let expected = completed(&stale, &write);
    assert_eq!(store.complete(&acct, &stale.id, &write).await.unwrap(), Completion::Applied(expected.clone()));
    assert_eq!(found(&store, &stale).await, expected, "a stale copy is not written back");

    // already terminal since the caller read it open: the winner stands
    let first = terminal(Status::Answered, at(62));
    let winner = completed(&won, &first);
    store.complete(&acct, &won.id, &first).await.unwrap();
    let late = with_seen(terminal(Status::Declined, at(63)), &won);
    assert_eq!(store.complete(&acct, &won.id, &late).await.unwrap(), Completion::AlreadyTerminal(winner.clone()));
    assert_eq!(found(&store, &won).await, winner);

    // a copy of another message, or of the same id in another account, is ignored
    let write = with_seen(terminal(Status::Answered, at(64)), &fresh);
    let expected = completed(&foreign, &write);
    assert_eq!(store.complete(&acct, &foreign.id, &write).await.unwrap(), Completion::Applied(expected.clone()));
    let theirs = account("globex");
    let write = with_seen(terminal(Status::Answered, at(65)), &foreign);
    assert_eq!(store.complete(&theirs, &foreign.id, &write).await.unwrap(), Completion::Missing);
    assert_eq!(found(&store, &foreign).await, expected, "the other account's write changed nothing");
    assert_eq!(store.count_open(&acct, &bot).await.unwrap(), 0);
}

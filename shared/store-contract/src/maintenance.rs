//! Checks for what the sweeper, the operator listing and the §8.6 limits read: the expiry index,
//! retention with tombstones, open counts and rate counters.

use std::sync::Arc;

use chrono::Duration;
use ma2h_core::messages::records::{Completion, Inserted, Lookup, MessageRecord};
use ma2h_protocol::lifecycle::Status;

use crate::Store;
use crate::fixtures::{account, agent, ask, at, claim, expiring_ask, notify, t0, task, terminal};

async fn insert_all<S: Store>(store: &S, messages: &[&MessageRecord]) {
    for m in messages {
        assert_eq!(store.insert_message(m, None, None, m.created_at).await.unwrap(), Inserted::New);
    }
}

async fn resolve<S: Store>(store: &S, m: &MessageRecord, status: Status, when: chrono::DateTime<chrono::Utc>) {
    let outcome = store.complete(&m.account, &m.id, &terminal(status, when)).await.unwrap();
    assert!(matches!(outcome, Completion::Applied(_)), "resolving {}: {outcome:?}", m.id);
}

/// The sweeper's query: open messages with `expires_at <= now` (across accounts), earliest
/// deadline first, at most `limit`; not-yet-due, deadline-less, terminal and notify rows excluded.
pub async fn due_expiries_returns_due_open_messages_oldest_first<S: Store>(store: S) {
    let (acct, other, bot) = (account("acme"), account("globex"), agent("bot"));
    let due_3 = expiring_ask(&acct, &bot, at(-7200), at(-180));
    let due_2_other_account = expiring_ask(&other, &bot, at(-7200), at(-120));
    let due_1 = expiring_ask(&acct, &bot, at(-7200), at(-60));
    let due_now = expiring_ask(&acct, &bot, at(-7200), t0());
    let later = expiring_ask(&acct, &bot, at(-7200), t0() + Duration::milliseconds(1));
    let no_deadline = ask(&acct, &bot, at(-7200));
    let resolved = expiring_ask(&acct, &bot, at(-7200), at(-240));
    let mut delivered = notify(&acct, &bot, at(-7200));
    delivered.expires_at = Some(at(-300));
    insert_all(&store, &[&later, &due_1, &no_deadline, &due_now, &resolved, &due_3, &delivered, &due_2_other_account])
        .await;
    resolve(&store, &resolved, Status::Answered, at(-250)).await;

    let expected: Vec<_> =
        [&due_3, &due_2_other_account, &due_1, &due_now].iter().map(|m| (m.account.clone(), m.id.clone())).collect();
    assert_eq!(store.due_expiries(t0(), 100).await.unwrap(), expected, "due, oldest deadline first");
    assert_eq!(store.due_expiries(t0(), 2).await.unwrap(), expected[..2].to_vec(), "limit keeps the oldest");
    assert_eq!(store.due_expiries(at(-7200), 100).await.unwrap(), vec![], "nothing due yet");

    resolve(&store, &due_3, Status::Expired, t0()).await;
    assert_eq!(store.due_expiries(t0(), 100).await.unwrap(), expected[1..].to_vec(), "terminal ones drop out");
}

/// §8.2 retention: terminal messages past `retain_until` are purged (at most `limit` per call)
/// and then read as `Gone { agent_id }` — only in their own account — while open and retained
/// messages stay; expired claims and counters no longer count.
pub async fn purge_leaves_tombstones_and_drops_expired_state<S: Store>(store: S) {
    let (acct, other, bot) = (account("acme"), account("globex"), agent("bot/a"));
    let delivered = notify(&acct, &bot, at(-86_400 * 40)); // retained until 10 days ago
    let answered = ask(&acct, &bot, at(-86_400 * 35));
    let recent = ask(&acct, &bot, at(-3600));
    let open = expiring_ask(&acct, &bot, at(-86_400 * 40), at(-86_400 * 39)); // overdue, still open
    let keyed = claim(&answered, "k", "fp", at(-86_400 * 34));
    assert_eq!(store.insert_message(&answered, Some(&keyed), None, answered.created_at).await.unwrap(), Inserted::New);
    insert_all(&store, &[&delivered, &recent, &open]).await;
    resolve(&store, &answered, Status::Answered, at(-86_400 * 31)).await; // retained until yesterday
    resolve(&store, &recent, Status::Declined, at(-60)).await;

    if store.native_ttl() {
        // The store's TTL deletes them (its own tests check the TTL it sets); meanwhile the Hub
        // reads them as gone by their `retain_until`, which must be there, and the store must
        // not delete anything itself.
        assert_eq!(store.purge(t0(), 100).await.unwrap(), 0, "a native TTL store purges nothing itself");
        for m in [&delivered, &answered] {
            let Lookup::Found(r) = store.get_message(&acct, &m.id).await.unwrap() else { panic!("left to the TTL") };
            assert!(r.retain_until.is_some_and(|r| r <= t0()), "past retention: {:?}", r.retain_until);
        }
        assert!(
            matches!(store.get_message(&acct, &open.id).await.unwrap(), Lookup::Found(r) if r.retain_until.is_none())
        );
    } else {
        assert_eq!(store.purge(t0(), 100).await.unwrap(), 2, "the two past retention");
        for m in [&delivered, &answered] {
            assert_eq!(store.get_message(&acct, &m.id).await.unwrap(), Lookup::Gone { agent_id: bot.clone() });
            assert_eq!(store.get_message(&other, &m.id).await.unwrap(), Lookup::Missing, "another account sees 404");
            let late = store.complete(&acct, &m.id, &terminal(Status::Answered, t0())).await.unwrap();
            assert_eq!(late, Completion::Missing, "a purged message takes no writes");
        }
        assert!(matches!(store.get_message(&acct, &open.id).await.unwrap(), Lookup::Found(_)), "open is never purged");
        assert_eq!(store.purge(t0(), 100).await.unwrap(), 0, "idempotent");
    }
    assert!(matches!(store.get_message(&acct, &recent.id).await.unwrap(), Lookup::Found(_)), "still retained");

    // The expired claim no longer blocks its key.
    assert_eq!(store.get_claim(&acct, &bot, "k", t0()).await.unwrap(), None);
    let again = ask(&acct, &bot, t0());
    let c = claim(&again, "k", "fp", at(86_400));
    assert_eq!(store.insert_message(&again, Some(&c), None, t0()).await.unwrap(), Inserted::New);

    // `limit` bounds one purge.
    let batch: Vec<_> = (0..5).map(|i| notify(&acct, &bot, at(-86_400 * 31 - i))).collect();
    insert_all(&store, &batch.iter().collect::<Vec<_>>()).await;
    let counts =
        [store.purge(t0(), 2).await.unwrap(), store.purge(t0(), 2).await.unwrap(), store.purge(t0(), 2).await.unwrap()];
    assert_eq!(counts, if store.native_ttl() { [0, 0, 0] } else { [2, 2, 1] });

    // An expired counter is dropped: counting starts again at 1.
    let key = "rpm/acme/bot/purge";
    assert_eq!(store.incr_counter(key, at(60), t0()).await.unwrap(), 1);
    assert_eq!(store.incr_counter(key, at(60), t0()).await.unwrap(), 2);
    store.purge(at(61), 100).await.unwrap();
    assert_eq!(store.incr_counter(key, at(180), at(61)).await.unwrap(), 1, "an expired counter counts from 1 again");
}

/// §8.6 inbox depth counts only the agent's open asks and tasks in that account.
pub async fn count_open_counts_only_open_asks_and_tasks_of_the_agent<S: Store>(store: S) {
    let (acct, other, a, b) = (account("acme"), account("globex"), agent("a"), agent("b"));
    let (ask1, ask2, task1) = (ask(&acct, &a, at(1)), ask(&acct, &a, at(2)), task(&acct, &a, at(3)));
    let resolved = ask(&acct, &a, at(4));
    let (note, b_ask, foreign) = (notify(&acct, &a, at(5)), ask(&acct, &b, at(6)), ask(&other, &a, at(7)));
    insert_all(&store, &[&ask1, &ask2, &task1, &resolved, &note, &b_ask, &foreign]).await;
    resolve(&store, &resolved, Status::Declined, at(10)).await;

    assert_eq!(store.count_open(&acct, &a).await.unwrap(), 3);
    assert_eq!(store.count_open(&acct, &b).await.unwrap(), 1);
    assert_eq!(store.count_open(&other, &a).await.unwrap(), 1);
    assert_eq!(store.count_open(&acct, &agent("nobody")).await.unwrap(), 0);
    resolve(&store, &task1, Status::Completed, at(11)).await;
    assert_eq!(store.count_open(&acct, &a).await.unwrap(), 2);
}

/// §8.6: 50 concurrent increments of one counter return exactly 1..=50; other keys are separate.
pub async fn incr_counter_is_atomic_under_concurrency<S: Store>(store: S) {
    let store = Arc::new(store);
    let expires = at(600);
    let tasks: Vec<_> = (0..50)
        .map(|_| {
            let store = Arc::clone(&store);
            tokio::spawn(async move { store.incr_counter("rpm/acme/bot/1", expires, t0()).await.unwrap() })
        })
        .collect();
    let mut values = Vec::new();
    for t in tasks {
        values.push(t.await.expect("task"));
    }
    values.sort_unstable();
    assert_eq!(values, (1..=50).collect::<Vec<u64>>(), "every increment counted once");
    assert_eq!(store.incr_counter("rpm/acme/bot/1", expires, t0()).await.unwrap(), 51);
    assert_eq!(store.incr_counter("rpm/acme/bot/2", expires, t0()).await.unwrap(), 1, "keys are independent");
}

/// `read_counter` sees exactly what the increments left, and nothing once the window expired.
pub async fn read_counter_sees_live_counts_only<S: Store>(store: S) {
    assert_eq!(store.read_counter("flag/a", t0()).await.unwrap(), 0, "a missing counter reads 0");
    store.incr_counter("flag/a", at(60), t0()).await.unwrap();
    store.incr_counter("flag/a", at(60), t0()).await.unwrap();
    assert_eq!(store.read_counter("flag/a", at(59)).await.unwrap(), 2);
    assert_eq!(store.read_counter("flag/b", at(59)).await.unwrap(), 0, "keys are independent");
    assert_eq!(store.read_counter("flag/a", at(60)).await.unwrap(), 0, "expired at expires_at");
    assert_eq!(store.incr_counter("flag/a", at(60), at(59)).await.unwrap(), 3, "reading never counts");
}

/// A counter whose `expires_at` is at or before `now` (the Hub clock, passed in) restarts at 1
/// with the new expiry.
pub async fn incr_counter_restarts_after_expiry<S: Store>(store: S) {
    let past = at(-5);
    assert_eq!(store.incr_counter("rpm/expired", past, t0()).await.unwrap(), 1);
    assert_eq!(store.incr_counter("rpm/expired", past, t0()).await.unwrap(), 1, "an expired window restarts");

    let soon = at(60);
    assert_eq!(store.incr_counter("rpm/window", soon, t0()).await.unwrap(), 1);
    assert_eq!(store.incr_counter("rpm/window", soon, at(59)).await.unwrap(), 2);
    let later = at(120);
    assert_eq!(store.incr_counter("rpm/window", later, at(60)).await.unwrap(), 1, "restarts at expires_at");
    assert_eq!(store.incr_counter("rpm/window", later, at(61)).await.unwrap(), 2, "and counts in the new window");
}

/// §8.6 in one step (`admit`): the request window counts every submit exactly — also under
/// concurrency — and starts again in the next minute; the open count it reports is never below
/// the agent's open asks/tasks (exact, or an upper bound a store never lowers on terminals), and
/// `recount_open` at the limit is exact and re-bases what the next admission reports.
pub async fn admission_counts_the_window_and_bounds_the_open_count<S: Store>(store: S) {
    let store = Arc::new(store);
    let (acct, a) = (account("acme"), agent("bot"));
    let end = at(60);
    let tasks: Vec<_> = (0..20)
        .map(|_| {
            let (s, acct, a) = (store.clone(), acct.clone(), a.clone());
            tokio::spawn(async move { s.admit(&acct, &a, 7, end, false, t0()).await.unwrap().requests })
        })
        .collect();
    let mut seen = Vec::new();
    for t in tasks {
        seen.push(t.await.unwrap());
    }
    seen.sort_unstable();
    assert_eq!(seen, (1..=20).collect::<Vec<u64>>(), "every submit counted exactly once");
    assert_eq!(store.admit(&acct, &a, 8, at(120), false, at(60)).await.unwrap().requests, 1, "a new minute");

    // Three asks admitted and inserted, two resolved: the bound never falls below the truth.
    let asks: Vec<_> = (1..=3).map(|i| ask(&acct, &a, at(60 + i))).collect();
    for (i, m) in asks.iter().enumerate() {
        let adm = store.admit(&acct, &a, 8, at(120), true, m.created_at).await.unwrap();
        assert!(adm.open_before >= i as u64, "{adm:?} before ask {i}");
        assert_eq!(store.insert_message(m, None, None, m.created_at).await.unwrap(), Inserted::New);
    }
    resolve(&*store, &asks[0], Status::Declined, at(70)).await;
    resolve(&*store, &asks[1], Status::Answered, at(71)).await;
    let adm = store.admit(&acct, &a, 8, at(120), true, at(72)).await.unwrap();
    assert!(adm.open_before >= 1, "{adm:?}");
    assert_eq!(adm.requests, 5, "the window counts asks and other submits alike");
    // At the limit a submit recounts: exact, and what the next admission sees is re-based on it.
    assert_eq!(store.recount_open(&acct, &a, adm.open_before + 1).await.unwrap(), 1);
    let fourth = ask(&acct, &a, at(73));
    assert_eq!(store.insert_message(&fourth, None, None, fourth.created_at).await.unwrap(), Inserted::New);
    assert_eq!(store.admit(&acct, &a, 8, at(120), true, at(74)).await.unwrap().open_before, 2);
    assert_eq!(store.count_open(&acct, &a).await.unwrap(), 2);
    // Another agent's and another account's counts are their own.
    assert_eq!(store.admit(&acct, &agent("other"), 8, at(120), true, at(74)).await.unwrap().open_before, 0);
    assert_eq!(
        store.admit(&account("globex"), &a, 8, at(120), true, at(74)).await.unwrap(),
        ma2h_core::ports::Admission { requests: 1, open_before: 0 }
    );
}

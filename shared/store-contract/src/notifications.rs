//! The channel notification outbox (issue 20): create-once, the due index, the claim lease, the
//! save compare-and-set, the terminal's wake-up and the purge.

use chrono::Duration;
use ma2h_core::channels::outbox::{Notification, Step, StepKind, StepStatus};

use crate::Store;
use crate::fixtures::{account, at, human, message_id, t0};

fn item(acct: &str, due_in: Option<i64>) -> Notification {
    Notification {
        account: account(acct),
        message_id: message_id(),
        version: 1,
        created_at: t0(),
        next_due: due_in.map(at),
        retain_until: None,
        route: "all".into(),
        steps: vec![
            Step::pending("ops", StepKind::Created, t0()),
            Step::pending("ops", StepKind::Reminder, t0() + Duration::minutes(30)),
        ],
    }
}

pub async fn the_notification_outbox_is_created_once_claimed_once_and_saved_by_compare_and_set<S: Store>(store: S) {
    let first = item("acme", Some(0));
    assert!(store.create_notification(&first).await.unwrap(), "a new item is written");
    let mut again = first.clone();
    again.route = "other".into();
    assert!(!store.create_notification(&again).await.unwrap(), "a second create for the message writes nothing");
    let read = store.get_notification(&first.account, &first.message_id).await.unwrap().expect("stored");
    assert_eq!(read, first, "every field round-trips");
    assert!(store.get_notification(&account("other"), &first.message_id).await.unwrap().is_none(), "scoped by account");

    // the due index: due now, not before
    let later = item("acme", Some(600));
    store.create_notification(&later).await.unwrap();
    let done = item("acme", None);
    store.create_notification(&done).await.unwrap();
    let due = store.due_notifications(at(0), 10).await.unwrap();
    assert_eq!(due, vec![(first.account.clone(), first.message_id.clone())], "only the due item, never a finished one");
    assert_eq!(store.due_notifications(at(600), 10).await.unwrap().len(), 2);

    // the claim: once, leased, version bumped
    let claimed = store.claim_notification(&first.account, &first.message_id, at(0), at(120)).await.unwrap();
    let claimed = claimed.expect("a due item is claimed");
    assert_eq!(claimed.version, 2);
    assert_eq!(claimed.next_due, Some(at(120)), "leased");
    assert!(
        store.claim_notification(&first.account, &first.message_id, at(1), at(121)).await.unwrap().is_none(),
        "a leased item is not claimed again before its lease ends"
    );
    assert!(store.due_notifications(at(1), 10).await.unwrap().is_empty());
    assert!(
        store.claim_notification(&later.account, &later.message_id, at(0), at(120)).await.unwrap().is_none(),
        "an item not yet due is not claimed"
    );

    // the save: at the expected version only
    let mut worked = claimed.clone();
    worked.steps[0].status = StepStatus::Sent;
    worked.steps[0].external_ref = Some("C1 1.2".into());
    worked.next_due = Some(t0() + Duration::minutes(30));
    worked.version = 3;
    assert!(!store.save_notification(&worked, 1).await.unwrap(), "a stale version is refused");
    assert!(store.save_notification(&worked, 2).await.unwrap());
    assert_eq!(store.get_notification(&first.account, &first.message_id).await.unwrap(), Some(worked.clone()));

    // the wake-up: due now, version bumped (so a save under the old version is refused)
    store.wake_notification(&first.account, &first.message_id, at(5)).await.unwrap();
    let woken = store.get_notification(&first.account, &first.message_id).await.unwrap().unwrap();
    assert_eq!((woken.version, woken.next_due), (4, Some(at(5))));
    assert_eq!(woken.steps, worked.steps, "a wake-up never touches the steps");
    let mut stale = worked.clone();
    stale.version = 4;
    assert!(!store.save_notification(&stale, 3).await.unwrap());
    store.wake_notification(&account("acme"), &message_id(), at(5)).await.unwrap();
    assert!(
        store.get_notification(&account("acme"), &message_id()).await.unwrap().is_none(),
        "no item: nothing written"
    );

    // finished: out of the due index, purged after retention (or left to a native TTL)
    let mut finished = woken.clone();
    finished.next_due = None;
    finished.retain_until = Some(at(3600));
    finished.version = 5;
    assert!(store.save_notification(&finished, 4).await.unwrap());
    assert!(store.due_notifications(at(7200), 10).await.unwrap().iter().all(|(_, id)| id != &first.message_id));
    let purged = store.purge_notifications(at(3599), 10).await.unwrap();
    assert_eq!(purged, 0, "not before retain_until");
    let purged = store.purge_notifications(at(3600), 10).await.unwrap();
    if store.native_ttl() {
        assert_eq!(purged, 0, "a store with a native TTL purges nothing itself");
    } else {
        assert_eq!(purged, 1);
        assert!(store.get_notification(&first.account, &first.message_id).await.unwrap().is_none());
    }
}

pub async fn concurrent_claims_of_one_notification_have_one_winner<S: Store>(store: S) {
    let store = std::sync::Arc::new(store);
    let x = item("acme", Some(0));
    store.create_notification(&x).await.unwrap();
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let (store, x) = (store.clone(), x.clone());
        tasks.push(tokio::spawn(async move {
            store.claim_notification(&x.account, &x.message_id, at(0), at(120)).await.unwrap().is_some()
        }));
    }
    let mut won = 0;
    for t in tasks {
        won += usize::from(t.await.unwrap());
    }
    assert_eq!(won, 1, "exactly one of eight concurrent claims wins");
}

pub async fn a_wake_up_never_breaks_a_running_lease<S: Store>(store: S) {
    let x = item("acme", Some(0));
    store.create_notification(&x).await.unwrap();
    let claimed = store.claim_notification(&x.account, &x.message_id, at(0), at(120)).await.unwrap().expect("claimed");
    // a terminal wakes the item while its worker is sending
    store.wake_notification(&x.account, &x.message_id, at(1)).await.unwrap();
    assert_eq!(store.due_notifications(at(1), 10).await.unwrap().len(), 1, "woken: due again");
    assert!(
        store.claim_notification(&x.account, &x.message_id, at(1), at(121)).await.unwrap().is_none(),
        "but nobody else may claim it while the lease runs"
    );
    // the lease holder's save (after re-reading the woken version) ends the lease
    let woken = store.get_notification(&x.account, &x.message_id).await.unwrap().unwrap();
    let mut saved = claimed.clone();
    saved.next_due = Some(at(1));
    saved.version = woken.version + 1;
    assert!(store.save_notification(&saved, woken.version).await.unwrap());
    assert!(
        store.claim_notification(&x.account, &x.message_id, at(2), at(122)).await.unwrap().is_some(),
        "after the save, the due item is claimed again"
    );
    // and a lease that ran out (its worker died) is claimable once more
    assert!(store.claim_notification(&x.account, &x.message_id, at(121), at(240)).await.unwrap().is_none());
    assert!(store.claim_notification(&x.account, &x.message_id, at(122), at(240)).await.unwrap().is_some());
}

/// Issue 39: a triage record is created once, replaced only at its version, read back in the
/// asked order (`None` where there is none, another account's too), and purged after its
/// `retain_until` where the store does not expire it natively.
pub async fn triage_records_are_compare_and_set_per_message<S: Store>(store: S) {
    use ma2h_core::messages::triage::{Claim, TriageData, TriageRecord};
    let acct = account("triage");
    let (a, b) = (message_id(), message_id());
    let mut data = TriageData { claim: Some(Claim { by: human("alice"), at: at(0) }), ..TriageData::default() };
    data.snoozes.insert("bob".into(), at(3600));
    let first = TriageRecord { account: acct.clone(), message_id: a.clone(), version: 1, data, retain_until: at(60) };
    assert!(store.put_triage(&first, None).await.unwrap());
    assert!(!store.put_triage(&first, None).await.unwrap(), "created once");
    let got = store.get_triage(&acct, &[b.clone(), a.clone()]).await.unwrap();
    assert_eq!(got, vec![None, Some(first.clone())]);
    assert_eq!(store.get_triage(&account("triage-other"), std::slice::from_ref(&a)).await.unwrap(), vec![None]);

    let mut second = first.clone();
    second.version = 2;
    second.data.claim = None;
    assert!(!store.put_triage(&second, Some(7)).await.unwrap(), "a stale version writes nothing");
    assert!(store.put_triage(&second, Some(1)).await.unwrap());
    assert!(!store.put_triage(&second, Some(1)).await.unwrap(), "the loser of a race writes nothing");
    assert_eq!(store.get_triage(&acct, std::slice::from_ref(&a)).await.unwrap(), vec![Some(second)]);

    let purged = store.purge_triage(at(61), 100).await.unwrap();
    let left = store.get_triage(&acct, &[a]).await.unwrap();
    if store.native_ttl() {
        assert_eq!(purged, 0, "TTL removes it, not the sweeper");
    } else {
        assert_eq!((purged, left), (1, vec![None]));
    }
}

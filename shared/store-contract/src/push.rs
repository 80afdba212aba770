//! Checks for the §8.3 push outbox and the §9.4 bindings / secret names.

use std::sync::Arc;

use ma2h_core::messages::records::{Completion, Lookup, PushStatus, PushTrack, TerminalWrite};
use ma2h_protocol::lifecycle::Status;

use crate::Store;
use crate::fixtures::{account, agent, ask, at, t0, terminal};

fn with_push(mut w: TerminalWrite) -> TerminalWrite {
    w.push = true;
    w
}

/// A terminal write with `push` leaves a pending obligation due at the resolution, atomically;
/// one without leaves none.
pub async fn a_push_terminal_writes_the_obligation_atomically<S: Store>(store: S) {
    let (acct, bot) = (account("acme"), agent("bot"));
    let (pushed, pulled) = (ask(&acct, &bot, t0()), ask(&acct, &bot, t0()));
    for m in [&pushed, &pulled] {
        store.insert_message(m, None, None, t0()).await.unwrap();
    }
    let Completion::Applied(rec) =
        store.complete(&acct, &pushed.id, &with_push(terminal(Status::Answered, at(10)))).await.unwrap()
    else {
        panic!("applied")
    };
    assert_eq!(rec.push, Some(PushTrack::pending(at(10))));
    let Completion::Applied(rec) =
        store.complete(&acct, &pulled.id, &terminal(Status::Answered, at(10))).await.unwrap()
    else {
        panic!("applied")
    };
    assert_eq!(rec.push, None);
    // a losing CAS writes no obligation either
    let lost = store.complete(&acct, &pulled.id, &with_push(terminal(Status::Declined, at(11)))).await.unwrap();
    assert!(matches!(lost, Completion::AlreadyTerminal(r) if r.push.is_none()));
}

/// Due pushes are claimed once (the lease moves the due time), in due order, up to the limit;
/// a recorded attempt replaces the track.
pub async fn due_pushes_are_claimed_once_and_attempts_recorded<S: Store>(store: S) {
    let store = Arc::new(store);
    let (acct, bot) = (account("acme"), agent("bot"));
    let mut ids = Vec::new();
    for i in 0..3 {
        let m = ask(&acct, &bot, t0());
        store.insert_message(&m, None, None, t0()).await.unwrap();
        store.complete(&acct, &m.id, &with_push(terminal(Status::Answered, at(10 + i)))).await.unwrap();
        ids.push(m.id);
    }
    assert!(store.claim_due_pushes(at(9), at(100), 10).await.unwrap().is_empty(), "not due yet");
    let first = store.claim_due_pushes(at(11), at(100), 10).await.unwrap();
    assert_eq!(first.iter().map(|(_, id)| id.clone()).collect::<Vec<_>>(), ids[..2].to_vec(), "due order");
    // concurrent claimers never get the same entry
    let (a, b) = tokio::join!(store.claim_due_pushes(at(50), at(100), 10), store.claim_due_pushes(at(50), at(100), 10));
    let (a, b) = (a.unwrap(), b.unwrap());
    assert_eq!(a.len() + b.len(), 1, "only the third was still due");
    // after the lease it is due again
    assert_eq!(store.claim_due_pushes(at(100), at(200), 1).await.unwrap().len(), 1, "limit respected");

    let done = PushTrack {
        status: PushStatus::Delivered,
        attempts: 2,
        next_attempt_at: None,
        last_error: None,
        delivered_at: Some(at(101)),
    };
    store.record_push(&acct, &ids[0], &done).await.unwrap();
    match store.get_message(&acct, &ids[0]).await.unwrap() {
        Lookup::Found(r) => assert_eq!(r.push, Some(done)),
        other => panic!("{other:?}"),
    }
    let retry = PushTrack {
        status: PushStatus::Pending,
        attempts: 1,
        next_attempt_at: Some(at(300)),
        last_error: Some("503".into()),
        delivered_at: None,
    };
    store.record_push(&acct, &ids[1], &retry).await.unwrap();
    let due: Vec<_> =
        store.claim_due_pushes(at(1000), at(2000), 10).await.unwrap().into_iter().map(|(_, id)| id).collect();
    assert!(due.contains(&ids[1]) && !due.contains(&ids[0]), "delivered entries are never due");
}

/// Bindings and secret names are per (account, agent); deletes report whether anything existed.
pub async fn bindings_and_secret_names_are_scoped<S: Store>(store: S) {
    let (acct, other_acct, bot, other) = (account("acme"), account("globex"), agent("bot"), agent("other"));
    store.put_binding(&acct, &bot, "b.example").await.unwrap();
    store.put_binding(&acct, &bot, "a.example").await.unwrap();
    store.put_binding(&acct, &bot, "a.example").await.unwrap();
    assert_eq!(store.list_bindings(&acct, &bot).await.unwrap(), ["a.example", "b.example"]);
    assert!(store.list_bindings(&acct, &other).await.unwrap().is_empty());
    assert!(store.list_bindings(&other_acct, &bot).await.unwrap().is_empty());
    assert!(store.delete_binding(&acct, &bot, "a.example").await.unwrap());
    assert!(!store.delete_binding(&acct, &bot, "a.example").await.unwrap());

    store.put_secret(&acct, &bot, "cb", b"x").await.unwrap();
    store.put_secret(&acct, &bot, "tok", b"y").await.unwrap();
    store.put_secret(&other_acct, &bot, "elsewhere", b"z").await.unwrap();
    assert_eq!(store.list_secrets(&acct, &bot).await.unwrap(), ["cb", "tok"]);
    assert!(store.delete_secret(&acct, &bot, "cb").await.unwrap());
    assert!(!store.delete_secret(&acct, &bot, "cb").await.unwrap());
    assert_eq!(store.get_secret(&acct, &bot, "cb").await.unwrap(), None);
    assert_eq!(store.list_secrets(&acct, &bot).await.unwrap(), ["tok"]);
}

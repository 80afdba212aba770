//! Store behaviour the inter-agent leg relies on (§8.7.1, §8.7.2, §14.2, §8.0): the addressed
//! insert's atomic `message` entry, principal-addressed claims, stream claims, the orphan rule,
//! bounce scope, and the account policy's compare-and-set.

use std::collections::HashSet;
use std::sync::Arc;

use ma2h_core::inter_agent::policy::AccountPolicy;
use ma2h_core::mailbox::model::{Audience, Claimer, EntryKind, MailboxEntry, Track};
use ma2h_core::messages::records::Inserted;
use ma2h_protocol::ids::SessionId;
use serde_json::json;

use crate::Store;
use crate::fixtures::{account, agent, ask, at, claim};
use crate::mailbox::{directive, mailbox};

fn sess(n: u128) -> SessionId {
    SessionId::from_parts(1_780_000_000_000, n)
}

fn as_message(mut e: MailboxEntry, key: &str, audience: Audience) -> MailboxEntry {
    e.key = key.to_owned();
    e.kind = EntryKind::Message;
    e.audience = audience;
    e.payload =
        json!({"ma2h_version": "0.5", "type": "notify", "id": key, "from": "agent:a", "to": "agent:b", "title": "t"});
    e
}

fn drain_as(s: &SessionId) -> Claimer {
    Claimer { session: Some(s.clone()), evidence: true }
}

pub async fn an_addressed_insert_commits_its_entry_with_the_message_or_not_at_all<S: Store>(store: S) {
    let (acct, bot) = (account("acct-a"), agent("bot"));
    let m = ask(&acct, &bot, at(0));
    let c = claim(&m, "k1", "fp", at(86_400));
    let dest = mailbox("acct-a", "worker");
    let entry = as_message(directive(&dest, at(0)), m.id.as_str(), Audience::Sessions);
    assert_eq!(store.insert_message(&m, Some(&c), Some((&entry, 10)), at(0)).await.unwrap(), Inserted::New);
    let stored = store.get_entry(&acct, m.id.as_str()).await.unwrap().expect("the entry was written");
    assert_eq!(
        (stored.kind, stored.audience.clone(), stored.payload.clone()),
        (EntryKind::Message, Audience::Sessions, entry.payload.clone())
    );
    // A replay of the key writes neither a second message nor a second entry.
    let mut again = ask(&acct, &bot, at(1));
    again.id = crate::fixtures::message_id();
    let c2 = claim(&again, "k1", "fp", at(86_400));
    let e2 = as_message(directive(&dest, at(1)), again.id.as_str(), Audience::Sessions);
    assert!(matches!(
        store.insert_message(&again, Some(&c2), Some((&e2, 10)), at(1)).await.unwrap(),
        Inserted::Existing(_)
    ));
    assert!(store.get_entry(&acct, again.id.as_str()).await.unwrap().is_none(), "nothing of the refused insert");
    // The depth cap counts the entry's audience partition: full for more principal-addressed
    // mail, while the human's directives (another audience) still fit.
    let mut third = ask(&acct, &bot, at(2));
    third.id = crate::fixtures::message_id();
    let e3 = as_message(directive(&dest, at(2)), third.id.as_str(), Audience::Sessions);
    assert_eq!(store.insert_message(&third, None, Some((&e3, 1)), at(2)).await.unwrap(), Inserted::MailboxFull);
    assert!(matches!(
        store.get_message(&acct, &third.id).await.unwrap(),
        ma2h_core::messages::records::Lookup::Missing
    ));
    assert_eq!(store.enqueue(&directive(&dest, at(2)), 1).await.unwrap(), ma2h_core::mailbox::model::Enqueued::New);
}

pub async fn principal_addressed_entries_reach_only_session_drains_one_claimant_per_window<S: Store>(store: S) {
    let store = Arc::new(store);
    let mb = mailbox("acct-a", "worker");
    let entries: Vec<MailboxEntry> =
        (0..20).map(|i| as_message(directive(&mb, at(i)), &format!("msg_{i:02}"), Audience::Sessions)).collect();
    for e in &entries {
        store.enqueue(e, 1000).await.unwrap();
    }
    let bare = Claimer { session: None, evidence: true };
    let seen = store.claim(&mb, &Audience::for_drain(None), &bare, at(30), at(90), 50).await.unwrap();
    assert!(seen.entries.is_empty(), "§8.7.1: a session-less drain never sees them");
    // Eight sibling sessions drain concurrently: every entry goes to exactly one of them.
    let tasks: Vec<_> = (0..8u128)
        .map(|n| {
            let (store, mb) = (store.clone(), mb.clone());
            tokio::spawn(async move {
                let s = sess(n + 1);
                let mut got = Vec::new();
                loop {
                    let c = store
                        .claim(&mb, &Audience::for_drain(Some(&s)), &drain_as(&s), at(30), at(90), 2)
                        .await
                        .unwrap();
                    if c.entries.is_empty() {
                        return got;
                    }
                    got.extend(c.entries.into_iter().map(|e| (e.key, e.claimant)));
                }
            })
        })
        .collect();
    let mut all = Vec::new();
    for t in tasks {
        all.extend(t.await.unwrap());
    }
    let keys: HashSet<&String> = all.iter().map(|(k, _)| k).collect();
    assert_eq!((all.len(), keys.len()), (20, 20), "each entry claimed once in the window");
    assert!(all.iter().all(|(_, who)| who.is_some()), "each claim records its session");
}

pub async fn a_stream_claim_starts_the_window_without_delivery_evidence_and_can_be_acked<S: Store>(store: S) {
    let mb = mailbox("acct-a", "worker");
    let s = sess(7);
    let e = as_message(directive(&mb, at(0)), "msg_stream", Audience::Session(s.clone()));
    store.enqueue(&e, 10).await.unwrap();
    let push = Claimer { session: Some(s.clone()), evidence: false };
    let got = store.claim(&mb, &Audience::for_drain(Some(&s)), &push, at(1), at(61), 5).await.unwrap();
    assert_eq!(got.entries.len(), 1);
    assert_eq!((got.entries[0].delivered_at, got.entries[0].deliveries), (None, 1), "§8.7.2: provisional");
    assert_eq!(got.entries[0].claimant.as_ref(), Some(&s));
    let hidden = store.claim(&mb, &Audience::for_drain(Some(&s)), &drain_as(&s), at(2), at(62), 5).await.unwrap();
    assert!(hidden.entries.is_empty(), "the push started the visibility window");
    let ack = ma2h_core::mailbox::model::AckRecord { by: "agent:worker".into(), acked_at: at(3), note: None };
    let acked = store.ack_entries(&mb, std::slice::from_ref(&e.key), &ack, at(999)).await.unwrap();
    assert_eq!(acked.len(), 1, "an entry returned once, by push, can be acked");
    assert!(matches!(acked[0].track(at(4)), Track::Acknowledged { delivered_at: None, .. }));
}

pub async fn a_session_bounce_spares_response_and_receipt_entries_and_returns_what_it_closed<S: Store>(store: S) {
    let mb = mailbox("acct-a", "worker");
    let s = sess(9);
    let mut response = directive(&mb, at(0));
    response.kind = EntryKind::Response;
    response.key = "res_1".into();
    response.audience = Audience::Session(s.clone());
    let mut receipt = directive(&mb, at(0));
    receipt.kind = EntryKind::Receipt;
    receipt.key = "rcpt_1".into();
    receipt.audience = Audience::Session(s.clone());
    let message = as_message(directive(&mb, at(0)), "msg_b", Audience::Session(s.clone()));
    let mut command = directive(&mb, at(0));
    command.audience = Audience::Session(s.clone());
    for e in [&response, &receipt, &message, &command] {
        store.enqueue(e, 10).await.unwrap();
    }
    let bounced = store.bounce_entries(&mb, &s, at(5), at(999), 10).await.unwrap();
    let mut keys: Vec<String> = bounced.iter().map(|e| e.key.clone()).collect();
    keys.sort();
    let mut want = vec![command.key.clone(), message.key.clone()];
    want.sort();
    assert_eq!(keys, want, "§14.2: command entries bounce; responses and receipts never do");
    assert!(bounced.iter().all(|e| matches!(e.track(at(6)), Track::Bounced { .. })));
    assert!(store.get_entry(&mb.account, "res_1").await.unwrap().unwrap().closed.is_none());
}

pub async fn a_drained_command_entry_is_an_orphan_when_its_retention_lapses<S: Store>(store: S) {
    let mb = mailbox("acct-a", "worker");
    let s = sess(3);
    let mut seen = as_message(directive(&mb, at(0)), "msg_seen", Audience::Sessions);
    seen.deadline = at(10);
    let mut unseen = as_message(directive(&mb, at(0)), "msg_unseen", Audience::Sessions);
    unseen.deadline = at(10);
    // A directive at its retention is an orphan too; one at its own expiry is not.
    let mut plain = directive(&mb, at(0));
    plain.deadline = at(10);
    let mut timed_directive = directive(&mb, at(0));
    timed_directive.deadline = at(10);
    timed_directive.payload["expires_at"] = json!("2030-01-01T00:00:10Z");
    // An expiry later than the retention: the retention is the deadline, so an orphan.
    let mut late = as_message(directive(&mb, at(0)), "msg_late", Audience::Sessions);
    late.deadline = at(10);
    late.payload["expires_at"] = json!("2031-01-01T00:00:00Z");
    // Its own expires_at is the deadline: seen but unanswered stays `delivered` (§14.2).
    let mut timed = as_message(directive(&mb, at(0)), "msg_timed", Audience::Sessions);
    timed.deadline = at(10);
    timed.payload["expires_at"] = json!("2030-01-01T00:00:10Z");
    store.enqueue(&seen, 10).await.unwrap();
    store.enqueue(&timed, 10).await.unwrap();
    store.enqueue(&late, 10).await.unwrap();
    let c = store.claim(&mb, &Audience::for_drain(Some(&s)), &drain_as(&s), at(1), at(61), 3).await.unwrap();
    let mut got: Vec<&str> = c.entries.iter().map(|e| e.key.as_str()).collect();
    got.sort_unstable();
    assert_eq!(got, ["msg_late", "msg_seen", "msg_timed"]);
    store.enqueue(&unseen, 10).await.unwrap();
    store.enqueue(&plain, 10).await.unwrap();
    store.enqueue(&timed_directive, 10).await.unwrap();
    store
        .claim(&mb, &Audience::for_drain(None), &Claimer { session: None, evidence: true }, at(2), at(62), 5)
        .await
        .unwrap();
    let closed = store.close_due_entries(at(11), at(999), 10).await.unwrap();
    let by_key = |k: &str| closed.iter().find(|e| e.key == k).unwrap_or_else(|| panic!("{k} closed")).track(at(12));
    assert!(matches!(by_key("msg_seen"), Track::Bounced { delivered_at: Some(_), .. }), "seen, then orphaned");
    assert_eq!(by_key("msg_seen").prior().map(|p| p.as_str()), Some("delivered"));
    assert_eq!(by_key("msg_unseen"), Track::Expired, "never seen: expired, no prior");
    assert_eq!(
        by_key(&plain.key).prior().map(|p| p.as_str()),
        Some("delivered"),
        "a drained directive at its retention: orphaned"
    );
    assert_eq!(
        by_key("msg_late").prior().map(|p| p.as_str()),
        Some("delivered"),
        "an expiry past the retention does not save it"
    );
    assert!(matches!(by_key(&timed_directive.key), Track::Delivered { .. }), "a directive at its own expiry");
    assert!(matches!(by_key("msg_timed"), Track::Delivered { .. }), "its own expiry: seen, unanswered");
    let orphan = store.get_entry(&mb.account, "msg_seen").await.unwrap().unwrap();
    assert_eq!(orphan.claimant, Some(s), "the receipt names the last claimant");
}

pub async fn the_account_policy_is_written_by_compare_and_set<S: Store>(store: S) {
    let acct = account("acct-a");
    assert_eq!(store.get_account_policy(&acct).await.unwrap(), None);
    let mut p = AccountPolicy { version: 1, inter_agent: true, ..AccountPolicy::default() };
    p.allowlists.insert("worker".into(), ["boss".to_owned()].into());
    assert!(store.put_account_policy(&acct, &p).await.unwrap());
    assert!(!store.put_account_policy(&acct, &p).await.unwrap(), "version 1 exists: refused");
    assert_eq!(store.get_account_policy(&acct).await.unwrap(), Some(p.clone()));
    let stale = AccountPolicy { version: 3, ..p.clone() };
    assert!(!store.put_account_policy(&acct, &stale).await.unwrap(), "skipping a version is refused");
    let next = AccountPolicy { version: 2, inter_agent: false, ..p.clone() };
    assert!(store.put_account_policy(&acct, &next).await.unwrap());
    assert_eq!(store.get_account_policy(&acct).await.unwrap(), Some(next));
    assert_eq!(store.get_account_policy(&account("acct-b")).await.unwrap(), None, "per account");
}

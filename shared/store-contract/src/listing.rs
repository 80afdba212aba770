//! Checks for the operator listing: summaries, filters applied before the page is cut, the
//! listing order, keyset pages, and open counts over every open message — including when one
//! agent floods the account (issue: a message beyond the first 500 must never vanish).

use ma2h_core::messages::listing::{ListCursor, ListFilter, ListPage, ListQuery, MessageSummary};
use ma2h_core::messages::records::{Completion, Inserted, MessageRecord};
use ma2h_protocol::envelope::{MessageType, Priority};
use ma2h_protocol::ids::{AccountId, AgentId, MessageId};
use ma2h_protocol::lifecycle::Status;
use ma2h_protocol::time::Timestamp;
use serde_json::json;

use crate::Store;
use crate::fixtures::{account, agent, ask, at, notify, task, terminal};

async fn insert_all<S: Store>(store: &S, messages: &[&MessageRecord]) {
    for m in messages {
        assert_eq!(store.insert_message(m, None, None, m.created_at).await.unwrap(), Inserted::New);
    }
}

async fn resolve<S: Store>(store: &S, m: &MessageRecord, status: Status, when: Timestamp) -> MessageRecord {
    match store.complete(&m.account, &m.id, &terminal(status, when)).await.unwrap() {
        Completion::Applied(r) => r,
        other => panic!("resolving {}: {other:?}", m.id),
    }
}

fn query(open: bool, filter: ListFilter, limit: usize) -> ListQuery {
    ListQuery { open, filter, after: None, limit }
}

async fn page<S: Store>(store: &S, acct: &AccountId, q: &ListQuery) -> ListPage {
    store.list_messages(acct, q).await.unwrap()
}

fn ids(items: &[MessageSummary]) -> Vec<MessageId> {
    items.iter().map(|s| s.id.clone()).collect()
}

fn of(messages: &[&MessageRecord]) -> Vec<MessageId> {
    messages.iter().map(|m| m.id.clone()).collect()
}

/// Every page of `q` from the first, following `next`; checks each page's size.
async fn all_pages<S: Store>(store: &S, acct: &AccountId, mut q: ListQuery) -> Vec<MessageId> {
    let mut out = Vec::new();
    loop {
        let p = page(store, acct, &q).await;
        assert!(p.items.len() <= q.limit, "a page holds at most `limit` rows");
        out.extend(ids(&p.items));
        match p.next {
            Some(next) => {
                assert_eq!(p.items.len(), q.limit, "only a full page has a next page");
                assert_eq!(Some(&next), p.items.last().map(ListCursor::of).as_ref(), "next is the last row's position");
                q.after = Some(next);
            }
            None => return out,
        }
    }
}

/// A message with the given priority, project and tags.
fn dressed(mut m: MessageRecord, priority: Priority, project: Option<&str>, tags: &[&str]) -> MessageRecord {
    m.priority = priority;
    m.envelope["priority"] = json!(priority.as_str());
    match project {
        Some(p) => m.envelope["agent"]["project"] = json!(p),
        None => {
            m.envelope["agent"].as_object_mut().unwrap().remove("project");
        }
    }
    m.envelope["tags"] = json!(tags);
    m
}

/// The listing returns summaries equal to the records' (project, tags, actor and comment
/// included); `open` lists status `open` only, otherwise every terminal status (a delivered
/// notify included); kind, priority, agent, project and tag filters combine; other accounts never
/// appear.
pub async fn list_messages_filters_and_returns_summaries<S: Store>(store: S) {
    let (acct, other, a, b) = (account("acme"), account("globex"), agent("a"), agent("b"));
    let a_ask = dressed(ask(&acct, &a, at(1)), Priority::High, Some("infra"), &["deploy", "prod"]);
    let a_task = dressed(task(&acct, &a, at(2)), Priority::Low, Some("web"), &["prod"]);
    let b_ask = dressed(ask(&acct, &b, at(3)), Priority::High, None, &[]);
    let a_done = ask(&acct, &a, at(4));
    let b_note = notify(&acct, &b, at(5));
    let foreign = ask(&other, &a, at(6));
    insert_all(&store, &[&a_ask, &a_task, &b_ask, &a_done, &b_note, &foreign]).await;
    let a_done = resolve(&store, &a_done, Status::Answered, at(20)).await;

    let open = page(&store, &acct, &query(true, ListFilter::default(), 100)).await;
    assert_eq!(ids(&open.items), of(&[&a_ask, &b_ask, &a_task]), "high first (oldest first), then low");
    assert_eq!(open.next, None);
    let want: Vec<MessageSummary> = [&a_ask, &b_ask, &a_task].iter().map(|m| MessageSummary::from(*m)).collect();
    assert_eq!(open.items, want, "summaries carry project and tags as stored");
    let done = page(&store, &acct, &query(false, ListFilter::default(), 100)).await;
    assert_eq!(ids(&done.items), of(&[&a_done, &b_note]), "terminal incl. delivered notify, newest first");
    assert_eq!(done.items[0], MessageSummary::from(&a_done), "actor, comment and resolution id of the Response");
    assert_eq!(done.items[0].actor.as_deref(), Some("human:alice"));

    let f = |kind, priority, agent_id: Option<&AgentId>, project: Option<&str>, tag: Option<&str>| ListFilter {
        kind,
        priority,
        agent_id: agent_id.cloned(),
        project: project.map(Into::into),
        tag: tag.map(Into::into),
    };
    let cases: Vec<(ListFilter, Vec<MessageId>)> = vec![
        (f(Some(MessageType::Ask), None, None, None, None), of(&[&a_ask, &b_ask])),
        (f(None, Some(Priority::Low), None, None, None), of(&[&a_task])),
        (f(None, Some(Priority::Urgent), None, None, None), vec![]),
        (f(None, None, Some(&a), None, None), of(&[&a_ask, &a_task])),
        (f(None, None, None, Some("web"), None), of(&[&a_task])),
        (f(None, None, None, None, Some("prod")), of(&[&a_ask, &a_task])),
        (f(None, None, None, None, Some("deploy")), of(&[&a_ask])),
        (f(None, None, None, None, Some("dep")), vec![]),
        (f(Some(MessageType::Task), None, Some(&b), None, None), vec![]),
        (f(None, Some(Priority::High), Some(&a), Some("infra"), Some("prod")), of(&[&a_ask])),
    ];
    for (filter, want) in cases {
        let got = page(&store, &acct, &query(true, filter.clone(), 100)).await;
        assert_eq!(ids(&got.items), want, "open listing filtered by {filter:?}");
    }
    let notes = f(Some(MessageType::Notify), None, Some(&b), None, None);
    assert_eq!(ids(&page(&store, &acct, &query(false, notes, 100)).await.items), of(&[&b_note]));
    let in_other = page(&store, &other, &query(true, ListFilter::default(), 100)).await;
    assert_eq!(ids(&in_other.items), of(&[&foreign]), "accounts are separate");
}

/// Open: most urgent first, then oldest, then id; terminal: newest update first. Keyset pages
/// cover the listing exactly once, and a page continues after its cursor even when that row has
/// since left the listing.
pub async fn listings_are_ordered_and_paged_by_keyset<S: Store>(store: S) {
    let (acct, bot) = (account("acme"), agent("bot"));
    let low_old = dressed(ask(&acct, &bot, at(1)), Priority::Low, None, &[]);
    let urgent_new = dressed(ask(&acct, &bot, at(3)), Priority::Urgent, None, &[]);
    let normal_old = dressed(ask(&acct, &bot, at(1)), Priority::Normal, None, &[]);
    let normal_twin = dressed(task(&acct, &bot, at(1)), Priority::Normal, None, &[]);
    let normal_new = dressed(task(&acct, &bot, at(2)), Priority::Normal, None, &[]);
    insert_all(&store, &[&low_old, &urgent_new, &normal_new, &normal_twin, &normal_old]).await;
    // Same instant: the id (minted in order) breaks the tie.
    let order = of(&[&urgent_new, &normal_old, &normal_twin, &normal_new, &low_old]);
    assert_eq!(ids(&page(&store, &acct, &query(true, ListFilter::default(), 10)).await.items), order);
    for limit in [1, 2, 3, 5] {
        let got = all_pages(&store, &acct, query(true, ListFilter::default(), limit)).await;
        assert_eq!(got, order, "pages of {limit} cover the open listing once, in order");
    }
    let normal = ListFilter { priority: Some(Priority::Normal), ..ListFilter::default() };
    assert_eq!(all_pages(&store, &acct, query(true, normal, 1)).await, order[1..4].to_vec(), "priority pages");

    // The cursor row is resolved between pages: the next page still starts right after it.
    let first = page(&store, &acct, &query(true, ListFilter::default(), 2)).await;
    assert_eq!(ids(&first.items), order[..2].to_vec());
    resolve(&store, &normal_old, Status::Declined, at(10)).await;
    resolve(&store, &low_old, Status::Answered, at(20)).await;
    let rest = page(&store, &acct, &ListQuery { after: first.next, ..query(true, ListFilter::default(), 10) }).await;
    assert_eq!(ids(&rest.items), of(&[&normal_twin, &normal_new]));

    resolve(&store, &normal_twin, Status::Completed, at(20)).await;
    let done_order = of(&[&normal_twin, &low_old, &normal_old]);
    assert_eq!(ids(&page(&store, &acct, &query(false, ListFilter::default(), 10)).await.items), done_order);
    for limit in [1, 2, 3] {
        assert_eq!(all_pages(&store, &acct, query(false, ListFilter::default(), limit)).await, done_order);
    }
}

/// Counts cover every open message of the account: total, by priority, by type, and how many
/// pass the filter.
pub async fn open_counts_count_every_open_message<S: Store>(store: S) {
    let (acct, other, a, b) = (account("acme"), account("globex"), agent("a"), agent("b"));
    let urgent = dressed(ask(&acct, &a, at(1)), Priority::Urgent, Some("infra"), &["prod"]);
    let high = dressed(task(&acct, &b, at(2)), Priority::High, Some("infra"), &[]);
    let low = dressed(ask(&acct, &b, at(3)), Priority::Low, None, &["prod"]);
    let closed = ask(&acct, &a, at(4));
    insert_all(&store, &[&urgent, &high, &low, &closed, &notify(&acct, &a, at(5)), &ask(&other, &a, at(6))]).await;
    resolve(&store, &closed, Status::Answered, at(10)).await;

    let c = store.open_counts(&acct, &ListFilter::default()).await.unwrap();
    assert_eq!((c.total, c.matching), (3, 3));
    assert_eq!(c.by_priority, [1, 1, 0, 1], "urgent, high, normal, low");
    assert_eq!(c.by_kind, [0, 2, 1], "notify, ask, task");
    let by_b = store.open_counts(&acct, &ListFilter { agent_id: Some(b), ..ListFilter::default() }).await.unwrap();
    assert_eq!((by_b.total, by_b.matching), (3, 2));
    let prod = ListFilter { tag: Some("prod".into()), project: Some("infra".into()), ..ListFilter::default() };
    assert_eq!(store.open_counts(&acct, &prod).await.unwrap().matching, 1);
    let none = store.open_counts(&account("initech"), &ListFilter::default()).await.unwrap();
    assert_eq!((none.total, none.matching), (0, 0));
}

/// One agent floods the account with more open messages than the largest page; another agent's
/// message, created last, is still reachable by filter and by paging, and counted.
pub async fn a_flood_from_one_agent_hides_nothing<S: Store>(store: S) {
    const FLOOD: usize = 520;
    let (acct, loud, quiet) = (account("acme"), agent("loud"), agent("quiet"));
    let flood: Vec<MessageRecord> =
        (0..FLOOD).map(|i| dressed(ask(&acct, &loud, at(i as i64)), Priority::High, Some("spam"), &[])).collect();
    let refs: Vec<&MessageRecord> = flood.iter().collect();
    insert_all(&store, &refs).await;
    let last = dressed(ask(&acct, &quiet, at(FLOOD as i64 + 1)), Priority::High, Some("ops"), &["db"]);
    insert_all(&store, &[&last]).await;

    let first = page(&store, &acct, &query(true, ListFilter::default(), 500)).await;
    assert_eq!(first.items.len(), 500);
    assert!(!ids(&first.items).contains(&last.id), "the newest is past the first page…");
    assert!(first.next.is_some(), "…and the page says more follow");
    let everything = all_pages(&store, &acct, query(true, ListFilter::default(), 500)).await;
    assert_eq!(everything.len(), FLOOD + 1, "paging reaches every open message once");
    assert_eq!(everything.last(), Some(&last.id));

    for filter in [
        ListFilter { agent_id: Some(quiet.clone()), ..ListFilter::default() },
        ListFilter { project: Some("ops".into()), ..ListFilter::default() },
        ListFilter { tag: Some("db".into()), ..ListFilter::default() },
        ListFilter { priority: Some(Priority::High), agent_id: Some(quiet.clone()), ..ListFilter::default() },
    ] {
        let got = page(&store, &acct, &query(true, filter.clone(), 50)).await;
        assert_eq!(ids(&got.items), of(&[&last]), "found by {filter:?} on the first page");
        assert_eq!(got.next, None);
        let c = store.open_counts(&acct, &filter).await.unwrap();
        assert_eq!((c.total, c.matching), (FLOOD as u64 + 1, 1), "counted by {filter:?}");
    }
    let by_loud = ListFilter { agent_id: Some(loud), ..ListFilter::default() };
    assert_eq!(all_pages(&store, &acct, query(true, by_loud, 200)).await.len(), FLOOD);
}

/// Issue 39: a search finds the account's messages whose titles (every store) or bodies (a
/// full-text store) carry every term as a word prefix, case-insensitively — open and resolved,
/// newest first, at most `limit`; never another account's, never a sensitive body.
pub async fn search_matches_every_term_newest_first_in_one_account<S: Store>(store: S) {
    use ma2h_core::messages::listing::SearchQuery;
    let acct = account("search");
    let titled = |title: &str, body: &str, sensitive: bool, t: i64| {
        let mut m = ask(&acct, &agent("bot"), at(t));
        m.title = title.to_owned();
        m.envelope["title"] = json!(title);
        m.envelope["body"] = json!(body);
        if sensitive {
            m.envelope["sensitive"] = json!(true);
        }
        m
    };
    let drop_old = titled("Drop users_legacy?", "Migration `0042` is done.", false, 1);
    let drop_new = titled("Drop the users cache", "Nothing else reads it.", false, 3);
    let deploy = titled("Deploy build 412", "Canary is clean; users unaffected.", false, 2);
    let secret = titled("Rotate the key", "The launch code is zebra.", true, 4);
    let mut foreign = ask(&account("search-other"), &agent("bot"), at(5));
    foreign.title = "Drop users everywhere".into();
    insert_all(&store, &[&drop_old, &drop_new, &deploy, &secret, &foreign]).await;
    resolve(&store, &drop_old, Status::Cancelled, at(6)).await;

    let search =
        |terms: &[&str], limit: usize| SearchQuery { terms: terms.iter().map(|t| (*t).to_owned()).collect(), limit };
    let found = |hits: &ma2h_core::messages::listing::SearchHits| ids(&hits.items);
    let hits = store.search_messages(&acct, &search(&["DROP", "user"], 10)).await.unwrap();
    assert_eq!(found(&hits), of(&[&drop_new, &drop_old]), "open and resolved, newest first, this account only");
    assert!(hits.complete);
    assert_eq!(
        found(&store.search_messages(&acct, &search(&["drop"], 1)).await.unwrap()),
        of(&[&drop_new]),
        "the limit"
    );
    assert!(
        store.search_messages(&acct, &search(&["rop"], 10)).await.unwrap().items.is_empty(),
        "a prefix, not a substring"
    );
    assert!(store.search_messages(&acct, &search(&[], 10)).await.unwrap().items.is_empty());
    let body = store.search_messages(&acct, &search(&["canary"], 10)).await.unwrap();
    let zebra = store.search_messages(&acct, &search(&["zebra"], 10)).await.unwrap();
    assert!(zebra.items.is_empty(), "a sensitive body is never searched");
    if store.full_text_search() {
        assert_eq!(found(&body), of(&[&deploy]), "bodies are searched");
    } else {
        assert!(body.items.is_empty(), "titles only");
    }
}

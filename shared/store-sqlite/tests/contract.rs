//! The shared store contract against SQLite (a fresh file in a tempdir, and in memory), plus the
//! SQLite-specific guarantees: durability settings, reopen, index use, migrations, bad rows.

use std::path::Path;

use chrono::Duration;
use ma2h_core::kernel::credentials::PrincipalId;
use ma2h_core::messages::listing::{ListCursor, ListFilter, ListQuery};
use ma2h_core::messages::records::{Completion, Inserted, Lookup, MessageRecord};
use ma2h_core::ports::{CredentialStore, MessageStore, StoreError};
use ma2h_protocol::envelope::Priority;
use ma2h_protocol::lifecycle::Status;
use ma2h_store_contract::fixtures::{
    account, agent, ask, at, claim, completed, credential, expiring_ask, notify, t0, task, terminal,
};
use ma2h_store_sqlite::{MIGRATIONS, SCHEMA_VERSION, SqliteStore, listing, sql};
use rusqlite::Connection;

/// Every store-contract check, on an in-memory database.
mod contract_in_memory {
    use super::*;

    async fn fresh() -> Option<(SqliteStore, ())> {
        Some((SqliteStore::open_in_memory().expect("open in memory"), ()))
    }
    ma2h_store_contract::store_contract_tests!(fresh);
}

/// Every store-contract check, on a file (the temporary directory lives as long as the check).
mod contract_on_disk {
    use super::*;

    async fn fresh() -> Option<(SqliteStore, tempfile::TempDir)> {
        let dir = tempfile::tempdir().unwrap();
        Some((SqliteStore::open(dir.path().join("hub.db")).expect("open file"), dir))
    }
    ma2h_store_contract::store_contract_tests!(fresh);
}

fn raw(path: &Path) -> Connection {
    let conn = Connection::open(path).unwrap();
    conn.busy_timeout(std::time::Duration::from_secs(5)).unwrap();
    conn
}

async fn found(store: &SqliteStore, m: &MessageRecord) -> MessageRecord {
    match store.get_message(&m.account, &m.id).await.unwrap() {
        Lookup::Found(r) => r,
        other => panic!("{} should be found: {other:?}", m.id),
    }
}

#[tokio::test]
async fn writer_runs_wal_with_full_sync() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("hub.db")).unwrap();
    let s = store.settings();
    assert_eq!(s.journal_mode, "wal");
    assert_eq!(s.synchronous, 2, "synchronous=FULL (§3.1)");
    assert!(s.foreign_keys);
    assert_eq!(s.schema_version, SCHEMA_VERSION);
    let memory = SqliteStore::open_in_memory().unwrap();
    assert_eq!(memory.settings().journal_mode, "memory");
    assert!(memory.path().is_none());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reopening_the_file_preserves_everything() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hub.db");
    let (acct, bot) = (account("acme"), agent("deploybot"));
    let open = expiring_ask(&acct, &bot, t0(), at(3600));
    let key = claim(&open, "k-1", "fp", at(86_400));
    let answered = task(&acct, &bot, at(1));
    let write = terminal(Status::Completed, at(2));
    let delivered = notify(&acct, &bot, at(3));
    let cred = credential(&acct, PrincipalId::Agent(bot.clone()), at(4));
    let counter_expiry = t0() + Duration::minutes(5);
    {
        let store = SqliteStore::open(&path).unwrap();
        assert_eq!(store.insert_message(&open, Some(&key), None, t0()).await.unwrap(), Inserted::New);
        for m in [&answered, &delivered] {
            assert_eq!(store.insert_message(m, None, None, m.created_at).await.unwrap(), Inserted::New);
        }
        assert!(matches!(store.complete(&acct, &answered.id, &write).await.unwrap(), Completion::Applied(_)));
        store.put_credential(&cred).await.unwrap();
        store.put_secret(&acct, &bot, "hub:signing", b"sealed").await.unwrap();
        assert_eq!(store.incr_counter("rpm/x", counter_expiry, t0()).await.unwrap(), 1);
    } // every handle dropped: connections closed

    for _ in 0..2 {
        let store = SqliteStore::open(&path).unwrap();
        assert_eq!(store.settings().schema_version, SCHEMA_VERSION, "migrations are idempotent");
        assert_eq!(found(&store, &open).await, open);
        assert_eq!(found(&store, &answered).await, completed(&answered, &write));
        assert_eq!(found(&store, &delivered).await, delivered);
        assert_eq!(store.get_claim(&acct, &bot, "k-1", at(10)).await.unwrap(), Some(key.clone()));
        assert_eq!(store.credential_by_hash(&cred.key_hash).await.unwrap(), Some(cred.clone()));
        assert_eq!(store.get_secret(&acct, &bot, "hub:signing").await.unwrap(), Some(b"sealed".to_vec()));
        assert_eq!(store.due_expiries(at(3600), 10).await.unwrap(), vec![(acct.clone(), open.id.clone())]);
        assert_eq!(store.count_open(&acct, &bot).await.unwrap(), 1);
    }
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.incr_counter("rpm/x", counter_expiry, t0()).await.unwrap(), 2, "counters survive too");
    let version: i64 = raw(&path).pragma_query_value(None, "user_version", |r| r.get(0)).unwrap();
    assert_eq!(version, i64::from(SCHEMA_VERSION));
}

/// `EXPLAIN QUERY PLAN` details for `sql` with `params`.
fn plan(conn: &Connection, sql: &str, params: impl rusqlite::Params) -> Vec<String> {
    let mut stmt = conn.prepare(&format!("EXPLAIN QUERY PLAN {sql}")).unwrap();
    stmt.query_map(params, |r| r.get::<_, String>(3)).unwrap().map(Result::unwrap).collect()
}

#[tokio::test]
async fn queries_read_their_indexes_never_scan_messages() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hub.db");
    let _store = SqliteStore::open(&path).unwrap();
    let conn = raw(&path);
    let now = t0().timestamp_millis();

    let due = plan(&conn, sql::DUE_EXPIRIES, (now, 500));
    assert!(due.iter().any(|d| d.contains("USING INDEX messages_due")), "due_expiries plan: {due:?}");
    assert!(!due.iter().any(|d| d.contains("SCAN messages")), "due_expiries must not scan: {due:?}");
    assert!(!due.iter().any(|d| d.contains("TEMP B-TREE")), "ordered by the index itself: {due:?}");

    let count = plan(&conn, sql::COUNT_OPEN, ("acme", "bot"));
    assert!(count.iter().any(|d| d.contains("USING COVERING INDEX messages_open_agent")), "count_open plan: {count:?}");

    let purge = plan(&conn, sql::PURGEABLE, (now, 500));
    assert!(purge.iter().any(|d| d.contains("USING INDEX messages_retain")), "purge plan: {purge:?}");

    for (name, p) in [("count", &count), ("purge", &purge)] {
        assert!(!p.iter().any(|d| d.contains("SCAN messages")), "{name} must not scan: {p:?}");
    }
}

/// Every listing statement reads the index in the listing's order (no sort, no table scan):
/// the agent variant when filtered by agent, the account one otherwise, with and without a cursor.
#[tokio::test]
async fn listing_pages_read_an_index_in_order() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hub.db");
    let _store = SqliteStore::open(&path).unwrap();
    let conn = raw(&path);
    let id = ma2h_store_contract::fixtures::message_id();
    let bot = Some(agent("bot"));
    let open_after = ListCursor::Open { rank: 2, created_at: t0(), id: id.clone() };
    let done_after = ListCursor::Done { updated_at: t0(), id };
    let filters = [
        (ListFilter::default(), false),
        (ListFilter { agent_id: bot.clone(), ..ListFilter::default() }, true),
        (ListFilter { priority: Some(Priority::High), ..ListFilter::default() }, false),
        (
            ListFilter {
                agent_id: bot,
                kind: Some(ma2h_protocol::envelope::MessageType::Ask),
                ..ListFilter::default()
            },
            true,
        ),
        (ListFilter { project: Some("p".into()), tag: Some("t".into()), ..ListFilter::default() }, false),
    ];
    for (filter, by_agent) in filters {
        for (open, after) in
            [(true, None), (true, Some(open_after.clone())), (false, None), (false, Some(done_after.clone()))]
        {
            let q = ListQuery { open, filter: filter.clone(), after, limit: 50 };
            let (text, args) = listing::page_sql("acme", &q);
            let p = plan(&conn, &text, rusqlite::params_from_iter(args));
            let index = match (open, by_agent) {
                (true, false) => "messages_open_list",
                (true, true) => "messages_open_agent",
                (false, false) => "messages_done_list",
                (false, true) => "messages_done_agent",
            };
            assert!(p.iter().any(|d| d.contains(index)), "{q:?} should read {index}: {p:?}");
            assert!(!p.iter().any(|d| d.contains("TEMP B-TREE")), "{q:?} is read in order: {p:?}");
            assert!(!p.iter().any(|d| d.starts_with("SCAN messages")), "{q:?} must not scan: {p:?}");
        }
        let (text, args) = listing::counts_sql("acme", &filter);
        let p = plan(&conn, &text, rusqlite::params_from_iter(args));
        assert!(p.iter().any(|d| d.contains("messages_open_list")), "counts read the open index: {p:?}");
    }
}

/// A database written by the previous release (schema 3) gains the listing columns, backfilled
/// from each envelope, so its messages list, filter and count like new ones.
#[tokio::test]
async fn upgrading_from_schema_3_backfills_project_and_tags() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hub.db");
    let (acct, bot) = (account("acme"), agent("bot"));
    let old = ask(&acct, &bot, t0());
    {
        let conn = raw(&path);
        for (i, m) in MIGRATIONS[..3].iter().enumerate() {
            conn.execute_batch(m).unwrap();
            conn.pragma_update(None, "user_version", i as i64 + 1).unwrap();
        }
        conn.execute(
            "INSERT INTO messages (id, account, agent_id, kind, status, priority, title, envelope, created_at, updated_at) \
             VALUES (?1, 'acme', 'bot', 'ask', 'open', 'high', ?2, ?3, ?4, ?4)",
            rusqlite::params![old.id.as_str(), old.title, old.envelope.to_string(), t0().timestamp_millis()],
        )
        .unwrap();
    }
    let store = SqliteStore::open(&path).unwrap();
    assert_eq!(store.settings().schema_version, SCHEMA_VERSION);
    let tag = ListFilter { tag: Some("prod".into()), project: Some("infra".into()), ..ListFilter::default() };
    let page = store.list_messages(&acct, &ListQuery { open: true, filter: tag.clone(), after: None, limit: 10 }).await;
    let page = page.unwrap();
    assert_eq!(page.items.len(), 1);
    assert_eq!(page.items[0].tags, vec!["deploy".to_owned(), "prod".to_owned()], "order kept");
    assert_eq!(page.items[0].project.as_deref(), Some("infra"));
    assert_eq!(store.open_counts(&acct, &tag).await.unwrap().matching, 1);
    // schema 12 (issue 39): messages from before are in the search index too
    let word = old.title.split_whitespace().next().unwrap().to_owned();
    let q = ma2h_core::messages::listing::SearchQuery { terms: vec![word], limit: 5 };
    assert_eq!(store.search_messages(&acct, &q).await.unwrap().items.len(), 1, "{}", old.title);
}

#[tokio::test]
async fn purge_deletes_expired_claim_and_counter_rows() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hub.db");
    let store = SqliteStore::open(&path).unwrap();
    let (acct, bot) = (account("acme"), agent("bot"));
    let now = t0();
    for (i, expires) in [-10, -5, 3600].into_iter().enumerate() {
        let m = ask(&acct, &bot, now - Duration::seconds(100));
        let c = claim(&m, &format!("k{i}"), "fp", now + Duration::seconds(expires));
        store.insert_message(&m, Some(&c), None, m.created_at).await.unwrap();
    }
    store.incr_counter("old", now - Duration::seconds(1), now).await.unwrap();
    store.incr_counter("live", now + Duration::minutes(5), now).await.unwrap();

    assert_eq!(store.purge(now, 100).await.unwrap(), 0, "no message is past retention");
    let conn = raw(&path);
    let count =
        |table: &str| -> i64 { conn.query_row(&format!("SELECT COUNT(*) FROM {table}"), [], |r| r.get(0)).unwrap() };
    assert_eq!(count("idempotency"), 1, "only the live claim remains");
    assert_eq!(count("counters"), 1, "only the live counter remains");
    assert_eq!(count("messages"), 3, "open messages are never purged");
}

#[tokio::test]
async fn undecodable_rows_are_reported_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hub.db");
    let store = SqliteStore::open(&path).unwrap();
    let (acct, bot) = (account("acme"), agent("bot"));
    let (a, b) = (ask(&acct, &bot, t0()), ask(&acct, &bot, at(1)));
    for m in [&a, &b] {
        store.insert_message(m, None, None, m.created_at).await.unwrap();
    }
    let cred = credential(&acct, PrincipalId::Agent(bot.clone()), t0());
    store.put_credential(&cred).await.unwrap();

    let conn = raw(&path);
    conn.execute("UPDATE messages SET status = 'bogus' WHERE id = ?1", [a.id.as_str()]).unwrap();
    conn.execute("UPDATE messages SET envelope = '{not json' WHERE id = ?1", [b.id.as_str()]).unwrap();
    conn.execute("UPDATE credentials SET principal_kind = 'robot'", []).unwrap();

    for m in [&a, &b] {
        let got = store.get_message(&acct, &m.id).await;
        assert!(matches!(got, Err(StoreError::Corrupt(_))), "{got:?}");
    }
    let listed = store.list_messages(&acct, &ListQuery { open: false, limit: 10, ..ListQuery::default() }).await;
    assert!(matches!(listed, Err(StoreError::Corrupt(_))), "{listed:?}");
    let by_id = store.credential_by_id(&cred.id).await;
    assert!(matches!(by_id, Err(StoreError::Corrupt(_))), "{by_id:?}");
}

#[test]
fn a_newer_schema_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hub.db");
    drop(SqliteStore::open(&path).unwrap());
    raw(&path).pragma_update(None, "user_version", i64::from(SCHEMA_VERSION) + 1).unwrap();
    let err = SqliteStore::open(&path).unwrap_err();
    assert!(matches!(err, StoreError::Unavailable(ref m) if m.contains("newer")), "{err:?}");
}

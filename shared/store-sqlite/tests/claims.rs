//! §8.1 claims on SQLite: found through the in-memory index (`claims`) after a reopen, after the
//! v8 migration, when another connection wrote them, and never after a purge.

use std::path::Path;

use chrono::Duration;
use ma2h_core::messages::records::Inserted;
use ma2h_core::ports::MessageStore;
use ma2h_store_contract::fixtures::{account, agent, ask, claim, t0};
use ma2h_store_sqlite::{MIGRATIONS, SqliteStore};
use rusqlite::Connection;

fn is_existing(i: &Inserted, id: &ma2h_protocol::ids::MessageId) -> bool {
    matches!(i, Inserted::Existing(c) if &c.message_id == id)
}

#[tokio::test]
async fn a_claim_is_honoured_after_the_store_reopens() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hub.db");
    let (acct, bot) = (account("acme"), agent("bot"));
    let first = ask(&acct, &bot, t0());
    {
        let store = SqliteStore::open(&path).unwrap();
        let c = claim(&first, "k1", "fp", t0() + Duration::hours(48));
        assert!(matches!(store.insert_message(&first, Some(&c), None, t0()).await.unwrap(), Inserted::New));
    }
    let store = SqliteStore::open(&path).unwrap();
    let again = ask(&acct, &bot, t0());
    let c = claim(&again, "k1", "fp", t0() + Duration::hours(48));
    assert!(is_existing(&store.insert_message(&again, Some(&c), None, t0()).await.unwrap(), &first.id));
    assert_eq!(store.get_claim(&acct, &bot, "k1", t0()).await.unwrap().unwrap().message_id, first.id);
    // the same key for another agent or account is another claim
    let other = ask(&acct, &agent("bot2"), t0());
    let c = claim(&other, "k1", "fp", t0() + Duration::hours(48));
    assert!(matches!(store.insert_message(&other, Some(&c), None, t0()).await.unwrap(), Inserted::New));
}

#[tokio::test]
async fn a_claim_written_by_another_connection_is_honoured_by_the_writer() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hub.db");
    let (acct, bot) = (account("acme"), agent("bot"));
    let a = SqliteStore::open(&path).unwrap();
    let b = SqliteStore::open(&path).unwrap(); // a second Hub process on the same file
    let first = ask(&acct, &bot, t0());
    let c = claim(&first, "shared", "fp", t0() + Duration::hours(48));
    assert!(matches!(a.insert_message(&first, Some(&c), None, t0()).await.unwrap(), Inserted::New));
    let second = ask(&acct, &bot, t0());
    let c = claim(&second, "shared", "fp", t0() + Duration::hours(48));
    assert!(is_existing(&b.insert_message(&second, Some(&c), None, t0()).await.unwrap(), &first.id));
}

#[tokio::test]
async fn an_expired_claim_is_replaced_and_a_purged_one_is_forgotten() {
    let dir = tempfile::tempdir().unwrap();
    let store = SqliteStore::open(dir.path().join("hub.db")).unwrap();
    let (acct, bot) = (account("acme"), agent("bot"));
    let old = ask(&acct, &bot, t0());
    let c = claim(&old, "k", "fp", t0() + Duration::seconds(10));
    store.insert_message(&old, Some(&c), None, t0()).await.unwrap();
    let later = t0() + Duration::seconds(11);
    let new = ask(&acct, &bot, later);
    let c = claim(&new, "k", "fp2", later + Duration::hours(1));
    assert!(matches!(store.insert_message(&new, Some(&c), None, later).await.unwrap(), Inserted::New));
    // purging the expired row must not drop the live claim that replaced it
    store.purge(later, 100).await.unwrap();
    assert_eq!(store.get_claim(&acct, &bot, "k", later).await.unwrap().unwrap().message_id, new.id);
    let third = ask(&acct, &bot, later);
    let c = claim(&third, "k", "fp2", later + Duration::hours(1));
    assert!(is_existing(&store.insert_message(&third, Some(&c), None, later).await.unwrap(), &new.id));
    // once that one expires and is purged too, the key is free
    let much_later = later + Duration::hours(2);
    store.purge(much_later, 100).await.unwrap();
    assert!(store.get_claim(&acct, &bot, "k", much_later).await.unwrap().is_none());
}

#[tokio::test]
async fn claims_written_before_v8_are_kept_by_the_migration() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("hub.db");
    let (acct, bot) = (account("acme"), agent("bot"));
    let old = ask(&acct, &bot, t0());
    {
        let conn = Connection::open(&path).unwrap();
        for (i, m) in MIGRATIONS[..7].iter().enumerate() {
            conn.execute_batch(m).unwrap();
            conn.pragma_update(None, "user_version", i as i64 + 1).unwrap();
        }
        let expires = (t0() + Duration::hours(48)).timestamp_millis();
        conn.execute(
            "INSERT INTO idempotency (account, agent_id, key, message_id, fingerprint, expires_at) \
             VALUES ('acme', 'bot', 'pre-v8', ?1, 'fp', ?2)",
            rusqlite::params![old.id.as_str(), expires],
        )
        .unwrap();
    }
    let store = SqliteStore::open(&path).unwrap();
    let again = ask(&acct, &bot, t0());
    let c = claim(&again, "pre-v8", "fp", t0() + Duration::hours(48));
    assert!(is_existing(&store.insert_message(&again, Some(&c), None, t0()).await.unwrap(), &old.id));
    assert_no_key_index(&path);
}

/// The point of v8: no index keyed by the agents' keys.
fn assert_no_key_index(path: &Path) {
    let conn = Connection::open(path).unwrap();
    let indexes: Vec<String> = conn
        .prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'idempotency'")
        .unwrap()
        .query_map([], |r| r.get(0))
        .unwrap()
        .collect::<Result<_, _>>()
        .unwrap();
    assert_eq!(indexes, ["idempotency_expiry"]);
}

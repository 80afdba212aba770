//! The asks and tasks this agent filed through `ma2h mcp`, kept in the state directory so
//! `list_my_open_asks` works across MCP server restarts (a coding agent's client restarts the
//! server with every session). MA2H has no agent-side listing (§8 reads one message by id), so
//! this is the agent's own record: ids, titles and review URLs — never `state`, never keys.
//! Statuses are always re-read from the Hub; the ledger only remembers which ids to read.

use std::io::Write;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// At most this many ids are remembered (the oldest are forgotten first).
const CAP: usize = 200;

#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Filed {
    pub id: String,
    pub kind: String,
    pub title: String,
    pub filed_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub review_url: Option<String>,
}

/// The times a caller-keyed ask/task was first built with. §8.1 answers a replay with the
/// original ack only if the payload is identical, and `created_at`/`expires_at` are part of it:
/// a retried `ask_human` with the same `idempotency_key` (a lost ack, a restarted client, a
/// model that calls again) must repeat them, or it would be refused with 409.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Stamp {
    pub key: String,
    pub created_at: String,
    /// The relative expiry asked for: a retry asking for another one is another payload.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_in: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
}

impl Stamp {
    fn now(key: &str, expires_in: Option<u32>) -> Self {
        let now = chrono::Utc::now();
        let fmt = |t: chrono::DateTime<chrono::Utc>| t.to_rfc3339_opts(chrono::SecondsFormat::Secs, true);
        Self {
            key: key.into(),
            created_at: fmt(now),
            expires_in,
            expires_at: expires_in.map(|s| ma2h_client::builder::expires_in_from(now, i64::from(s))),
        }
    }
}

/// One JSON file per agent id: `<state dir>/mcp-filed-<agent>.json` (and the retry stamps in
/// `mcp-keys-<agent>.json`).
pub struct Ledger {
    path: PathBuf,
    keys: PathBuf,
    lock: tokio::sync::Mutex<()>,
}

impl Ledger {
    pub fn new(dir: PathBuf, agent_id: &str) -> Self {
        let safe: String =
            agent_id.chars().map(|c| if c.is_ascii_alphanumeric() || "-_.".contains(c) { c } else { '_' }).collect();
        Self {
            path: dir.join(format!("mcp-filed-{safe}.json")),
            keys: dir.join(format!("mcp-keys-{safe}.json")),
            lock: tokio::sync::Mutex::new(()),
        }
    }

    fn read(&self) -> Vec<Filed> {
        read_json(&self.path)
    }

    fn write(&self, all: &[Filed]) -> std::io::Result<()> {
        write_json(&self.path, all)
    }

    /// The stamp for `key`: the one recorded by the first attempt if it asked for the same
    /// `expires_in`, else a new one (recorded before the submit, so a lost ack is covered too).
    pub async fn stamp(&self, key: &str, expires_in: Option<u32>) -> std::io::Result<Stamp> {
        let _g = self.lock.lock().await;
        let _l = self.lock_file()?;
        let mut all: Vec<Stamp> = read_json(&self.keys);
        if let Some(s) = all.iter().find(|s| s.key == key && s.expires_in == expires_in) {
            return Ok(s.clone());
        }
        let stamp = Stamp::now(key, expires_in);
        all.retain(|s| s.key != key);
        all.push(stamp.clone());
        let excess = all.len().saturating_sub(CAP);
        all.drain(..excess);
        write_json(&self.keys, &all)?;
        Ok(stamp)
    }

    /// An exclusive lock across processes (two MCP servers of one agent share the file), held
    /// while the returned file lives; the in-process mutex orders this server's own calls.
    fn lock_file(&self) -> std::io::Result<std::fs::File> {
        if let Some(dir) = self.path.parent() {
            // owner-only: it holds titles of asks that may be sensitive
            ma2h_private_fs::create_dir(dir)?;
        }
        let f = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(self.path.with_extension("lock"))?;
        f.lock()?;
        Ok(f)
    }

    /// All remembered entries, oldest first.
    pub async fn all(&self) -> Vec<Filed> {
        let _g = self.lock.lock().await;
        self.read()
    }

    /// Look one up (for its title and review URL).
    pub async fn find(&self, id: &str) -> Option<Filed> {
        self.all().await.into_iter().find(|f| f.id == id)
    }

    /// Remember a filed ask/task (a replayed submit with the same id is remembered once).
    pub async fn add(&self, entry: Filed) -> std::io::Result<()> {
        let _g = self.lock.lock().await;
        let _l = self.lock_file()?;
        let mut all = self.read();
        all.retain(|f| f.id != entry.id);
        all.push(entry);
        let excess = all.len().saturating_sub(CAP);
        all.drain(..excess);
        self.write(&all)
    }

    /// Forget ids that reached a terminal state or that the Hub no longer knows.
    pub async fn forget(&self, ids: &[String]) -> std::io::Result<()> {
        if ids.is_empty() {
            return Ok(());
        }
        let _g = self.lock.lock().await;
        let _l = self.lock_file()?;
        let mut all = self.read();
        all.retain(|f| !ids.contains(&f.id));
        self.write(&all)
    }
}

fn read_json<T: serde::de::DeserializeOwned>(path: &Path) -> Vec<T> {
    std::fs::read(path).ok().and_then(|b| serde_json::from_slice(&b).ok()).unwrap_or_default()
}

fn write_json<T: Serialize>(path: &Path, all: &[T]) -> std::io::Result<()> {
    // a per-process temp name: two servers for one agent never write the same temp file
    let tmp = path.with_extension(format!("json.{}.tmp", std::process::id()));
    ma2h_private_fs::create_file(&tmp)?.write_all(&serde_json::to_vec(all).expect("entries serialize"))?;
    std::fs::rename(tmp, path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn filed(id: &str) -> Filed {
        Filed { id: id.into(), kind: "ask".into(), title: format!("t {id}"), filed_at: "now".into(), review_url: None }
    }

    #[tokio::test]
    async fn entries_survive_a_new_ledger_on_the_same_dir_and_are_forgotten_on_request() {
        let dir = tempfile::tempdir().unwrap();
        let a = Ledger::new(dir.path().into(), "bot/dev");
        a.add(filed("msg_1")).await.unwrap();
        a.add(filed("msg_2")).await.unwrap();
        a.add(filed("msg_1")).await.unwrap(); // a replay: once, now newest
        let b = Ledger::new(dir.path().into(), "bot/dev");
        let ids: Vec<_> = b.all().await.into_iter().map(|f| f.id).collect();
        assert_eq!(ids, ["msg_2", "msg_1"]);
        b.forget(&["msg_2".into()]).await.unwrap();
        assert_eq!(a.find("msg_2").await, None);
        assert_eq!(a.find("msg_1").await.unwrap().title, "t msg_1");
        // another agent's ledger is another file
        assert!(Ledger::new(dir.path().into(), "other").all().await.is_empty());
    }

    #[tokio::test]
    async fn a_key_keeps_its_first_stamp_across_restarts_unless_the_expiry_asked_for_changes() {
        let dir = tempfile::tempdir().unwrap();
        let a = Ledger::new(dir.path().into(), "bot");
        let first = a.stamp("k1", Some(3600)).await.unwrap();
        assert!(first.expires_at.is_some());
        // written back as the first attempt built it, even from a new server on the same dir
        let tampered = Stamp { created_at: "2026-01-01T00:00:00Z".into(), ..first.clone() };
        write_json(&a.keys, std::slice::from_ref(&tampered)).unwrap();
        let b = Ledger::new(dir.path().into(), "bot");
        assert_eq!(b.stamp("k1", Some(3600)).await.unwrap(), tampered);
        // another expiry is another payload: a new stamp replaces the old one
        let other = b.stamp("k1", Some(60)).await.unwrap();
        assert_eq!(other.expires_in, Some(60));
        assert_ne!(other.created_at, tampered.created_at);
        assert_eq!(b.stamp("k1", Some(60)).await.unwrap(), other);
        assert_eq!(read_json::<Stamp>(&b.keys).len(), 1);
        // no expiry at all is remembered too
        assert_eq!(b.stamp("k2", None).await.unwrap().expires_at, None);
    }

    #[cfg(unix)]
    #[tokio::test]
    async fn the_ledger_its_keys_and_their_directory_are_readable_by_their_owner_only() {
        use std::os::unix::fs::PermissionsExt;
        let root = tempfile::tempdir().unwrap();
        let dir = root.path().join("state");
        let l = Ledger::new(dir.clone(), "bot");
        l.add(filed("msg_1")).await.unwrap();
        l.stamp("k1", None).await.unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode(&dir), 0o700);
        assert_eq!(mode(&l.path), 0o600);
        assert_eq!(mode(&l.keys), 0o600);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn two_servers_of_one_agent_lose_no_entry_to_each_other() {
        // Two ledgers on one directory share nothing in memory: only the lock file orders them,
        // as it orders two MCP server processes.
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (Ledger::new(dir.path().into(), "bot"), Ledger::new(dir.path().into(), "bot"));
        let held = a.lock_file().unwrap();
        let other = std::fs::OpenOptions::new().write(true).open(a.path.with_extension("lock")).unwrap();
        assert!(other.try_lock().is_err(), "the lock excludes another open of the file");
        drop(held);
        other.try_lock().unwrap();
        drop(other);
        let writes = |l: Ledger, side: &'static str| async move {
            for i in 0..25 {
                l.add(filed(&format!("msg_{side}{i}"))).await.unwrap();
            }
        };
        let (x, y) = tokio::join!(tokio::spawn(writes(a, "a")), tokio::spawn(writes(b, "b")));
        x.unwrap();
        y.unwrap();
        assert_eq!(Ledger::new(dir.path().into(), "bot").all().await.len(), 50);
    }

    #[tokio::test]
    async fn the_ledger_remembers_at_most_its_cap() {
        let dir = tempfile::tempdir().unwrap();
        let l = Ledger::new(dir.path().into(), "bot");
        for i in 0..CAP + 5 {
            l.add(filed(&format!("msg_{i}"))).await.unwrap();
        }
        let all = l.all().await;
        assert_eq!(all.len(), CAP);
        assert_eq!(all[0].id, "msg_5");
    }
}

//! The receiver's persistent memory (§9.2, §6, §2.1 step 4/6): seen `jti` nonces, kept at least
//! the replay window, and seen `(in_reply_to, resolution_id)` pairs, kept about the retention
//! TTL, so a replayed push is rejected and a retried push is acted on at most once — across
//! separate CLI invocations.
//!
//! One small JSON file, `replay.json`, under a directory (default `$XDG_STATE_HOME/ma2h` or
//! `~/.local/state/ma2h`). Concurrent invocations serialize on `replay.lock` (created with
//! `O_EXCL`; a lock older than [`STALE_LOCK`] is presumed abandoned) and every update is written
//! to a temporary file, fsynced and renamed into place, so a crash never leaves a torn cache.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use serde_json::{Value, json};

/// How long a seen resolution is remembered (default: 35 days ≥ the 30-day retention, §8.2).
pub const DEFAULT_DEDUP_TTL_SECS: i64 = 35 * 24 * 3600;
/// A lock file older than this is presumed left by a crashed process.
pub const STALE_LOCK: Duration = Duration::from_secs(30);
const LOCK_WAIT: Duration = Duration::from_secs(10);

/// What the cache knew about a delivery.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Seen {
    /// Never seen: both the `jti` and the resolution are now recorded.
    Fresh,
    /// This `jti` was already accepted: a replay (§9.2) — nothing recorded.
    ReplayedJti,
    /// A new `jti` for an already-seen `(in_reply_to, resolution_id)`: a retry — act once (§6).
    DuplicateResolution,
}

/// The persistent replay + dedup cache.
#[derive(Debug, Clone)]
pub struct ReplayCache {
    dir: PathBuf,
    /// TTL of a seen resolution.
    pub dedup_ttl_secs: i64,
}

#[derive(Default)]
struct Entries {
    jti: BTreeMap<String, i64>,
    resolutions: BTreeMap<String, i64>,
}

/// Removes the lock file when dropped.
struct LockGuard(PathBuf);

impl Drop for LockGuard {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

impl ReplayCache {
    /// `MA2H_STATE_DIR`, else `$XDG_STATE_HOME/ma2h`, else `~/.local/state/ma2h`.
    pub fn default_dir() -> PathBuf {
        let env = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
        env("MA2H_STATE_DIR")
            .or_else(|| env("XDG_STATE_HOME").map(|d| d.join("ma2h")))
            .or_else(|| env("HOME").map(|h| h.join(".local/state/ma2h")))
            .unwrap_or_else(|| PathBuf::from(".ma2h-state"))
    }

    /// Open (creating the directory, mode 0700 on unix).
    pub fn open(dir: impl Into<PathBuf>) -> std::io::Result<Self> {
        let dir = dir.into();
        // owner-only where it may be narrowed; a directory someone else owns is used as it is
        if ma2h_private_fs::create_dir(&dir).is_err() {
            std::fs::create_dir_all(&dir)?;
        }
        Ok(Self { dir, dedup_ttl_secs: DEFAULT_DEDUP_TTL_SECS })
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn file(&self) -> PathBuf {
        self.dir.join("replay.json")
    }

    fn lock(&self) -> std::io::Result<LockGuard> {
        let path = self.dir.join("replay.lock");
        let start = Instant::now();
        loop {
            match std::fs::OpenOptions::new().write(true).create_new(true).open(&path) {
                Ok(mut f) => {
                    let _ = write!(f, "{}", std::process::id());
                    return Ok(LockGuard(path));
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    let age = std::fs::metadata(&path)
                        .and_then(|m| m.modified())
                        .ok()
                        .and_then(|m| SystemTime::now().duration_since(m).ok());
                    if age.is_some_and(|a| a > STALE_LOCK) {
                        let _ = std::fs::remove_file(&path);
                        continue;
                    }
                    if start.elapsed() > LOCK_WAIT {
                        return Err(std::io::Error::other(format!("timed out waiting for {}", path.display())));
                    }
                    std::thread::sleep(Duration::from_millis(10));
                }
                Err(e) => return Err(e),
            }
        }
    }

    fn load(&self, now: i64) -> std::io::Result<Entries> {
        let text = match std::fs::read(self.file()) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Entries::default()),
            Err(e) => return Err(e),
        };
        // Fail closed on a corrupt cache: better to refuse than to forget what was seen.
        let v: Value = serde_json::from_slice(&text)
            .map_err(|e| std::io::Error::new(std::io::ErrorKind::InvalidData, format!("corrupt replay cache: {e}")))?;
        let map = |k: &str| -> BTreeMap<String, i64> {
            v.get(k)
                .and_then(Value::as_object)
                .map(|m| {
                    m.iter().filter_map(|(k, e)| e.as_i64().filter(|e| *e > now).map(|e| (k.clone(), e))).collect()
                })
                .unwrap_or_default()
        };
        Ok(Entries { jti: map("jti"), resolutions: map("resolutions") })
    }

    fn store(&self, e: &Entries) -> std::io::Result<()> {
        let tmp = self.dir.join(format!("replay.json.{}.tmp", std::process::id()));
        let body = serde_json::to_vec(&json!({"jti": e.jti, "resolutions": e.resolutions})).expect("serializes");
        ma2h_private_fs::write_file(&tmp, &body)?;
        std::fs::rename(&tmp, self.file())
    }

    fn resolution_key(in_reply_to: &str, resolution_id: &str) -> String {
        format!("{in_reply_to} {resolution_id}")
    }

    /// Atomically check and record one verified delivery. `jti_expires` is when the nonce may be
    /// forgotten (at least `t + window`, §9.2).
    pub fn check_and_record(
        &self,
        jti: &str,
        jti_expires: i64,
        in_reply_to: &str,
        resolution_id: &str,
        now: i64,
    ) -> std::io::Result<Seen> {
        let _lock = self.lock()?;
        let mut e = self.load(now)?;
        if e.jti.contains_key(jti) {
            return Ok(Seen::ReplayedJti);
        }
        e.jti.insert(jti.to_owned(), jti_expires);
        let key = Self::resolution_key(in_reply_to, resolution_id);
        let seen = match e.resolutions.entry(key) {
            std::collections::btree_map::Entry::Occupied(_) => Seen::DuplicateResolution,
            std::collections::btree_map::Entry::Vacant(slot) => {
                slot.insert(now + self.dedup_ttl_secs);
                Seen::Fresh
            }
        };
        self.store(&e)?;
        Ok(seen)
    }

    /// Record a resolution read by pull (§8.2, no `jti`); `true` if it was new.
    pub fn mark_resolution(&self, in_reply_to: &str, resolution_id: &str, now: i64) -> std::io::Result<bool> {
        let _lock = self.lock()?;
        let mut e = self.load(now)?;
        let key = Self::resolution_key(in_reply_to, resolution_id);
        if let std::collections::btree_map::Entry::Vacant(slot) = e.resolutions.entry(key) {
            slot.insert(now + self.dedup_ttl_secs);
        } else {
            return Ok(false);
        }
        self.store(&e)?;
        Ok(true)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replayed_jti_and_duplicate_resolution_are_told_apart_and_persist() {
        let dir = tempfile::tempdir().unwrap();
        let c = ReplayCache::open(dir.path()).unwrap();
        assert_eq!(c.check_and_record("j1", 1300, "msg_1", "res_1", 1000).unwrap(), Seen::Fresh);
        // a second process sees the same file
        let c2 = ReplayCache::open(dir.path()).unwrap();
        assert_eq!(c2.check_and_record("j1", 1300, "msg_1", "res_1", 1001).unwrap(), Seen::ReplayedJti);
        assert_eq!(c2.check_and_record("j2", 1300, "msg_1", "res_1", 1002).unwrap(), Seen::DuplicateResolution);
        assert_eq!(c2.check_and_record("j3", 1300, "msg_2", "res_2", 1003).unwrap(), Seen::Fresh);
        assert!(!c.mark_resolution("msg_2", "res_2", 1004).unwrap());
        assert!(c.mark_resolution("msg_3", "res_3", 1004).unwrap());
    }

    #[test]
    fn expired_jti_entries_are_pruned() {
        let dir = tempfile::tempdir().unwrap();
        let c = ReplayCache::open(dir.path()).unwrap();
        assert_eq!(c.check_and_record("j1", 1300, "msg_1", "res_1", 1000).unwrap(), Seen::Fresh);
        // after the jti TTL the nonce is forgotten, but the resolution is still a duplicate
        assert_eq!(c.check_and_record("j1", 1700, "msg_1", "res_1", 1400).unwrap(), Seen::DuplicateResolution);
        let text = std::fs::read_to_string(dir.path().join("replay.json")).unwrap();
        assert!(text.contains("\"j1\":1700"), "{text}");
    }

    #[test]
    fn concurrent_recorders_accept_a_resolution_exactly_once() {
        let dir = tempfile::tempdir().unwrap();
        let handles: Vec<_> = (0..8)
            .map(|i| {
                let d = dir.path().to_owned();
                std::thread::spawn(move || {
                    let c = ReplayCache::open(d).unwrap();
                    c.check_and_record(&format!("j{i}"), 2000, "msg_1", "res_1", 1000).unwrap()
                })
            })
            .collect();
        let fresh = handles.into_iter().map(|h| h.join().unwrap()).filter(|s| *s == Seen::Fresh).count();
        assert_eq!(fresh, 1);
    }

    #[test]
    fn a_corrupt_cache_fails_closed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("replay.json"), "{not json").unwrap();
        let c = ReplayCache::open(dir.path()).unwrap();
        assert!(c.check_and_record("j", 2000, "m", "r", 1000).is_err());
    }
}

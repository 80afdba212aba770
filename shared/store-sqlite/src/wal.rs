//! Keeping the write-ahead log bounded under sustained load.
//!
//! SQLite starts the WAL over (writes new frames from its beginning again) only when a write
//! transaction begins while *every* frame has been checkpointed. The [`checkpoint`] thread copies
//! frames in the background, but under a steady stream of group commits the writer appends new
//! frames while each checkpoint runs, so the checkpoint never catches up, the WAL is never
//! restarted, and it grows without bound — measured at 2.6 GB after 30 s of 13,000 submits/s,
//! with readers slowing as its index grows.
//!
//! The fix splits the work. Once the WAL holds [`WalLimits::reset_frames`] frames the
//! checkpointer runs back to back instead of every interval, so the frames it has not yet copied
//! (the *tail*) shrink to what the writer commits during one pass. When the tail is at most
//! [`WalLimits::tail_frames`], the writer itself — between two batches, after their callers are
//! answered — checkpoints that short tail. Nothing is appended meanwhile, so that checkpoint is
//! complete and the writer's next transaction restarts the WAL. The writer thus pauses only to
//! copy and sync a small tail; should the tail never get small (a disk slower than the writes),
//! the writer checkpoints anyway at [`WalLimits::force_frames`], bounding the WAL at that size.
//!
//! The writer's pause (copying the tail and syncing the database file) measured ~20–40 ms on
//! this machine's disk whatever the tail's length, so restarts are kept rare: at 256 MiB, every
//! ~2 s at 14,000 submits/s, which keeps the pause out of the 99th percentile (docs/BENCHMARKS.md).
//!
//! [`checkpoint`]: crate::checkpoint

use std::cell::Cell;
use std::ffi::c_int;
use std::sync::atomic::{AtomicU32, Ordering};

use rusqlite::Connection;
use rusqlite::hooks::Wal;

/// When the writer restarts the WAL, in frames (one frame per page written).
#[derive(Debug, Clone, Copy)]
pub(crate) struct WalLimits {
    /// The WAL size at which it is to be restarted (65,536 frames = 256 MiB with 4 KiB pages).
    pub reset_frames: u32,
    /// The writer checkpoints the rest itself only when this few frames are left to copy.
    pub tail_frames: u32,
    /// The writer checkpoints at this size however long the tail.
    pub force_frames: u32,
}

impl Default for WalLimits {
    fn default() -> Self {
        Self { reset_frames: 65_536, tail_frames: 1_024, force_frames: 262_144 }
    }
}

/// What the writer and the checkpointer tell each other (lock-free; stale values only delay).
#[derive(Debug, Default)]
pub(crate) struct WalState {
    pub limits: WalLimits,
    /// Frames in the WAL after the writer's last commit.
    frames: AtomicU32,
    /// Frames the last checkpoint had copied into the database file.
    backfilled: AtomicU32,
}

impl WalState {
    pub(crate) fn new(limits: WalLimits) -> Self {
        Self { limits, ..Self::default() }
    }

    /// Frames in the WAL after the last commit.
    pub(crate) fn frames(&self) -> u32 {
        self.frames.load(Ordering::Relaxed)
    }

    /// The checkpointer should run back to back: the WAL is due for a restart.
    pub(crate) fn restart_due(&self) -> bool {
        self.frames() >= self.limits.reset_frames
    }

    /// Record a checkpoint's result (`PRAGMA wal_checkpoint`: frames in the log, frames copied).
    pub(crate) fn checkpointed(&self, copied: i64) {
        self.backfilled.store(u32::try_from(copied).unwrap_or(0), Ordering::Relaxed);
    }
}

thread_local! {
    /// Frames in the WAL after this thread's last commit, as SQLite's WAL hook reported them.
    /// The hook takes a plain `fn`, and only the writer thread commits on its connection.
    static FRAMES: Cell<u32> = const { Cell::new(0) };
}

fn record_frames(_: &Wal, frames: c_int) -> rusqlite::Result<()> {
    FRAMES.set(u32::try_from(frames).unwrap_or(0));
    Ok(())
}

/// The writer thread's side: call [`WalKeeper::after_commit`] after each batch.
pub(crate) struct WalKeeper<'a> {
    state: &'a WalState,
    /// The WAL size at the last catch-up that did not lead to a restart (a reader held it).
    tried_at: u32,
}

impl<'a> WalKeeper<'a> {
    /// Install the frame-counting hook on the writer connection (run on the writer thread).
    pub(crate) fn install(conn: &Connection, state: &'a WalState) -> Self {
        conn.wal_hook(Some(record_frames));
        Self { state, tried_at: 0 }
    }

    /// Publish the WAL size and, when a restart is due and the tail is short (or the WAL has
    /// reached its hard bound), checkpoint the tail so the next transaction restarts the WAL.
    pub(crate) fn after_commit(&mut self, conn: &Connection) {
        let frames = FRAMES.get();
        self.state.frames.store(frames, Ordering::Relaxed);
        if frames < self.tried_at {
            self.tried_at = 0; // restarted since
        }
        let limits = self.state.limits;
        if frames < limits.reset_frames || frames < self.tried_at.saturating_add(limits.tail_frames) {
            return;
        }
        let tail = frames.saturating_sub(self.state.backfilled.load(Ordering::Relaxed));
        if tail > limits.tail_frames && frames < limits.force_frames {
            return; // the checkpointer is still copying: let it shorten the tail first
        }
        self.tried_at = frames;
        let started = std::time::Instant::now();
        // PASSIVE: never waits for a reader; a reader still on old frames only defers the restart.
        match conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| Ok((r.get::<_, i64>(1)?, r.get::<_, i64>(2)?))) {
            Ok((log, copied)) => {
                self.state.checkpointed(copied);
                tracing::debug!(frames, tail, log, copied, took = ?started.elapsed(), "sqlite store: writer checkpointed the WAL tail");
            }
            Err(e) => tracing::warn!(error = %e, "sqlite store: writer checkpoint failed (will retry)"),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;
    use std::sync::Arc;

    use super::*;
    use crate::checkpoint::Checkpointer;
    use crate::writer::Writer;

    fn open(path: &Path) -> Connection {
        let conn = Connection::open(path).unwrap();
        conn.execute_batch("PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0; CREATE TABLE t (v BLOB)").unwrap();
        conn
    }

    /// Insert up to `rows` rows of ~1.5 KB from 8 concurrent callers (so batches form), stopping
    /// early once the WAL has restarted `enough` times; returns every WAL size the writer reported.
    async fn load(writer: &Arc<Writer>, state: &WalState, rows: usize, enough: usize) -> Vec<u32> {
        let mut seen = Vec::new();
        for _ in 0..rows / 8 {
            if restarts(&seen) >= enough {
                break;
            }
            let mut set = tokio::task::JoinSet::new();
            for _ in 0..8 {
                let w = Arc::clone(writer);
                set.spawn(async move {
                    w.submit(|c| Ok(c.execute("INSERT INTO t (v) VALUES (zeroblob(1500))", []).map(|_| ())?)).await
                });
            }
            for r in set.join_all().await {
                r.unwrap();
            }
            seen.push(state.frames());
        }
        seen
    }

    fn restarts(seen: &[u32]) -> usize {
        seen.windows(2).filter(|w| w[1] < w[0]).count()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn with_no_checkpointer_the_writer_bounds_the_wal_at_the_force_limit() {
        let dir = tempfile::tempdir().unwrap();
        let limits = WalLimits { reset_frames: 64, tail_frames: 16, force_frames: 256 };
        let state = Arc::new(WalState::new(limits));
        let writer = Arc::new(Writer::spawn(open(&dir.path().join("w.db")), Arc::clone(&state)).unwrap());
        // ~2,000 rows of 1.5 KB: ~800 frames, i.e. three times the force limit.
        let seen = load(&writer, &state, 2_000, usize::MAX).await;
        let max = seen.iter().copied().max().unwrap();
        assert!(max < 256 + 64, "the WAL stayed near the force limit (max {max} frames)");
        assert!(restarts(&seen) >= 2, "the WAL was restarted repeatedly: {seen:?}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn under_steady_writes_the_wal_restarts_once_the_checkpointer_shortens_the_tail() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("w.db");
        // No force limit in reach: only the checkpointer-then-writer path can restart the log.
        let limits = WalLimits { reset_frames: 64, tail_frames: 32, force_frames: u32::MAX };
        let state = Arc::new(WalState::new(limits));
        let writer = Arc::new(Writer::spawn(open(&path), Arc::clone(&state)).unwrap());
        let checkpointer = Checkpointer::spawn(&path, Arc::clone(&state)).unwrap();
        // 16 callers writing without pause keep the writer's queue from ever running dry — the
        // load under which the checkpointer alone never catches up and the WAL only grows.
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let mut callers = tokio::task::JoinSet::new();
        for _ in 0..16 {
            let (w, stop) = (Arc::clone(&writer), Arc::clone(&stop));
            callers.spawn(async move {
                while !stop.load(Ordering::Relaxed) {
                    w.submit(|c| Ok(c.execute("INSERT INTO t (v) VALUES (zeroblob(1500))", []).map(|_| ())?))
                        .await
                        .unwrap();
                }
            });
        }
        let mut seen = vec![0];
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(20);
        while restarts(&seen) < 3 && tokio::time::Instant::now() < deadline {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            if state.frames() != *seen.last().unwrap() {
                seen.push(state.frames());
            }
        }
        stop.store(true, Ordering::Relaxed);
        callers.join_all().await;
        drop(checkpointer);
        assert!(restarts(&seen) >= 3, "the WAL was restarted under steady writes: {seen:?}");
    }
}

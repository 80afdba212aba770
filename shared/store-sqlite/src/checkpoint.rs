//! WAL checkpoints off the commit path.
//!
//! SQLite's automatic checkpoint runs inside the `COMMIT` that pushes the WAL past its threshold:
//! that commit (and every write queued behind it on the [`writer`](crate::writer) thread) then
//! also waits for the database pages to be copied and the database file to be synced — the
//! latency spikes of a busy Hub. The writer connection therefore runs with
//! `wal_autocheckpoint=0`, and this thread checkpoints on its own connection every
//! [`INTERVAL`] with `PASSIVE` mode, which never blocks the writer or the readers. Durability is
//! unaffected: a write is durable once its WAL frames are synced at `COMMIT` (§3.1); the
//! checkpoint only moves committed pages into the main file so the WAL can start over.

use std::path::Path;
use std::sync::Arc;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::thread::JoinHandle;
use std::time::Duration;

use rusqlite::Connection;

use crate::codec::DbError;
use crate::schema;
use crate::wal::WalState;

/// How often the checkpointer copies committed WAL frames into the database file.
pub(crate) const INTERVAL: Duration = Duration::from_millis(200);

/// The pause between passes while the WAL is due for a restart (see [`crate::wal`]): passes
/// then run nearly back to back so the frames left to copy shrink to one pass's worth.
pub(crate) const CATCH_UP_PAUSE: Duration = Duration::from_millis(2);

/// The checkpointer thread. Dropping it stops the thread (at once) and waits for it.
pub(crate) struct Checkpointer {
    stop: Option<mpsc::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl Checkpointer {
    pub(crate) fn spawn(path: &Path, wal: Arc<WalState>) -> Result<Self, DbError> {
        let conn = Connection::open(path)?;
        schema::configure(&conn)?;
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("sqlite-checkpoint".into())
            .spawn(move || run(&conn, &stopped, &wal))
            .map_err(|e| DbError::Unavailable(format!("cannot start the sqlite checkpoint thread: {e}")))?;
        Ok(Self { stop: Some(stop), thread: Some(thread) })
    }
}

fn run(conn: &Connection, stopped: &mpsc::Receiver<()>, wal: &WalState) {
    let pause = || if wal.restart_due() { CATCH_UP_PAUSE } else { INTERVAL };
    while let Err(RecvTimeoutError::Timeout) = stopped.recv_timeout(pause()) {
        // (busy, WAL frames, frames checkpointed); PASSIVE never waits for a lock.
        match conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |r| {
            Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?, r.get::<_, i64>(2)?))
        }) {
            Ok((_, log, done)) => {
                wal.checkpointed(done);
                if log > 0 {
                    tracing::trace!(log, done, "sqlite store: checkpoint");
                }
            }
            Err(e) => tracing::warn!(error = %e, "sqlite store: checkpoint failed (will retry)"),
        }
    }
}

impl Drop for Checkpointer {
    fn drop(&mut self) {
        drop(self.stop.take());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn committed_wal_frames_reach_the_database_file_without_any_commit_doing_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("c.db");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch("PRAGMA journal_mode=WAL; PRAGMA wal_autocheckpoint=0; CREATE TABLE t (v BLOB)").unwrap();
        for _ in 0..64 {
            conn.execute("INSERT INTO t (v) VALUES (zeroblob(4000))", []).unwrap();
        }
        let before = std::fs::metadata(&path).unwrap().len();
        assert!(before < 64 * 4000, "with autocheckpoint off the rows are only in the WAL ({before} bytes)");

        let checkpointer = Checkpointer::spawn(&path, Arc::default()).unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while std::fs::metadata(&path).unwrap().len() < 64 * 4000 {
            assert!(std::time::Instant::now() < deadline, "the checkpointer never copied the WAL");
            std::thread::sleep(INTERVAL / 4);
        }
        drop(checkpointer); // stops at once (no wait for the next tick)
    }
}

//! The group-commit writer: one thread owns the writer connection and commits many callers'
//! writes with one `fsync`.
//!
//! Why: with `synchronous=FULL` (§3.1) every `COMMIT` waits for the disk. One transaction per
//! write caps the Hub at the disk's sync rate, however many agents are waiting. Here callers queue
//! their write as a job; the thread takes every job queued so far (up to [`MAX_BATCH`]), runs
//! them inside one `BEGIN IMMEDIATE` transaction — each job in its own `SAVEPOINT`, so a job that
//! fails is rolled back alone — issues one `COMMIT`, and only then answers the callers. An answer
//! is therefore still given only after the write is on disk: no caller can acknowledge a write
//! that a crash could lose, and a failed `COMMIT` fails every job in the batch.
//!
//! Jobs see exactly what they saw with one transaction each: jobs run one after another on one
//! connection, so each job's reads include the earlier jobs' writes of the same batch. That is
//! what keeps the §7 compare-and-set and the §8.1 idempotency claim atomic: two racing
//! completions of one message land in one batch at most as first and second, and the second sees
//! the first's `UPDATE`.
//!
//! Savepoints cost: inside one, SQLite copies every already-dirty page a job touches into a
//! sub-journal (the last leaf of each index, per job: 4 % of a submit's CPU). So a batch first
//! runs without them; only if a job fails is the whole transaction rolled back and the batch run
//! again, each job in its own savepoint as described above. That is why a job must be
//! re-runnable (`FnMut`): a rolled-back run leaves nothing behind but its result, which the
//! second run replaces.
//!
//! A job that panics is rolled back to its savepoint and answered with an error; the thread
//! lives on. When SQLite aborts the whole transaction on its own (disk full, I/O error), the jobs
//! not yet run are not run and the batch fails as a whole.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, mpsc};
use std::thread::JoinHandle;

use rusqlite::Connection;
use tokio::sync::oneshot;

use crate::codec::DbError;
use crate::wal::{WalKeeper, WalState};

/// The most jobs one transaction carries: bounds the latency a job waits behind its batch.
pub(crate) const MAX_BATCH: usize = 256;

/// A queued write, type-erased so one channel carries every kind of write.
trait Job: Send {
    /// Run the write on the writer connection (inside the batch's savepoint for this job).
    /// `true` if it succeeded and its savepoint is to be kept.
    fn run(&mut self, conn: &Connection) -> bool;
    /// Answer the caller once the batch's fate is known: `Err` if the `COMMIT` failed.
    fn finish(self: Box<Self>, committed: Result<(), &BatchError>);
}

struct Typed<T, F> {
    f: F,
    result: Option<Result<T, DbError>>,
    reply: oneshot::Sender<Result<T, DbError>>,
}

impl<T, F> Job for Typed<T, F>
where
    T: Send,
    F: FnMut(&Connection) -> Result<T, DbError> + Send,
{
    fn run(&mut self, conn: &Connection) -> bool {
        let f = &mut self.f;
        let result = match catch_unwind(AssertUnwindSafe(|| f(conn))) {
            Ok(result) => result,
            Err(_) => Err(DbError::Unavailable("sqlite write panicked; rolled back".into())),
        };
        let ok = result.is_ok();
        self.result = Some(result);
        ok
    }

    fn finish(self: Box<Self>, committed: Result<(), &BatchError>) {
        let result = match (self.result, committed) {
            (Some(Err(e)), _) => Err(e),
            (Some(Ok(_)), Err(why)) => Err(DbError::Unavailable(format!("sqlite commit failed: {why}"))),
            (Some(Ok(value)), Ok(())) => Ok(value),
            (None, Err(why)) => Err(DbError::Unavailable(format!("sqlite write not run: {why}"))),
            (None, Ok(())) => Err(DbError::Unavailable("sqlite write not run".into())),
        };
        // The caller may have gone away (its request was cancelled); the write stands regardless.
        let _ = self.reply.send(result);
    }
}

/// The handle callers hold: a queue into the writer thread. Dropping it stops the thread after
/// it has finished the jobs already queued, and closes the connection.
pub(crate) struct Writer {
    jobs: Option<mpsc::Sender<Box<dyn Job>>>,
    thread: Option<JoinHandle<()>>,
    /// Transactions committed so far (each carrying one or more jobs).
    commits: Arc<AtomicU64>,
}

impl Writer {
    /// Move `conn` onto a new writer thread; `wal` is shared with the checkpointer (see [`crate::wal`]).
    pub(crate) fn spawn(conn: Connection, wal: Arc<WalState>) -> std::io::Result<Self> {
        let (jobs, queue) = mpsc::channel::<Box<dyn Job>>();
        let commits = Arc::new(AtomicU64::new(0));
        let counter = Arc::clone(&commits);
        let thread =
            std::thread::Builder::new().name("sqlite-writer".into()).spawn(move || run(conn, queue, &counter, &wal))?;
        Ok(Self { jobs: Some(jobs), thread: Some(thread), commits })
    }

    /// How many transactions the writer has committed.
    pub(crate) fn commits(&self) -> u64 {
        self.commits.load(Ordering::Relaxed)
    }

    /// Queue `f` and wait until the batch that carries it has committed (or failed).
    pub(crate) async fn submit<T, F>(&self, f: F) -> Result<T, DbError>
    where
        T: Send + 'static,
        F: FnMut(&Connection) -> Result<T, DbError> + Send + 'static,
    {
        let (reply, answer) = oneshot::channel();
        let job: Box<dyn Job> = Box::new(Typed { f, result: None, reply });
        let gone = || DbError::Unavailable("sqlite writer thread is not running".into());
        self.jobs.as_ref().ok_or_else(gone)?.send(job).map_err(|_| gone())?;
        answer.await.map_err(|_| gone())?
    }
}

impl Drop for Writer {
    fn drop(&mut self) {
        drop(self.jobs.take());
        if let Some(thread) = self.thread.take() {
            // Never join from the writer thread itself (a job holding the last store clone).
            if thread.thread().id() != std::thread::current().id() {
                let _ = thread.join();
            }
        }
    }
}

/// The thread: block for one job, take whatever else is queued, commit them together; then,
/// with the callers answered, let the WAL keeper restart the log if it is due.
fn run(conn: Connection, queue: mpsc::Receiver<Box<dyn Job>>, commits: &AtomicU64, wal: &WalState) {
    let mut keeper = WalKeeper::install(&conn, wal);
    let mut batch: Vec<Box<dyn Job>> = Vec::with_capacity(MAX_BATCH);
    while let Ok(first) = queue.recv() {
        batch.push(first);
        while batch.len() < MAX_BATCH {
            match queue.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        let outcome = commit_batch(&conn, &mut batch);
        if matches!(outcome, Ok(true)) {
            commits.fetch_add(1, Ordering::Relaxed);
        }
        let committed = outcome.map(|_| ());
        if let Err(why) = &committed {
            tracing::error!(jobs = batch.len(), error = %why, "sqlite store: batch commit failed");
        }
        for job in batch.drain(..) {
            job.finish(committed.as_ref().copied());
        }
        keeper.after_commit(&conn);
    }
}

/// One transaction for the whole batch: first without savepoints; if a job fails, rolled back
/// and run again with one savepoint per job (a lone job needs no second run: its rollback is the
/// whole transaction's). The control statements are prepared once (`prepare_cached`).
/// `Ok(false)`: a lone job failed and was rolled back — nothing was committed.
fn commit_batch(conn: &Connection, batch: &mut [Box<dyn Job>]) -> Result<bool, BatchError> {
    exec(conn, "BEGIN IMMEDIATE").map_err(BatchError::Sqlite)?;
    let mut failed = false;
    for job in batch.iter_mut() {
        if conn.is_autocommit() {
            return Err(BatchError::AbortedBySqlite("an earlier write"));
        }
        if !job.run(conn) {
            failed = true;
            break;
        }
    }
    if conn.is_autocommit() {
        return Err(BatchError::AbortedBySqlite("the last write"));
    }
    if !failed {
        return exec(conn, "COMMIT").map(|()| true).map_err(|e| abort(conn, e));
    }
    exec(conn, "ROLLBACK").map_err(BatchError::Sqlite)?;
    if batch.len() == 1 {
        return Ok(false); // the job answers with its error
    }
    commit_with_savepoints(conn, batch).map(|()| true)
}

/// The batch again, each job in its own savepoint: a failing job is rolled back alone.
fn commit_with_savepoints(conn: &Connection, batch: &mut [Box<dyn Job>]) -> Result<(), BatchError> {
    exec(conn, "BEGIN IMMEDIATE").map_err(BatchError::Sqlite)?;
    for job in batch.iter_mut() {
        if conn.is_autocommit() {
            // SQLite rolled the whole transaction back by itself (e.g. SQLITE_FULL, IOERR).
            return Err(BatchError::AbortedBySqlite("an earlier write"));
        }
        if let Err(e) = exec(conn, "SAVEPOINT job") {
            return Err(abort(conn, e));
        }
        let kept = if job.run(conn) {
            exec(conn, "RELEASE job")
        } else {
            // Undo this job's writes only; the others in the batch stand.
            exec(conn, "ROLLBACK TO job").and_then(|()| exec(conn, "RELEASE job"))
        };
        if let Err(e) = kept {
            return Err(abort(conn, e));
        }
    }
    if conn.is_autocommit() {
        return Err(BatchError::AbortedBySqlite("the last write"));
    }
    exec(conn, "COMMIT").map_err(|e| abort(conn, e))
}

fn exec(conn: &Connection, sql: &str) -> rusqlite::Result<()> {
    conn.prepare_cached(sql)?.execute([]).map(|_| ())
}

/// Roll the batch back (if SQLite has not already) and report why.
fn abort(conn: &Connection, e: rusqlite::Error) -> BatchError {
    if !conn.is_autocommit() {
        let _ = exec(conn, "ROLLBACK");
    }
    BatchError::Sqlite(e)
}

/// Why a batch did not commit; every job in it reports the failure to its caller.
#[derive(Debug, thiserror::Error)]
pub(crate) enum BatchError {
    #[error(transparent)]
    Sqlite(rusqlite::Error),
    /// SQLite rolled the transaction back by itself (e.g. `SQLITE_FULL`, `IOERR`).
    #[error("the transaction was aborted by {0}")]
    AbortedBySqlite(&'static str),
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn writer() -> (Writer, tempfile::TempDir) {
        let dir = tempfile::tempdir().unwrap();
        let conn = Connection::open(dir.path().join("w.db")).unwrap();
        conn.execute_batch("PRAGMA journal_mode=WAL; CREATE TABLE t (k TEXT PRIMARY KEY, v INTEGER NOT NULL)").unwrap();
        (Writer::spawn(conn, Arc::default()).unwrap(), dir)
    }

    async fn insert(w: &Writer, k: &'static str, v: i64) -> Result<(), DbError> {
        w.submit(move |c| {
            c.execute("INSERT INTO t (k, v) VALUES (?1, ?2)", rusqlite::params![k, v])?;
            Ok(())
        })
        .await
    }

    async fn value(w: &Writer, k: &'static str) -> Option<i64> {
        w.submit(move |c| {
            use rusqlite::OptionalExtension;
            Ok(c.query_row("SELECT v FROM t WHERE k = ?1", [k], |r| r.get(0)).optional()?)
        })
        .await
        .unwrap()
    }

    /// Hold the writer thread busy so that the jobs queued meanwhile form one batch.
    fn park(w: &Writer) -> impl Future<Output = Result<(), DbError>> + '_ {
        w.submit(|_| {
            std::thread::sleep(Duration::from_millis(150));
            Ok(())
        })
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn writes_queued_together_commit_in_one_transaction() {
        let (w, _dir) = writer();
        let w = Arc::new(w);
        let before = w.commits();
        let parked = tokio::spawn({
            let w = Arc::clone(&w);
            async move { park(&w).await }
        });
        // give the parking job a head start so the 50 queue up behind it
        tokio::time::sleep(Duration::from_millis(30)).await;
        let keys: Vec<&'static str> = (0..50).map(|i| &*format!("k{i}").leak()).collect();
        let mut inserts = tokio::task::JoinSet::new();
        for k in keys.iter().copied() {
            let w = Arc::clone(&w);
            inserts.spawn(async move { insert(&w, k, 1).await });
        }
        parked.await.unwrap().unwrap();
        for result in inserts.join_all().await {
            result.unwrap();
        }
        assert_eq!(w.commits() - before, 2, "one commit for the parked job, one for the 50 queued behind it");
        for k in keys {
            assert_eq!(value(&w, k).await, Some(1));
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failing_write_rolls_back_alone_and_its_batch_mates_commit() {
        let (w, _dir) = writer();
        insert(&w, "taken", 1).await.unwrap();
        let parked = park(&w);
        let (_, a, dup, b) = tokio::join!(parked, insert(&w, "a", 1), insert(&w, "taken", 2), insert(&w, "b", 1));
        assert!(a.is_ok() && b.is_ok());
        assert!(dup.is_err(), "the duplicate key fails");
        assert_eq!(value(&w, "taken").await, Some(1), "the failed write left nothing behind");
        assert_eq!((value(&w, "a").await, value(&w, "b").await), (Some(1), Some(1)));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_batch_run_again_after_a_failure_applies_each_write_exactly_once() {
        let (w, _dir) = writer();
        insert(&w, "n", 0).await.unwrap();
        insert(&w, "taken", 1).await.unwrap();
        let bump = || {
            w.submit(|c| {
                c.execute("UPDATE t SET v = v + 1 WHERE k = 'n'", [])?;
                Ok(())
            })
        };
        let parked = park(&w);
        // the first run (no savepoints) gets as far as the duplicate, then the batch runs again
        let (_, a, dup, b) = tokio::join!(parked, bump(), insert(&w, "taken", 2), bump());
        assert!(a.is_ok() && b.is_ok() && dup.is_err());
        assert_eq!(value(&w, "n").await, Some(2), "each increment once, none from the rolled-back run");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_partial_failure_undoes_only_that_jobs_own_earlier_statements() {
        let (w, _dir) = writer();
        let before = w.commits();
        let r = w
            .submit(|c| {
                c.execute("INSERT INTO t (k, v) VALUES ('half', 1)", [])?;
                c.execute("INSERT INTO t (k, v) VALUES ('half', 2)", [])?; // fails: duplicate
                Ok(())
            })
            .await;
        assert!(r.is_err());
        assert_eq!(w.commits(), before, "a lone failed write commits nothing");
        assert_eq!(value(&w, "half").await, None);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_panicking_write_is_an_error_and_the_writer_lives_on() {
        let (w, _dir) = writer();
        let r: Result<(), DbError> = w
            .submit(|c| {
                c.execute("INSERT INTO t (k, v) VALUES ('p', 1)", [])?;
                panic!("boom");
            })
            .await;
        assert!(matches!(r, Err(DbError::Unavailable(_))));
        assert_eq!(value(&w, "p").await, None, "the panicking job was rolled back");
        insert(&w, "after", 1).await.unwrap();
        assert_eq!(value(&w, "after").await, Some(1));
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_answer_means_the_write_is_committed_on_disk() {
        let (w, dir) = writer();
        insert(&w, "durable", 7).await.unwrap();
        // A separate connection sees it at once: it was committed before the answer.
        let other = Connection::open(dir.path().join("w.db")).unwrap();
        let v: i64 = other.query_row("SELECT v FROM t WHERE k = 'durable'", [], |r| r.get(0)).unwrap();
        assert_eq!(v, 7);
    }
}

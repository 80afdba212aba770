//! # ma2h-store-sqlite
//!
//! The SQLite adapter behind the Hub's [`MessageStore`](ma2h_core::ports::MessageStore) and
//! [`CredentialStore`](ma2h_core::ports::CredentialStore) ports, for the local server.
//!
//! * **Durability (§3.1).** WAL journal with `synchronous=FULL`: a commit is on disk before the
//!   call returns, and the Hub acknowledges only afterwards, so a `kill -9` loses nothing that was
//!   acknowledged. Schema migrations are versioned by `PRAGMA user_version` and run at open.
//! * **Concurrency.** One writer connection, owned by the [`writer`] thread, runs every write;
//!   writes are serialized, which is what makes the §7 compare-and-set, the §8.1 idempotency claim
//!   and the §8.6 counter increments atomic. The thread commits the writes queued at the same time
//!   in one transaction (group commit: one `fsync` for many callers, each answered only after it).
//!   File databases also get a small pool of `query_only` reader connections; WAL lets them read
//!   the last commit while a write is in progress and never wait for it, so a read (an indexed
//!   lookup) runs inline on a free reader; only when every reader is busy does it wait on
//!   [`tokio::task::spawn_blocking`].
//! * **Claims in memory.** §8.1 idempotency claims are appended in arrival order and found by key
//!   through an in-memory map rebuilt at open (see the `claims` module): a SQL index on agents' random
//!   keys made every submit dirty a random page.
//! * **Bounded WAL.** Checkpoints run on their own thread; under sustained writes the writer
//!   checkpoints the short tail that thread leaves so the log restarts at 256 MiB (see `wal`).
//! * **Representation.** Timestamps are integer Unix milliseconds (sub-millisecond parts are
//!   truncated); envelopes and Responses are compact JSON text, member order preserved.
//!   Statements are prepared once per connection (`prepare_cached`).
//!
//! See [`messages`] and [`credentials`] for how each port method maps onto SQL.

use std::fmt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use writer::Writer;

use ma2h_core::ports::StoreError;
use rusqlite::{Connection, OpenFlags};

pub mod audit;
mod checkpoint;
mod claims;
mod codec;
pub mod credentials;
pub mod grants;
pub mod listing;
pub mod mailbox;
pub mod messages;
pub mod notifications;
mod schema;
pub mod sessions;
pub mod sql;
pub mod triage;
mod wal;
mod writer;

use codec::DbError;
pub use schema::{MIGRATIONS, SCHEMA_VERSION, StoreSettings};

/// Reader connections kept for a file database (reads never wait for the writer in WAL mode).
const READERS: usize = 4;

/// A SQLite-backed store implementing both store ports. Cheap to clone (shared connections).
#[derive(Clone)]
pub struct SqliteStore {
    inner: Arc<Inner>,
}

struct Inner {
    writer: Writer,
    /// §8.1 claims by key (see [`claims`]).
    claims: Arc<claims::ClaimIndex>,
    /// File databases only; declared after `writer` so it stops after the writer has drained.
    _checkpointer: Option<checkpoint::Checkpointer>,
    /// Empty for an in-memory database: every read then goes through the writer.
    readers: Vec<Mutex<Connection>>,
    next_reader: AtomicUsize,
    path: Option<PathBuf>,
    settings: StoreSettings,
}

impl fmt::Debug for SqliteStore {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SqliteStore")
            .field("path", &self.inner.path)
            .field("readers", &self.inner.readers.len())
            .field("settings", &self.inner.settings)
            .finish()
    }
}

impl SqliteStore {
    /// Open (creating if needed) the database file at `path` and migrate it to the current
    /// schema. Blocking: call it at startup or inside `spawn_blocking`.
    pub fn open(path: impl AsRef<Path>) -> Result<Self, StoreError> {
        let path = path.as_ref().to_path_buf();
        let mut writer = Connection::open(&path).map_err(DbError::from)?;
        let settings = schema::prepare_writer(&mut writer)?;
        let readers = (0..READERS)
            .map(|_| {
                let flags =
                    OpenFlags::SQLITE_OPEN_READ_WRITE | OpenFlags::SQLITE_OPEN_NO_MUTEX | OpenFlags::SQLITE_OPEN_URI;
                let conn = Connection::open_with_flags(&path, flags)?;
                schema::prepare_reader(&conn)?;
                Ok(Mutex::new(conn))
            })
            .collect::<Result<Vec<_>, DbError>>()?;
        let wal = Arc::new(wal::WalState::new(wal::WalLimits::default()));
        let checkpointer = checkpoint::Checkpointer::spawn(&path, Arc::clone(&wal))?;
        tracing::info!(path = %path.display(), journal_mode = %settings.journal_mode, synchronous = settings.synchronous, "sqlite store opened");
        Self::from_parts(writer, readers, Some(path), Some(checkpointer), settings, wal)
    }

    /// A private in-memory database (tests, demos). It lives as long as this store and its
    /// clones; it is **not** durable and therefore not §3.1-conformant.
    pub fn open_in_memory() -> Result<Self, StoreError> {
        let mut writer = Connection::open_in_memory().map_err(DbError::from)?;
        let settings = schema::prepare_writer(&mut writer)?;
        Self::from_parts(writer, Vec::new(), None, None, settings, Arc::default())
    }

    fn from_parts(
        writer: Connection,
        readers: Vec<Mutex<Connection>>,
        path: Option<PathBuf>,
        checkpointer: Option<checkpoint::Checkpointer>,
        settings: StoreSettings,
        wal: Arc<wal::WalState>,
    ) -> Result<Self, StoreError> {
        let claims = Arc::new(claims::ClaimIndex::open(&writer)?);
        let writer = Writer::spawn(writer, wal)
            .map_err(|e| StoreError::Unavailable(format!("cannot start the sqlite writer thread: {e}")))?;
        Ok(Self {
            inner: Arc::new(Inner {
                writer,
                claims,
                _checkpointer: checkpointer,
                readers,
                next_reader: AtomicUsize::new(0),
                path,
                settings,
            }),
        })
    }

    /// `false` for an in-memory database: its reads run on the writer connection.
    pub(crate) fn has_readers(&self) -> bool {
        !self.inner.readers.is_empty()
    }

    /// The database file, or `None` in memory.
    pub fn path(&self) -> Option<&Path> {
        self.inner.path.as_deref()
    }

    /// Write transactions committed since open. Each carries one or more writes (group commit),
    /// so comparing it with the number of writes shows how well commits are being shared.
    pub fn commits(&self) -> u64 {
        self.inner.writer.commits()
    }

    /// The settings the writer connection runs with (for startup logs and durability checks).
    pub fn settings(&self) -> &StoreSettings {
        &self.inner.settings
    }

    /// Run `f` on the writer thread, inside a transaction shared with the other writes queued
    /// at the same time (its own savepoint: an `Err` rolls back `f`'s writes alone). Returns once
    /// that transaction is committed — on disk — or failed. `f` must not open a transaction, and
    /// may run twice (a batch is run again when one of its jobs fails, see `writer`): its
    /// effects outside the connection must bear that.
    pub(crate) async fn write<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnMut(&Connection) -> Result<T, DbError> + Send + 'static,
    {
        let Some(pending) = ma2h_core::audit::scope::current() else {
            return self.write_plain(f).await;
        };
        // Issue 42: the audit records of the event this call commits join its transaction — iff
        // the write changed a row (a lost compare-and-set or a replay writes nothing, and records
        // nothing).
        let rows = crate::audit::rows(&pending.records())?;
        let mut f = f;
        let (value, wrote) = self
            .write_plain(move |conn| {
                let before = conn.total_changes();
                let value = f(conn)?;
                let wrote = conn.total_changes() != before;
                if wrote {
                    crate::audit::insert_rows(conn, &rows)?;
                }
                Ok((value, wrote))
            })
            .await?;
        if wrote {
            pending.written();
        }
        Ok(value)
    }

    pub(crate) async fn write_plain<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnMut(&Connection) -> Result<T, DbError> + Send + 'static,
    {
        let span = store_span("write");
        tracing::Instrument::instrument(self.inner.writer.submit(f), span).await.map_err(StoreError::from)
    }

    /// Run `f` on a reader connection inside one read transaction, so every statement in `f`
    /// reads the same snapshot (an in-memory database has no readers: `f` runs on the writer).
    pub(crate) async fn read<T, F>(&self, f: F) -> Result<T, StoreError>
    where
        T: Send + 'static,
        F: FnMut(&Connection) -> Result<T, DbError> + Send + 'static,
    {
        if self.inner.readers.is_empty() {
            return self.write_plain(f).await;
        }
        // A WAL reader never waits for the writer or the checkpointer, so with a reader free the
        // read (an indexed lookup: microseconds) runs right here; handing it to the blocking pool
        // cost more than the read itself. With every reader busy, wait on the blocking pool.
        let span = store_span("read");
        if let Some(conn) = self.inner.free_reader() {
            return span.in_scope(|| snapshot(&conn, f)).map_err(StoreError::from);
        }
        let inner = Arc::clone(&self.inner);
        tracing::Instrument::instrument(blocking(move || snapshot(&inner.reader(), f)), span).await
    }
}

/// Issue 43: a `debug` span per store call, built only when traces are exported (`debug` is then
/// enabled) and only inside another span (a request, a push attempt, a channel send): the
/// background pollers' idle reads are not traced.
fn store_span(operation: &'static str) -> tracing::Span {
    if tracing::level_enabled!(tracing::Level::DEBUG) && !tracing::Span::current().is_none() {
        tracing::debug_span!("store", db.system = "sqlite", db.operation = operation)
    } else {
        tracing::Span::none()
    }
}

/// Run `f` in one read transaction: every statement in it reads the same snapshot.
fn snapshot<T>(conn: &Connection, f: impl FnOnce(&Connection) -> Result<T, DbError>) -> Result<T, DbError> {
    let tx = conn.unchecked_transaction()?;
    let value = f(&tx)?;
    tx.commit()?;
    Ok(value)
}

impl Inner {
    /// A reader nobody is using, if there is one.
    fn free_reader(&self) -> Option<MutexGuard<'_, Connection>> {
        let start = self.next_reader.fetch_add(1, Ordering::Relaxed);
        let n = self.readers.len();
        (0..n).find_map(|i| self.readers[(start + i) % n].try_lock().ok())
    }

    /// A free reader if there is one, else wait for the next in round-robin order.
    fn reader(&self) -> MutexGuard<'_, Connection> {
        let start = self.next_reader.fetch_add(1, Ordering::Relaxed);
        let n = self.readers.len();
        (0..n)
            .find_map(|i| self.readers[(start + i) % n].try_lock().ok())
            .unwrap_or_else(|| lock(&self.readers[start % n]))
    }
}

/// A panic while holding a connection unwinds through its `Transaction`, which rolls back, so a
/// poisoned connection is still consistent and can be reused.
fn lock(m: &Mutex<Connection>) -> MutexGuard<'_, Connection> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

async fn blocking<T, F>(f: F) -> Result<T, StoreError>
where
    T: Send + 'static,
    F: FnOnce() -> Result<T, DbError> + Send + 'static,
{
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| StoreError::Unavailable(format!("sqlite task failed: {e}")))?
        .map_err(StoreError::from)
}

//! Run history: every run (and every step of a search) kept in an embedded SQLite
//! database, by default `.headroom/history.db` under the working directory.
//!
//! [`Store::open`] creates or migrates the database ([`schema`]); [`Store::begin_run`]
//! inserts a row with status `running` and returns a [`RunWriter`] that appends each
//! timeline second as it completes and the summary and histograms at the end, so a run
//! that is killed keeps what it had. [`query`] lists and loads runs back
//! ([`RunRow`], [`StoredRun`]); [`reference`] resolves `latest~1` or `label:round=6`
//! to an id; [`redact`] keeps secrets out of everything stored; [`origin`] finds the
//! scenario hash and git commit a run records.
//!
//! The database runs in WAL mode with a busy timeout, so several processes may write
//! one store at once. A `Store` is one connection: use it from one thread.

mod histograms;
pub mod origin;
pub mod query;
pub mod redact;
pub mod reference;
mod schema;
mod writer;

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::Connection;

pub use histograms::StoredHistograms;
pub use query::{RunFilter, RunRow, RunStatus, StoredHold, StoredRun, StoredStep};
pub use reference::RunRef;
pub use writer::{verdict, RunKind, RunMeta, RunWriter};

/// Where the store lives when neither `--store` nor `HEADROOM_STORE` says otherwise,
/// relative to the working directory.
pub const DEFAULT_PATH: &str = ".headroom/history.db";

/// Environment variable naming the store file.
pub const STORE_ENV: &str = "HEADROOM_STORE";

/// How long a writer waits for another process's lock before giving up.
const BUSY_TIMEOUT: Duration = Duration::from_secs(15);

/// Why the store could not be used.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The store's directory could not be created.
    #[error("cannot open store {path}: {source}")]
    CreateDir {
        /// The store file.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: std::io::Error,
    },
    /// The database could not be opened, set up or migrated.
    #[error("cannot open store {path}: {source}")]
    Open {
        /// The store file.
        path: PathBuf,
        /// What went wrong.
        #[source]
        source: Box<StoreError>,
    },
    /// SQLite would not switch the database to WAL mode.
    #[error("cannot open store {path}: journal mode is {mode}, not wal")]
    JournalMode {
        /// The store file.
        path: PathBuf,
        /// The journal mode SQLite kept.
        mode: String,
    },
    /// The file was written by a newer headroom.
    #[error("store schema version {found} is newer than this headroom understands ({known})")]
    TooNew {
        /// Version found in the file.
        found: i64,
        /// Newest version this build knows.
        known: i64,
    },
    /// An SQL statement failed.
    #[error("store: {0}")]
    Sql(#[from] rusqlite::Error),
    /// A stored JSON value could not be decoded.
    #[error("store: run {id} has unreadable {what}: {source}")]
    Corrupt {
        /// The run.
        id: i64,
        /// Which part.
        what: &'static str,
        /// The decoder's error.
        #[source]
        source: serde_json::Error,
    },
    /// A stored histogram could not be decoded.
    #[error("store: run {id} has unreadable histogram: {source:?}")]
    CorruptHistogram {
        /// The run.
        id: i64,
        /// The decoder's error.
        #[source]
        source: hdrhistogram::serialization::DeserializeError,
    },
    /// A run reference matched no run.
    #[error("no run matches {reference:?}")]
    NotFound {
        /// The reference, in words (`7`, `latest~2`, `label:k=v`).
        reference: String,
    },
    /// A run reference could not be parsed.
    #[error(
        "bad run reference {text:?}: expected an id, `latest`, `latest~N` or `label:key=value`"
    )]
    BadReference {
        /// The reference as given.
        text: String,
    },
}

/// An open run history. One SQLite connection; not shared between threads.
#[derive(Debug)]
pub struct Store {
    conn: Connection,
    path: PathBuf,
}

impl Store {
    /// Opens the store at `path`, creating the file (and its directory) and bringing
    /// its schema up to date. Safe while other processes have it open.
    pub fn open(path: &Path) -> Result<Store, StoreError> {
        if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(|source| StoreError::CreateDir {
                path: path.to_path_buf(),
                source,
            })?;
        }
        // Two processes creating the same store at once can get SQLITE_BUSY from the
        // journal-mode switch or the first migration without SQLite's busy handler
        // being consulted (it would deadlock), so the whole preparation is retried.
        let deadline = std::time::Instant::now() + BUSY_TIMEOUT;
        let conn = loop {
            match prepare(path) {
                Ok(conn) => break conn,
                Err(e) if is_busy(&e) && std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(20));
                }
                Err(e) => {
                    return Err(StoreError::Open {
                        path: path.to_path_buf(),
                        source: Box::new(e),
                    })
                }
            }
        };
        Ok(Store {
            conn,
            path: path.to_path_buf(),
        })
    }

    /// The file this store was opened from.
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn conn(&self) -> &Connection {
        &self.conn
    }
}

/// The store path to use: the flag's when given (clap also fills it from
/// [`STORE_ENV`]), else [`DEFAULT_PATH`].
pub fn resolve_path(flag: Option<&Path>) -> PathBuf {
    flag.map_or_else(|| PathBuf::from(DEFAULT_PATH), Path::to_path_buf)
}

/// Opens `path` in WAL mode with a busy timeout and brings its schema up to date.
fn prepare(path: &Path) -> Result<Connection, StoreError> {
    let conn = Connection::open(path)?;
    conn.busy_timeout(BUSY_TIMEOUT)?;
    // WAL lets readers and one writer proceed together; NORMAL sync is durable
    // across a process kill (the case that matters here), if not a power cut.
    let mode: String = conn.query_row("PRAGMA journal_mode = WAL", [], |r| r.get(0))?;
    if !mode.eq_ignore_ascii_case("wal") {
        return Err(StoreError::JournalMode {
            path: path.to_path_buf(),
            mode,
        });
    }
    conn.execute_batch("PRAGMA synchronous = NORMAL; PRAGMA foreign_keys = ON;")?;
    // A running run rewrites its summary so far and histograms every second: with
    // SQLite's default (a checkpoint per 1000 pages) the WAL beside a store reached
    // 4 MB within minutes; 100 pages keep it near 400 kB.
    conn.pragma_update(None, "wal_autocheckpoint", 100)?;
    // A run appends a row a second and rewrites a few: SQLite's default page cache
    // (2 MB) only filled, slowly, with pages it never reads again, and showed in a
    // soak as memory growing for hours. 256 kB holds what a second touches.
    conn.pragma_update(None, "cache_size", -256)?;
    schema::migrate(&conn)?;
    Ok(conn)
}

/// Whether `e` is SQLite saying another connection holds the lock.
fn is_busy(e: &StoreError) -> bool {
    match e {
        StoreError::Sql(rusqlite::Error::SqliteFailure(f, _)) => matches!(
            f.code,
            rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked
        ),
        _ => false,
    }
}

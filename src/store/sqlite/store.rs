//! [`SqliteDriver`]: the queue's [`Driver`] on one SQLite connection, and [`SqliteStore`],
//! the queue over it. Each write is one `BEGIN IMMEDIATE` transaction (or one read);
//! which rule runs in it is the queue's ([`Queue`]). Savepoints, `INDEXED BY` and the WAL
//! stay in this driver.

use std::path::PathBuf;
use std::sync::Arc;

use rusqlite::Connection;

use super::conn::{self, write_clocked, write_no_sweep};
use super::events;
use super::tx::SqlRead;
use crate::clock::Millis;
use crate::error::Result;
use crate::store::calls::ExportSink;
use crate::store::driver::{Driver, Reads, Statements, Write};
use crate::store::queue::Queue;

/// A clock: milliseconds since the epoch.
pub type Clock = Arc<dyn Fn() -> Millis + Send + Sync>;

/// The SQLite backend: the queue over one connection ([`SqliteDriver`]).
pub type SqliteStore = Queue<SqliteDriver>;

/// The SQLite driver: one connection and a clock. Each write is one `BEGIN IMMEDIATE`
/// transaction; reads run on the connection (or in the view [`crate::store::Store::view_now`] opened).
pub struct SqliteDriver {
    conn: Connection,
    clock: Clock,
}

impl std::fmt::Debug for SqliteDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteDriver").finish_non_exhaustive()
    }
}

impl Queue<SqliteDriver> {
    /// A store on an open connection, on the system clock.
    fn on_connection(conn: Connection) -> SqliteStore {
        SqliteStore::with_clock(conn, Arc::new(crate::clock::now_ms))
    }

    /// A store on an open connection with its own clock (tests).
    pub fn with_clock(conn: Connection, clock: Clock) -> SqliteStore {
        Queue::new(SqliteDriver { conn, clock })
    }

    /// Open (creating and migrating if needed) the database at `path`.
    pub fn open(path: &std::path::Path) -> Result<SqliteStore> {
        Ok(SqliteStore::on_connection(conn::open(path)?))
    }

    /// Open an existing database for reading only: nothing is created, migrated or
    /// written ([`conn::open_read`]).
    pub fn open_read(path: &std::path::Path) -> Result<SqliteStore> {
        Ok(SqliteStore::on_connection(conn::open_read(path)?))
    }

    /// An in-memory store with the schema, for tests.
    pub fn in_memory() -> Result<SqliteStore> {
        Ok(SqliteStore::on_connection(conn::open_in_memory()?))
    }

    /// The connection, for this backend's own tests and tools.
    pub fn connection(&mut self) -> &mut Connection {
        self.driver().connection()
    }
}

impl SqliteDriver {
    /// The connection, for this backend's own tests and tools.
    pub fn connection(&mut self) -> &mut Connection {
        &mut self.conn
    }

    fn now(&self) -> Millis {
        (self.clock)()
    }
}

impl Driver for SqliteDriver {
    fn write<T>(
        &mut self,
        kind: Write,
        f: impl FnOnce(&mut dyn Statements, Millis) -> Result<T>,
    ) -> Result<T> {
        let clock = self.clock.clone();
        match kind {
            // Every SQLite write runs alone (`BEGIN IMMEDIATE`).
            Write::Swept | Write::Alone => {
                write_clocked(&mut self.conn, &*clock, |db, now| f(db, now))
            }
            Write::Plain => write_no_sweep(&mut self.conn, |db| f(db, clock())),
            Write::Unsynced => {
                // Committed without its own fsync (`synchronous=NORMAL` for this one
                // transaction): what it marks is durable already (an outcome file is
                // fsynced, renamed and its directory fsynced), and losing this commit to a
                // power cut only leaves the marks unset, so the same documents are written
                // again. The WAL frames are made durable by the next synced commit (every
                // other write), in order. A CLI answer saves one fsync of its five.
                self.conn.execute_batch("PRAGMA synchronous=NORMAL")?;
                let done = write_no_sweep(&mut self.conn, |db| f(db, clock()));
                let restored = self.conn.execute_batch("PRAGMA synchronous=FULL");
                let done = done?;
                restored?;
                Ok(done)
            }
        }
    }

    fn read<T>(&mut self, f: impl Fn(&mut dyn Reads) -> Result<T>) -> Result<T> {
        f(&mut SqlRead(&self.conn))
    }

    fn snapshot<T>(&mut self, f: impl Fn(&mut dyn Reads) -> Result<T>) -> Result<T> {
        // One read transaction: a snapshot even while the daemon writes.
        let tx = self.conn.unchecked_transaction()?;
        f(&mut SqlRead(&tx))
    }

    fn now(&mut self) -> Result<Millis> {
        Ok(SqliteDriver::now(self))
    }

    fn origin(&self) -> Option<&str> {
        None
    }

    fn key_dir(&self) -> Option<PathBuf> {
        events::root_dir(&self.conn)
    }

    fn view_now(&mut self) -> Result<()> {
        let now = SqliteDriver::now(self);
        conn::view_at(&mut self.conn, now)
    }

    fn export(&mut self, sink: ExportSink<'_>) -> Result<()> {
        super::export::export(&mut self.conn, sink)
    }
}

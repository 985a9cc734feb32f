//! [`SqliteDriver`]: the queue's [`Driver`] on one SQLite connection, and [`SqliteStore`],
//! the queue over it. Each write is one `BEGIN IMMEDIATE` transaction (or one read);
//! which rule runs in it is the queue's ([`Queue`]). Savepoints, `INDEXED BY` and the WAL
//! stay in this driver.

use std::path::PathBuf;
use std::sync::Arc;

use rusqlite::Connection;

use super::conn::{self, write_clocked, write_no_sweep};
use super::sql::SqlRead;
use super::{audit, events, requests};
use crate::clock::Millis;
use crate::error::Result;
use crate::protocol::Outcome;
use crate::store::driver::{Driver, Statements};
use crate::store::queue::Queue;
use crate::store::{Anchor, Event, ExportSink, ListFilter, RequestRow, Swept, Verified};

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
        &mut self.driver().conn
    }
}

impl SqliteDriver {
    fn now(&self) -> Millis {
        (self.clock)()
    }
}

impl Driver for SqliteDriver {
    type Read<'a> = SqlRead<'a>;

    fn write<T>(&mut self, f: impl FnOnce(&mut dyn Statements, Millis) -> Result<T>) -> Result<T> {
        let clock = self.clock.clone();
        write_clocked(&mut self.conn, &*clock, |db, now| f(db, now))
    }

    fn write_no_sweep<T>(&mut self, f: impl FnOnce(&mut dyn Statements) -> Result<T>) -> Result<T> {
        write_no_sweep(&mut self.conn, |db| f(db))
    }

    fn write_alone<T>(
        &mut self,
        f: impl FnOnce(&mut dyn Statements, Millis) -> Result<T>,
    ) -> Result<T> {
        // Every SQLite write runs alone (`BEGIN IMMEDIATE`).
        self.write(f)
    }

    fn read<T>(&mut self, f: impl Fn(&mut SqlRead<'_>) -> Result<T>) -> Result<T> {
        f(&mut SqlRead(&self.conn))
    }

    fn now(&mut self) -> Result<Millis> {
        Ok(SqliteDriver::now(self))
    }

    fn sweep_if_due(&mut self) -> Result<Option<Swept>> {
        let now = SqliteDriver::now(self);
        conn::sweep_if_due(&mut self.conn, now)
    }

    fn next_due(&mut self) -> Result<Option<Millis>> {
        requests::next_due(&self.conn)
    }

    fn set_context_ladders(&mut self, policies: &[(String, String)]) -> Result<()> {
        super::ladder::set_context_ladders(&mut self.conn, policies)
    }

    fn add_delivery_routes(&mut self, routes: &[crate::store::Route]) -> Result<()> {
        super::deliveries::add_routes(&mut self.conn, routes)
    }

    fn deliveries_due(
        &mut self,
        routes: &[crate::store::Route],
        now: Millis,
        limit: usize,
    ) -> Result<Vec<crate::store::Delivery>> {
        super::deliveries::due(&self.conn, routes, now, limit)
    }

    fn next_delivery_due(&mut self, routes: &[crate::store::Route]) -> Result<Option<Millis>> {
        super::deliveries::next_due(&self.conn, routes)
    }

    fn mark_delivered(&mut self, id: &str, now: Millis) -> Result<()> {
        super::deliveries::mark_delivered(&self.conn, id, now)
    }

    fn mark_delivery_failed(&mut self, id: &str, next_ms: Millis, error: &str) -> Result<()> {
        super::deliveries::mark_failed(&self.conn, id, next_ms, error)
    }

    fn deliveries(&mut self, request_id: &str) -> Result<Vec<crate::store::Delivery>> {
        super::deliveries::of_request(&self.conn, request_id)
    }

    fn delivery_counts(&mut self) -> Result<Vec<crate::store::DeliveryCounts>> {
        super::deliveries::counts(&self.conn)
    }

    fn outbox_pending(&mut self, after: i64, limit: usize) -> Result<Vec<(i64, Outcome)>> {
        requests::outbox_pending(&self.conn, after, limit as i64)
    }

    fn mark_outbox_written(&mut self, keys: &[i64]) -> Result<()> {
        // Committed without its own fsync (`synchronous=NORMAL` for this one transaction):
        // the outcome files it marks are durable already (fsynced, renamed, directory
        // fsynced), and losing this commit to a power cut only leaves their flags set, so
        // the same documents are written again. The WAL frames are made durable by the
        // next synced commit (every other write), in order. A CLI answer saved one fsync
        // of its five.
        self.conn.execute_batch("PRAGMA synchronous=NORMAL")?;
        let marked = write_no_sweep(&mut self.conn, |tx| requests::mark_outbox_written(tx, keys));
        let restored = self.conn.execute_batch("PRAGMA synchronous=FULL");
        marked?;
        Ok(restored?)
    }

    fn view_now(&mut self) -> Result<()> {
        let now = SqliteDriver::now(self);
        conn::view_at(&mut self.conn, now)
    }

    fn get(&mut self, id: &str) -> Result<Option<RequestRow>> {
        requests::get(&self.conn, id)
    }

    fn get_any(&mut self, id: &str) -> Result<Option<RequestRow>> {
        requests::get_any(&self.conn, id)
    }

    fn list(&mut self, filter: &ListFilter) -> Result<Vec<RequestRow>> {
        requests::list(&self.conn, filter)
    }

    fn events(&mut self, request_id: &str) -> Result<Vec<Event>> {
        events::for_request(&self.conn, request_id)
    }

    fn verify(&mut self, anchors: &[(PathBuf, Anchor)]) -> Result<Verified> {
        audit::verify(&self.conn, anchors)
    }

    fn export(&mut self, sink: ExportSink<'_>) -> Result<()> {
        super::export::export(&mut self.conn, sink)
    }
}

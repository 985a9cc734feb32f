//! The drivers this build has, one of them chosen at run time ([`AnyDriver`]): what the
//! one [`Store`](crate::store::Store) every face uses runs on.
//!
//! The choice is made once, where a root opens its store ([`crate::root::Root::open_store`]);
//! each transaction of the queue then goes to the driver chosen. A driver's own tools and
//! tests keep its typed store ([`crate::store::sqlite::SqliteStore`],
//! [`crate::store::postgres::PgStore`]), which becomes a [`Store`](crate::store::Store) with
//! `into()`.

use std::path::PathBuf;

use crate::clock::Millis;
use crate::error::Result;
use crate::store::calls::{ExportSink, Record, Wakeups};
use crate::store::driver::{Driver, Reads, Statements, Write};
use crate::store::postgres::{PgDriver, PgStore};
use crate::store::queue::Queue;
use crate::store::sqlite::{SqliteDriver, SqliteStore};

/// The queue every face's use-cases call: [`Queue`] over the driver the root chose.
pub type Store = Queue<AnyDriver>;

/// SQLite (one host) or PostgreSQL (many hosts).
#[derive(Debug)]
pub enum AnyDriver {
    /// A SQLite file in the root.
    Sqlite(SqliteDriver),
    /// A shared PostgreSQL database (boxed: its connection and prepared statements are
    /// several times a SQLite connection's handle).
    Postgres(Box<PgDriver>),
}

/// Each method is the chosen driver's.
macro_rules! chosen {
    ($self:ident, $d:ident => $call:expr) => {
        match $self {
            AnyDriver::Sqlite($d) => $call,
            AnyDriver::Postgres($d) => $call,
        }
    };
}

impl Driver for AnyDriver {
    fn write<T>(
        &mut self,
        kind: Write,
        f: impl FnOnce(&mut dyn Statements, Millis) -> Result<T>,
    ) -> Result<T> {
        chosen!(self, d => d.write(kind, f))
    }

    fn read<T>(&mut self, f: impl Fn(&mut dyn Reads) -> Result<T>) -> Result<T> {
        chosen!(self, d => d.read(f))
    }

    fn snapshot<T>(&mut self, f: impl Fn(&mut dyn Reads) -> Result<T>) -> Result<T> {
        chosen!(self, d => d.snapshot(f))
    }

    fn now(&mut self) -> Result<Millis> {
        chosen!(self, d => d.now())
    }

    fn origin(&self) -> Option<&str> {
        chosen!(self, d => d.origin())
    }

    fn key_dir(&self) -> Option<PathBuf> {
        chosen!(self, d => d.key_dir())
    }

    fn view_now(&mut self) -> Result<()> {
        chosen!(self, d => d.view_now())
    }

    fn export(&mut self, sink: ExportSink<'_>) -> Result<()> {
        chosen!(self, d => d.export(sink))
    }

    fn import(&mut self, records: &mut dyn Iterator<Item = Result<Record>>) -> Result<u64> {
        chosen!(self, d => d.import(records))
    }

    fn wakeups(&mut self, feed: bool) -> Result<Option<Box<dyn Wakeups>>> {
        chosen!(self, d => d.wakeups(feed))
    }
}

impl From<SqliteStore> for Store {
    fn from(store: SqliteStore) -> Store {
        store.map_driver(AnyDriver::Sqlite)
    }
}

impl From<PgStore> for Store {
    fn from(store: PgStore) -> Store {
        store.map_driver(|d| AnyDriver::Postgres(Box::new(d)))
    }
}

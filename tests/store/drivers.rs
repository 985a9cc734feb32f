//! The drivers' constructors for the conformance suite: each builds a fresh, empty store on
//! the scenario's clock, through the driver's public constructors only.

use std::cell::RefCell;

use dshq::store::postgres::PgStore;
use dshq::store::sqlite::SqliteStore;
use dshq::store::{AnyDriver, Store};

use crate::scenarios::TestClock;
use crate::throwaway;

thread_local! {
    /// The temporary directories of this test's SQLite files: each test runs on its own
    /// thread, so they are removed when the test ends, not before.
    static DIRS: RefCell<Vec<tempfile::TempDir>> = const { RefCell::new(Vec::new()) };
}

/// A fresh SQLite store on a real file (WAL, as the daemon opens it) in a temporary
/// directory that lives as long as the test: the [`Store`] every face takes.
pub fn sqlite(clock: &TestClock) -> Store {
    sqlite_store(clock).into()
}

/// The connection under a store [`sqlite`] made, for a test of what only SQLite has.
pub fn sqlite_connection(store: &mut Store) -> &mut rusqlite::Connection {
    match store.driver() {
        AnyDriver::Sqlite(d) => d.connection(),
        AnyDriver::Postgres(_) => panic!("not a SQLite store"),
    }
}

fn sqlite_store(clock: &TestClock) -> SqliteStore {
    let dir = tempfile::tempdir().expect("a temporary directory for the SQLite file");
    let conn = dshq::store::sqlite::open(&dir.path().join("dshq.db"))
        .unwrap_or_else(|e| panic!("open a SQLite store in {}: {e}", dir.path().display()));
    DIRS.with(|d| d.borrow_mut().push(dir));
    SqliteStore::with_clock(conn, clock.as_fn())
}

/// A fresh PostgreSQL store: a new database on the shared throwaway server. Fails, saying
/// why, when the server cannot be reached or started.
pub fn postgres(clock: &TestClock) -> Store {
    postgres_store(clock).into()
}

/// [`postgres`] as the driver's typed store.
fn postgres_store(clock: &TestClock) -> PgStore {
    let url = throwaway::shared().fresh_database().unwrap_or_else(|e| {
        panic!(
            "the PostgreSQL conformance tests need a server: set {} to a postgres:// URL of \
             a role that may create databases (contrib/test/run starts one), or install the \
             PostgreSQL server binaries: {e}",
            throwaway::ENV
        )
    });
    PgStore::connect(&url, None, None)
        .unwrap_or_else(|e| panic!("connect to the throwaway PostgreSQL database: {e}"))
        .with_clock(clock.as_fn())
}

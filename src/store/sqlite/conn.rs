//! The SQLite connection: its setup and pragmas, the embedded migrations, and the write
//! transactions every operation runs in (each sweeping what fell due first).
//!
//! Every write is a `BEGIN IMMEDIATE` transaction opened by [`write()`], so a CLI command and
//! the daemon share exactly the same logic and take SQLite's write lock up front (no
//! deadlock-prone lock upgrades). Each write transaction first calls [`sweep`], which ends
//! expired leases, agents and overdue requests: an expired lease is dead for every
//! operation even before the daemon notices it.
//!
//! The connection sets `journal_mode=WAL`, `synchronous=FULL` and `foreign_keys=ON` and
//! reads each back (SQLite silently ignores a misspelled pragma), and waits for another
//! writer's lock with its own busy handler ([`lock_retry_pause`], up to [`BUSY_TIMEOUT`]).

use std::path::Path;
use std::time::Duration;

use rusqlite::{Connection, OpenFlags, Transaction, TransactionBehavior};

use super::tx::Sql;
use crate::clock::Millis;
use crate::error::{Error, Result};
use crate::store::types::Swept;

/// The migrations, embedded in the binary and applied in order.
pub const MIGRATIONS: &[(i64, &str, &str)] = &[
    (
        1,
        "0001_init",
        include_str!("../../../migrations/sqlite/0001_init.sql"),
    ),
    (
        2,
        "0002_audit_indexes",
        include_str!("../../../migrations/sqlite/0002_audit_indexes.sql"),
    ),
    (
        3,
        "0003_record_immutable",
        include_str!("../../../migrations/sqlite/0003_record_immutable.sql"),
    ),
    (
        4,
        "0004_rejections_by_source",
        include_str!("../../../migrations/sqlite/0004_rejections_by_source.sql"),
    ),
    (
        5,
        "0005_web_tokens",
        include_str!("../../../migrations/sqlite/0005_web_tokens.sql"),
    ),
    (
        6,
        "0006_prune",
        include_str!("../../../migrations/sqlite/0006_prune.sql"),
    ),
    (
        7,
        "0007_fewer_index_writes",
        include_str!("../../../migrations/sqlite/0007_fewer_index_writes.sql"),
    ),
    (
        8,
        "0008_record_triggers_by_column",
        include_str!("../../../migrations/sqlite/0008_record_triggers_by_column.sql"),
    ),
    (
        9,
        "0009_host_leases",
        include_str!("../../../migrations/sqlite/0009_host_leases.sql"),
    ),
    (
        10,
        "0010_quorum",
        include_str!("../../../migrations/sqlite/0010_quorum.sql"),
    ),
    (
        11,
        "0011_ladder",
        include_str!("../../../migrations/sqlite/0011_ladder.sql"),
    ),
    (
        12,
        "0012_edits",
        include_str!("../../../migrations/sqlite/0012_edits.sql"),
    ),
    (
        13,
        "0013_channels",
        include_str!("../../../migrations/sqlite/0013_channels.sql"),
    ),
    (
        14,
        "0014_mail_links",
        include_str!("../../../migrations/sqlite/0014_mail_links.sql"),
    ),
    (
        15,
        "0015_slack",
        include_str!("../../../migrations/sqlite/0015_slack.sql"),
    ),
    (
        16,
        "0016_persons",
        include_str!("../../../migrations/sqlite/0016_persons.sql"),
    ),
    (
        17,
        "0017_push",
        include_str!("../../../migrations/sqlite/0017_push.sql"),
    ),
    (
        18,
        "0018_delegation",
        include_str!("../../../migrations/sqlite/0018_delegation.sql"),
    ),
    (
        19,
        "0019_telegram",
        include_str!("../../../migrations/sqlite/0019_telegram.sql"),
    ),
    (
        20,
        "0020_sign_in_groups",
        include_str!("../../../migrations/sqlite/0020_sign_in_groups.sql"),
    ),
    (
        21,
        "0021_push_reached",
        include_str!("../../../migrations/sqlite/0021_push_reached.sql"),
    ),
];

/// How long a connection waits for another writer before failing.
pub const BUSY_TIMEOUT: Duration = Duration::from_secs(30);

/// The pause between two tries at a lock another connection holds, by try (0 first): short
/// at first, since dshq's transactions hold the write lock for a fraction of a millisecond,
/// then longer. SQLite's own busy timeout sleeps 1 ms before its first retry, then 2, 5,
/// 10 ms..., so a command that met the daemon's commit paid a millisecond or more for a
/// lock freed after a tenth of that.
pub fn lock_retry_pause(tries: i32) -> Duration {
    match tries {
        ..=19 => Duration::from_micros(50),
        20..=39 => Duration::from_micros(250),
        40..=99 => Duration::from_millis(1),
        _ => Duration::from_millis(10),
    }
}

std::thread_local! {
    /// When this thread's current wait for a lock began, and when the busy handler was last
    /// called (SQLite calls it on the thread that runs the statement).
    static WAIT: std::cell::Cell<Option<(std::time::Instant, std::time::Instant)>> = const { std::cell::Cell::new(None) };
}

/// A call of the busy handler this long after the previous one starts a new wait, whatever
/// its try count: SQLite resets the count when a statement starts, not when a prepare
/// that reads the schema meets a lock, so a count left from an earlier wait can arrive.
/// Calls within one wait are at most one pause (10 ms) and one try apart.
const NEW_WAIT_AFTER: Duration = Duration::from_secs(1);

/// The busy handler of every connection: pause by [`lock_retry_pause`] and try again, until
/// [`BUSY_TIMEOUT`] has passed since the wait began (then SQLite returns `SQLITE_BUSY`).
fn wait_for_lock(tries: i32) -> bool {
    let now = std::time::Instant::now();
    let began = WAIT.with(|w| {
        let began = match w.get() {
            Some((began, last)) if tries > 0 && now.duration_since(last) < NEW_WAIT_AFTER => began,
            _ => now,
        };
        w.set(Some((began, now)));
        began
    });
    if now.duration_since(began) >= BUSY_TIMEOUT {
        return false;
    }
    std::thread::sleep(lock_retry_pause(tries));
    true
}

/// Open (creating if needed) the database at `path`, set and verify the pragmas, migrate.
///
/// Two processes that open a new database at once (the first commands on a new root: two
/// providers registering, say) both switch it to WAL. That switch takes SQLite's exclusive
/// lock from a shared one, and when both hold the shared lock SQLite fails one of them at
/// once with `SQLITE_BUSY` instead of calling the busy handler (waiting could deadlock).
/// So the opening is tried again, as the busy handler would wait, until [`BUSY_TIMEOUT`]:
/// every step of it (the WAL switch, each migration in its own immediate transaction)
/// finds what the other process did and carries on.
pub fn open(path: &Path) -> Result<Connection> {
    let began = std::time::Instant::now();
    let mut tries = 0;
    loop {
        match open_once(path) {
            Err(Error::Db(e)) if is_busy(&e) && began.elapsed() < BUSY_TIMEOUT => {
                tracing::debug!(
                    tries,
                    "the database is being created by another process: trying again"
                );
                std::thread::sleep(lock_retry_pause(tries));
                tries += 1;
            }
            other => return other,
        }
    }
}

fn open_once(path: &Path) -> Result<Connection> {
    let conn = Connection::open_with_flags(
        path,
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    configure(&conn, true)?;
    migrate(&conn)?;
    Ok(conn)
}

/// Whether SQLite said another connection holds the lock (`SQLITE_BUSY` and its extended
/// codes, `SQLITE_LOCKED`).
fn is_busy(e: &rusqlite::Error) -> bool {
    matches!(
        e.sqlite_error_code(),
        Some(rusqlite::ErrorCode::DatabaseBusy | rusqlite::ErrorCode::DatabaseLocked)
    )
}

/// Open an existing database for a read command: never created, migrated or written (no
/// `journal_mode` change either). Read-write when the file allows it, so a view can sweep
/// in a transaction it rolls back ([`view_at`]); else read-only; else, when SQLite cannot
/// open a read-only WAL database because its `-shm` file is missing and cannot be created
/// (a copy on a read-only directory), as immutable. A database that needs a migration is
/// refused with a clear error: a read does not migrate.
pub fn open_read(path: &Path) -> Result<Connection> {
    let attempts: [(OpenFlags, &str); 3] = [
        (OpenFlags::SQLITE_OPEN_READ_WRITE, ""),
        (OpenFlags::SQLITE_OPEN_READ_ONLY, ""),
        (
            OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_URI,
            "immutable",
        ),
    ];
    let mut last = None;
    for (flags, how) in attempts {
        let flags = flags | OpenFlags::SQLITE_OPEN_NO_MUTEX;
        let opened = if how == "immutable" {
            let uri = format!("file:{}?immutable=1", uri_path(path));
            Connection::open_with_flags(uri, flags)
        } else {
            Connection::open_with_flags(path, flags)
        };
        let conn = match opened {
            Ok(c) => c,
            Err(e) => {
                last = Some(e);
                continue;
            }
        };
        // Reading the schema is the first access to the file: a read-only WAL database
        // whose `-shm` cannot be created fails here, not at open.
        match configure(&conn, false).and_then(|_| schema_version(&conn)) {
            Ok(v) => {
                let known = MIGRATIONS.last().map(|m| m.0).unwrap_or(0);
                if v > known {
                    return Err(Error::SchemaTooNew { found: v, known });
                }
                if v < known {
                    return Err(Error::NeedsMigration {
                        path: path.to_path_buf(),
                        found: v,
                        known,
                    });
                }
                if !how.is_empty() {
                    tracing::debug!(path = %crate::text::path_for_log(path), "opened {how}");
                }
                return Ok(conn);
            }
            Err(Error::Db(e)) => last = Some(e),
            Err(e) => return Err(e),
        }
    }
    Err(Error::Db(last.expect("at least one attempt")))
}

/// A path as the path part of an SQLite `file:` URI (`?`, `#` and `%` escaped).
fn uri_path(path: &Path) -> String {
    let mut out = String::new();
    for c in path.to_string_lossy().chars() {
        match c {
            '?' => out.push_str("%3f"),
            '#' => out.push_str("%23"),
            '%' => out.push_str("%25"),
            c => out.push(c),
        }
    }
    out
}

/// Present the store as it is at `now` without writing it: when a lease, deadline or
/// agent ttl has fallen due, sweep inside a write transaction that is left open and never
/// committed (it is rolled back when the connection closes). Read commands call this once
/// after opening, so an expired lease's claim reads as `pending` while nothing a read
/// command does is ever durable. A store that cannot be written (a read-only copy) is
/// shown as stored.
pub fn view_at(conn: &mut Connection, now: Millis) -> Result<()> {
    match super::sweep::next_due(conn)? {
        Some(due) if due < now => {}
        _ => return Ok(()),
    }
    // Its sweep may append events: they chain from the log, in a context of their own
    // (and are never published: this transaction is not committed).
    let mut tx = match Transaction::new_unchecked(conn, TransactionBehavior::Immediate) {
        Ok(tx) => tx,
        Err(e) => {
            tracing::debug!(error = %e, "read-only store: shown as stored, without expiry");
            return Ok(());
        }
    };
    if let Err(e) = sweep(&mut Sql::begin(&tx), now) {
        tracing::debug!(error = %e, "read-only store: shown as stored, without expiry");
        return Ok(());
    }
    // Leave the transaction open: the reads that follow see the sweep; closing the
    // connection rolls it back.
    tx.set_drop_behavior(rusqlite::DropBehavior::Ignore);
    Ok(())
}

/// An in-memory database with the schema, for tests.
pub fn open_in_memory() -> Result<Connection> {
    let conn = Connection::open_in_memory()?;
    configure(&conn, false)?;
    migrate(&conn)?;
    Ok(conn)
}

fn configure(conn: &Connection, wal: bool) -> Result<()> {
    conn.busy_handler(Some(wait_for_lock))?;
    // Ingestion alone uses a dozen distinct statements; the default cache of 16 thrashed.
    conn.set_prepared_statement_cache_capacity(128);
    if wal {
        let mode: String = conn.query_row("PRAGMA journal_mode=WAL", [], |r| r.get(0))?;
        expect_pragma("journal_mode", "wal", &mode.to_ascii_lowercase())?;
    }
    // A 16 MiB page cache (default 2 MiB): a burst touches a dozen index b-trees, and
    // re-reading evicted pages from the OS was a visible share of ingestion.
    conn.execute_batch(
        "PRAGMA synchronous=FULL; PRAGMA foreign_keys=ON; PRAGMA cache_size=-16384;",
    )?;
    let sync: i64 = conn.query_row("PRAGMA synchronous", [], |r| r.get(0))?;
    expect_pragma("synchronous", "2", &sync.to_string())?;
    let fk: i64 = conn.query_row("PRAGMA foreign_keys", [], |r| r.get(0))?;
    expect_pragma("foreign_keys", "1", &fk.to_string())?;
    Ok(())
}

fn expect_pragma(pragma: &'static str, expected: &str, actual: &str) -> Result<()> {
    if expected == actual {
        Ok(())
    } else {
        Err(Error::Pragma {
            pragma,
            expected: expected.to_string(),
            actual: actual.to_string(),
        })
    }
}

/// Apply every migration newer than the recorded version, each in its own immediate
/// transaction that also records it. Refuses a database from a newer dshq.
pub fn migrate(conn: &Connection) -> Result<i64> {
    crate::store::migrate::migrate(&mut SqliteMigrator(conn), MIGRATIONS)
}

/// This driver's side of [`crate::store::migrate`]: each migration in a `BEGIN IMMEDIATE`
/// transaction of its own, checked again inside it (another process may have migrated
/// while this one waited for the lock).
struct SqliteMigrator<'c>(&'c Connection);

impl crate::store::migrate::Migrator for SqliteMigrator<'_> {
    fn recorded_version(&mut self) -> Result<i64> {
        schema_version(self.0)
    }

    fn create_version_table(&mut self) -> Result<()> {
        self.0.execute_batch(
            "CREATE TABLE IF NOT EXISTS schema_migrations (
                 version INTEGER PRIMARY KEY,
                 name TEXT NOT NULL,
                 applied_ms INTEGER NOT NULL
             )",
        )?;
        Ok(())
    }

    fn apply(&mut self, (version, name, sql): crate::store::migrate::Migration) -> Result<()> {
        let tx = Transaction::new_unchecked(self.0, TransactionBehavior::Immediate)?;
        if schema_version(&tx)? < version {
            tx.execute_batch(sql)?;
            tx.execute(
                "INSERT INTO schema_migrations (version, name, applied_ms) VALUES (?1, ?2, ?3)",
                rusqlite::params![version, name, crate::clock::now_ms()],
            )?;
        }
        tx.commit()?;
        Ok(())
    }
}

/// The highest applied migration version (0 for an empty database).
pub fn schema_version(conn: &Connection) -> Result<i64> {
    Ok(conn.query_row(
        "SELECT COALESCE(MAX(version), 0) FROM schema_migrations",
        [],
        |r| r.get(0),
    )?)
}

/// Run `f` in one `BEGIN IMMEDIATE` transaction after sweeping expiries at `now`; commit on
/// `Ok`, roll back on `Err`.
pub fn write<T>(
    conn: &mut Connection,
    now: Millis,
    f: impl FnOnce(&mut Sql<'_, '_>) -> Result<T>,
) -> Result<T> {
    // Commit what is due on its own first, so a failing operation (say, a stale lease's
    // answer) does not roll back the expiry it observed.
    sweep_if_due(conn, now)?;
    transact(conn, |db| {
        sweep_due(db, now)?;
        f(db)
    })
}

/// Run `body` in one `BEGIN IMMEDIATE` transaction with its own write context ([`Sql`]):
/// commit on `Ok` and then publish the chain head its appends left to `audit.head`; roll
/// back on `Err` (dropping the transaction), and the head with it.
fn transact<T>(
    conn: &mut Connection,
    body: impl FnOnce(&mut Sql<'_, '_>) -> Result<T>,
) -> Result<T> {
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    let mut db = Sql::begin(&tx);
    let out = body(&mut db)?;
    let head = db.into_head();
    tx.commit()?;
    if let Some(head) = head {
        head.publish();
    }
    Ok(out)
}

/// Like [`write()`], but `now` is read from the clock *after* the write lock is taken and
/// passed to `f`. Commands use this: a command that waited for the lock (another writer,
/// a busy timeout) must judge leases and deadlines at the time it writes, not at the time
/// it started, or an expired lease could still answer or be revived.
pub fn write_now<T>(
    conn: &mut Connection,
    f: impl FnOnce(&mut Sql<'_, '_>, Millis) -> Result<T>,
) -> Result<T> {
    write_clocked(conn, &crate::clock::now_ms, f)
}

/// [`write_now`] with the time read from `clock` (a backend's clock: the system's, or a
/// test's).
pub fn write_clocked<T>(
    conn: &mut Connection,
    clock: &dyn Fn() -> Millis,
    f: impl FnOnce(&mut Sql<'_, '_>, Millis) -> Result<T>,
) -> Result<T> {
    sweep_if_due(conn, clock())?;
    transact(conn, |db| {
        let now = clock();
        sweep_due(db, now)?;
        f(db, now)
    })
}

/// Sweep and commit when a lease, deadline or agent ttl has fallen due at `now`; a cheap
/// indexed read otherwise. Writes and the daemon call it; read commands use [`view_at`],
/// which never commits.
pub fn sweep_if_due(conn: &mut Connection, now: Millis) -> Result<Option<Swept>> {
    match super::sweep::next_due(conn)? {
        Some(due) if due < now => transact(conn, |db| sweep(db, now).map(Some)),
        _ => Ok(None),
    }
}

/// Run `f` in one `BEGIN IMMEDIATE` transaction without sweeping (bookkeeping writes such
/// as marking outcome files written).
pub fn write_no_sweep<T>(
    conn: &mut Connection,
    f: impl FnOnce(&mut Sql<'_, '_>) -> Result<T>,
) -> Result<T> {
    transact(conn, f)
}

/// [`sweep`] inside a write transaction, when something has fallen due by `now`: one
/// indexed read ([`super::sweep::next_due`], a statement every connection already has
/// prepared) instead of the three sweeps' queries, which each new process would compile
/// for a store where, almost always, nothing is due. Every sweep ends only what fell due
/// strictly before `now`, so nothing is skipped when the earliest due time is later.
fn sweep_due(db: &mut Sql<'_, '_>, now: Millis) -> Result<()> {
    if super::sweep::next_due(db)?.is_some_and(|due| due <= now) {
        sweep(db, now)?;
    }
    Ok(())
}

/// End what is due at `now`: expired provider leases (their claims go back to `pending`),
/// requests past their deadline (`ASK_ABORTED`), agents past their ttl.
pub fn sweep(db: &mut Sql<'_, '_>, now: Millis) -> Result<Swept> {
    crate::store::queue::sweep::sweep(db, now)
}

/// Write a consistent copy of the live database at `db` to the new file `dest` (`VACUUM
/// INTO`, in one read transaction: what was committed when it began, whatever commits
/// meanwhile). Writers are not held up (WAL); the copy is compact and has no WAL of its own.
pub fn vacuum_into(db: &Path, dest: &Path) -> Result<()> {
    let conn = Connection::open_with_flags(
        db,
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX,
    )?;
    conn.busy_timeout(std::time::Duration::from_secs(30))?;
    let dest = dest.to_str().ok_or_else(|| {
        crate::Error::Usage(format!(
            "{} is not a UTF-8 path; give another backup directory",
            crate::text::path_for_log(dest)
        ))
    })?;
    conn.execute("VACUUM INTO ?1", [dest])?;
    Ok(())
}

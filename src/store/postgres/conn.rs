//! The PostgreSQL connection: connecting (and reconnecting), the embedded migrations, the
//! database clock, and the transactions every operation runs in.
//!
//! Writes run side by side, on one host or many. What SQLite gets from `BEGIN IMMEDIATE`
//! (one writer at a time) is kept where a rule needs it and nowhere else:
//!
//! - the guards are in the statements: each update names the states it leaves and the lease
//!   that may make it, unique indexes hold one live lease per context and one accepted
//!   request per id (inserts that lose say so with `ON CONFLICT`, they do not fail), and a
//!   lease-holder's update locks the lease row it checks (`FOR SHARE`), so ending a lease
//!   (an expiry, a revocation) waits for it and then releases what it claimed;
//! - new request and lease rows are numbered the largest + 1 under
//!   [`super::tx::ROWS_LOCK`], so row numbers grow in commit order without gaps;
//! - the events a write appends are staged and chained at its commit, under
//!   [`super::tx::CHAIN_LOCK`] ([`super::events::flush`]), held only from that insert to the
//!   commit;
//! - every write takes [`WRITE_LOCK`] shared; the few that need the store to themselves
//!   (prune, import) take it exclusive ([`LockMode`]).
//!
//! Each write reads `now` from the database's clock, then sweeps what fell due at that
//! `now` (expired leases, deadlines, agent ttls): two hosts sweeping at once end each thing
//! once, since every ending is guarded and the loser skips it. READ COMMITTED is enough:
//! each statement sees every commit made before it started, and a guarded update re-checks
//! a row another writer changed meanwhile.
//!
//! The sweep runs before the work and a savepoint separates the two, so a failing
//! operation (say, a stale lease's answer) does not roll back the expiry it observed: the
//! work is rolled back to the savepoint and the sweep is committed alone.
//!
//! A transaction notifies, before its commit (delivered by the server on commit), the
//! roots whose outcomes it made due and, when it appended an event, the feed
//! ([`super::wakeups`]), so daemons on other hosts run their outbox promptly and only
//! those that need to wake do; the head it appended is published to `audit.head` after
//! the commit.
//!
//! A host stopped inside a write (SIGSTOP, a pause, a lost VM) holds only what that write
//! locked, and only until the server ends its session ([`SESSION_SETUP`]).
//!
//! The connection URL's password is never logged or printed: errors are built from the
//! server's or the client's message, never from the URL.

use std::path::Path;
use std::time::{Duration, Instant};

use postgres::types::Type;
use postgres::{Client, Config, GenericClient, Statement, Transaction};

use crate::clock::Millis;
use crate::error::{Error, Result};
use crate::store::types::Swept;

/// The migrations, embedded in the binary and applied in order.
pub const MIGRATIONS: &[(i64, &str, &str)] = &[
    (
        1,
        "0001_init",
        include_str!("../../../migrations/postgres/0001_init.sql"),
    ),
    (
        2,
        "0002_prune",
        include_str!("../../../migrations/postgres/0002_prune.sql"),
    ),
    (
        3,
        "0003_host_leases",
        include_str!("../../../migrations/postgres/0003_host_leases.sql"),
    ),
    (
        4,
        "0004_quorum",
        include_str!("../../../migrations/postgres/0004_quorum.sql"),
    ),
    (
        5,
        "0005_ladder",
        include_str!("../../../migrations/postgres/0005_ladder.sql"),
    ),
    (
        6,
        "0006_edits",
        include_str!("../../../migrations/postgres/0006_edits.sql"),
    ),
    (
        7,
        "0007_channels",
        include_str!("../../../migrations/postgres/0007_channels.sql"),
    ),
    (
        8,
        "0008_mail_links",
        include_str!("../../../migrations/postgres/0008_mail_links.sql"),
    ),
    (
        9,
        "0009_slack",
        include_str!("../../../migrations/postgres/0009_slack.sql"),
    ),
    (
        10,
        "0010_persons",
        include_str!("../../../migrations/postgres/0010_persons.sql"),
    ),
    (
        11,
        "0011_push",
        include_str!("../../../migrations/postgres/0011_push.sql"),
    ),
    (
        12,
        "0012_delegation",
        include_str!("../../../migrations/postgres/0012_delegation.sql"),
    ),
    (
        13,
        "0013_telegram",
        include_str!("../../../migrations/postgres/0013_telegram.sql"),
    ),
    (
        14,
        "0014_sign_in_groups",
        include_str!("../../../migrations/postgres/0014_sign_in_groups.sql"),
    ),
    (
        15,
        "0015_push_reached",
        include_str!("../../../migrations/postgres/0015_push_reached.sql"),
    ),
];

/// The advisory lock every write transaction takes first (one fixed key: `dshq` + 1):
/// shared by ordinary writes, exclusive for those that need the store to themselves.
pub const WRITE_LOCK: i64 = 0x6473_6871_0000_0001;

/// How a write holds [`WRITE_LOCK`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LockMode {
    /// Beside every other ordinary write (everything but the two below).
    Shared,
    /// Alone: prune (which deletes a prefix of the log and the rows it covers) and import
    /// (which writes rows and events with their own numbers).
    Exclusive,
}

impl LockMode {
    /// The call that takes the lock, its key the parameter `$1`.
    fn call(self) -> &'static str {
        match self {
            LockMode::Shared => "pg_advisory_xact_lock_shared($1)",
            LockMode::Exclusive => "pg_advisory_xact_lock($1)",
        }
    }
}

/// The advisory lock migrations run under, so two hosts starting at once do not race.
pub const MIGRATE_LOCK: i64 = 0x6473_6871_0000_0002;

/// The store's clock as an SQL expression: milliseconds since the epoch.
macro_rules! now_expr {
    () => {
        "(extract(epoch from clock_timestamp()) * 1000)::bigint"
    };
}

/// The database clock in milliseconds since the epoch.
pub const NOW_SQL: &str = concat!("SELECT ", now_expr!());

/// Parse a `postgres://` URL (or a key=value string) into a connection config. The error
/// never repeats the input (it may hold a password). A password the URL does not carry is taken from `PGPASSWORD` (as libpq does), so it
/// need not appear in argv or in `DSHQ_STORE`.
///
/// Two choices on TLS ([`super::tls`]): `sslmode=verify-full` and `verify-ca` (which
/// libpq users write, and tokio-postgres' parser refuses) are read as `require`, which
/// with rustls verifies the chain and the host name as `verify-full` does; and a URL that
/// says no `sslmode` at all gets `require` when it names a TCP host other than loopback
/// (libpq's default, `prefer`, can be pushed down to plaintext by anyone on the path).
pub fn parse_url(url: &str) -> Result<Config> {
    let explicit_ssl = url.contains("sslmode=");
    let url = url
        .replace("sslmode=verify-full", "sslmode=require")
        .replace("sslmode=verify-ca", "sslmode=require");
    let mut config = url.parse::<Config>().map_err(|_| {
        Error::Invalid(
            "not a valid PostgreSQL connection URL (expected postgres://USER@HOST/DB)".into(),
        )
    })?;
    if config.get_password().is_none() {
        if let Some(pw) = std::env::var_os("PGPASSWORD").filter(|p| !p.is_empty()) {
            use std::os::unix::ffi::OsStrExt;
            config.password(pw.as_bytes());
        }
    }
    if !explicit_ssl && config.get_hosts().iter().any(is_remote) {
        config.ssl_mode(postgres::config::SslMode::Require);
    }
    Ok(config)
}

/// Whether `host` is reached over a network: a TCP host that is not loopback.
fn is_remote(host: &postgres::config::Host) -> bool {
    match host {
        postgres::config::Host::Tcp(name) => !crate::net::is_loopback_host(name),
        postgres::config::Host::Unix(_) => false,
    }
}

/// Open a client for `config`: TLS as its `sslmode` says, verified against the system's
/// CAs or `PGSSLROOTCERT`; a Unix socket in plaintext (see [`super::tls`]).
pub fn connect(config: &Config) -> Result<Client> {
    super::tls::connect(config)
}

/// How a store's session waits and idles, set on every (re)connect, so that one stopped
/// host holds up the others for a few seconds at most:
///
/// - `idle_in_transaction_session_timeout`: a session left idle inside a transaction (a
///   host stopped inside a write, a read command's view stalled on its output) is ended by
///   the server after 5 s, its transaction rolled back and its locks released.
/// - `lock_timeout`: a writer waits this long for a lock (a row, the chain), then fails
///   with a `STORE` error (the daemon retries on its next pass), as SQLite's busy timeout
///   ([`crate::store::sqlite::BUSY_TIMEOUT`]) makes a writer fail rather than wait forever.
///   It is longer than the idle timeout, so a writer outlasts a stopped holder and then
///   commits; what it can still fail on is a holder that keeps running (a long prune).
/// - `statement_timeout`: no statement of dshq's runs longer (a prune of a large log lifts
///   it for its own transaction).
pub const SESSION_SETUP: &str = "SET lock_timeout = '15s'; \
     SET idle_in_transaction_session_timeout = '5s'; SET statement_timeout = '30s'";

/// A store's connection: [`connect`], then [`SESSION_SETUP`].
pub fn open_session(config: &Config) -> Result<Client> {
    let mut client = connect(config)?;
    client.batch_execute(SESSION_SETUP)?;
    Ok(client)
}

/// The highest applied migration version (0 for an empty database).
pub fn schema_version(c: &mut impl GenericClient) -> Result<i64> {
    let exists: bool = c
        .query_one("SELECT to_regclass('schema_migrations') IS NOT NULL", &[])?
        .try_get(0)?;
    if !exists {
        return Ok(0);
    }
    Ok(c.query_one(
        "SELECT COALESCE(MAX(version), 0)::bigint FROM schema_migrations",
        &[],
    )?
    .try_get(0)?)
}

/// Apply every migration newer than the recorded version ([`crate::store::migrate`]) in
/// one transaction under [`MIGRATE_LOCK`] (PostgreSQL's DDL is transactional: a failed
/// migration leaves nothing). Refuses a database from a newer dshq.
pub fn migrate(client: &mut Client) -> Result<i64> {
    let mut tx = client.transaction()?;
    tx.execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATE_LOCK])?;
    let version = crate::store::migrate::migrate(&mut PgMigrator(&mut tx), MIGRATIONS)?;
    tx.commit()?;
    Ok(version)
}

/// This driver's side of [`crate::store::migrate`], inside the one transaction of
/// [`migrate`], which holds [`MIGRATE_LOCK`]: no other host migrates meanwhile.
struct PgMigrator<'a, 'c>(&'a mut Transaction<'c>);

impl crate::store::migrate::Migrator for PgMigrator<'_, '_> {
    fn recorded_version(&mut self) -> Result<i64> {
        schema_version(self.0)
    }

    fn create_version_table(&mut self) -> Result<()> {
        self.0.batch_execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (
                 version BIGINT PRIMARY KEY,
                 name TEXT NOT NULL,
                 applied_ms BIGINT NOT NULL
             )",
        )?;
        Ok(())
    }

    fn apply(&mut self, (version, name, sql): crate::store::migrate::Migration) -> Result<()> {
        self.0.batch_execute(sql)?;
        let now = db_now(self.0)?;
        self.0.execute(
            "INSERT INTO schema_migrations (version, name, applied_ms) VALUES ($1, $2, $3)",
            &[&version, &name, &now],
        )?;
        tracing::info!(version, name, "applied a PostgreSQL migration");
        Ok(())
    }
}

/// The database's clock, in milliseconds since the epoch.
pub fn db_now(c: &mut impl GenericClient) -> Result<Millis> {
    Ok(c.query_typed_one(NOW_SQL, &[])?.try_get(0)?)
}

/// A clock override (tests): milliseconds since the epoch.
pub type Clock = std::sync::Arc<dyn Fn() -> Millis + Send + Sync>;

pub use super::tx::Tx;

/// The connection and how to open it again.
pub struct Db {
    config: Config,
    client: Client,
    /// A `BEGIN` issued by [`Db::view`] and not yet rolled back.
    view_open: bool,
    /// When the client was last handed out.
    last_used: Instant,
    /// The opening statements of writes ([`open_write`]), prepared on this connection
    /// once each, by [`Opening::slot`]: its due-time subqueries are then planned once, not
    /// at every write (half a millisecond of the server's time a write). Emptied with a
    /// new connection.
    openings: [Option<Statement>; 8],
}

/// A connection idle for longer than this is probed before use.
pub const IDLE_PROBE: Duration = Duration::from_secs(2);

/// How long the probe of an idle connection waits for the server.
const PROBE_TIMEOUT: Duration = Duration::from_secs(5);

impl Db {
    /// Connect and migrate.
    pub fn open(config: Config) -> Result<Db> {
        let mut client = open_session(&config)?;
        migrate(&mut client)?;
        Ok(Db {
            config,
            client,
            view_open: false,
            last_used: Instant::now(),
            openings: Default::default(),
        })
    }

    /// The connection config (for a second connection, e.g. the listener).
    pub fn config(&self) -> &Config {
        &self.config
    }

    /// The client, reconnected first when the connection was lost (one attempt: the
    /// daemon's loop retries on its next pass). Reads inside an open view run here.
    ///
    /// The blocking client learns that the server ended a session only when it next uses
    /// it, so a connection idle for longer than [`IDLE_PROBE`] is probed first (an empty
    /// query): a write then starts on a live connection instead of failing once.
    pub fn client(&mut self) -> Result<&mut Client> {
        let stale = !self.view_open
            && self.last_used.elapsed() > IDLE_PROBE
            && self.client.is_valid(PROBE_TIMEOUT).is_err();
        if stale || self.client.is_closed() {
            tracing::info!("the PostgreSQL connection was lost; reconnecting");
            self.view_open = false;
            self.openings = Default::default();
            self.client = open_session(&self.config)?;
        }
        self.last_used = Instant::now();
        Ok(&mut self.client)
    }

    /// Reconnect when the connection is closed after `e` (the server ended the session,
    /// or the network dropped it): `true` when it was and a new connection is up, so a
    /// caller that had done nothing yet may try once more.
    fn recovered(&mut self, e: &Error) -> Result<bool> {
        let closed = match e {
            Error::Pg(pg) => pg.is_closed() || self.client.is_closed(),
            _ => false,
        };
        if !closed {
            return Ok(false);
        }
        tracing::info!("the PostgreSQL connection was lost; reconnecting");
        self.view_open = false;
        self.openings = Default::default();
        self.client = open_session(&self.config)?;
        Ok(true)
    }

    /// Run a read on the client. A read is idempotent: when it fails because the
    /// connection was lost, it runs once more on a new connection (an open view is lost
    /// with its connection: the reads then see the store as stored).
    pub fn read<T>(&mut self, f: impl Fn(&mut Client) -> Result<T>) -> Result<T> {
        match f(self.client()?) {
            Err(e) if self.recovered(&e)? => f(&mut self.client),
            other => other,
        }
    }

    /// End an open view (its sweep is never made durable).
    fn end_view(&mut self) -> Result<()> {
        if self.view_open {
            self.view_open = false;
            if !self.client.is_closed() {
                self.client.batch_execute("ROLLBACK")?;
            }
        }
        Ok(())
    }

    /// The time of a read: the clock override, else the database's clock.
    pub fn now(&mut self, clock: Option<&Clock>) -> Result<Millis> {
        match clock {
            Some(c) => Ok(c()),
            None => self.read(db_now),
        }
    }

    /// Run `f` in one write transaction: lock (shared), read `now` (the override, else the
    /// database's clock), sweep what fell due, then `f` after a savepoint. Commit on `Ok`
    /// (chaining its events, notifying when there were any) and publish the head; on `Err`
    /// roll `f` back and keep (commit) only the sweep, when it changed anything.
    pub fn write<T>(
        &mut self,
        clock: Option<&Clock>,
        root: Option<&Path>,
        origin: Option<&str>,
        f: impl FnOnce(&mut Tx<'_>, Millis) -> Result<T>,
    ) -> Result<T> {
        self.transact(clock, root, origin, LockMode::Shared, true, f)
    }

    /// Like [`Db::write`] without sweeping (bookkeeping such as marking outcome files
    /// written).
    pub fn write_no_sweep<T>(
        &mut self,
        clock: Option<&Clock>,
        root: Option<&Path>,
        origin: Option<&str>,
        f: impl FnOnce(&mut Tx<'_>, Millis) -> Result<T>,
    ) -> Result<T> {
        self.transact(clock, root, origin, LockMode::Shared, false, f)
    }

    /// Like [`Db::write`], alone: with [`WRITE_LOCK`] held exclusive (prune, import).
    pub fn write_alone<T>(
        &mut self,
        clock: Option<&Clock>,
        root: Option<&Path>,
        origin: Option<&str>,
        sweep_first: bool,
        f: impl FnOnce(&mut Tx<'_>, Millis) -> Result<T>,
    ) -> Result<T> {
        self.transact(clock, root, origin, LockMode::Exclusive, sweep_first, f)
    }

    fn transact<T>(
        &mut self,
        clock: Option<&Clock>,
        root: Option<&Path>,
        origin: Option<&str>,
        mode: LockMode,
        sweep_first: bool,
        f: impl FnOnce(&mut Tx<'_>, Millis) -> Result<T>,
    ) -> Result<T> {
        self.end_view()?;
        self.client()?;
        let opening = Opening {
            mode,
            read_clock: clock.is_none(),
            look_due: sweep_first,
        };
        // A connection lost since its last use shows only when used: then the prepare or
        // the `BEGIN` failed, nothing was done, and the transaction starts on a new
        // connection.
        let e = match self.opening(opening) {
            Ok(stmt) => match self.client.transaction() {
                Ok(tx) => return run(Tx::begin(tx, root, origin), &stmt, clock, f),
                Err(e) => Error::from(e),
            },
            Err(e) => e,
        };
        if !self.recovered(&e)? {
            return Err(e);
        }
        let stmt = self.opening(opening)?;
        let tx = self.client.transaction()?;
        run(Tx::begin(tx, root, origin), &stmt, clock, f)
    }

    /// The opening statement `o` of a write on this connection, prepared on first use.
    fn opening(&mut self, o: Opening) -> Result<Statement> {
        let slot = o.slot();
        if let Some(s) = &self.openings[slot] {
            return Ok(s.clone());
        }
        let stmt = self.client.prepare_typed(&o.sql(), &[Type::INT8])?;
        self.openings[slot] = Some(stmt.clone());
        Ok(stmt)
    }

    /// Present the store as it is now to the reads that follow, without making anything
    /// durable: when something fell due, open a transaction (a raw `BEGIN`, tracked
    /// here) and sweep inside it; it is rolled back by the next write, the next view, or
    /// when the store is dropped. Until then it holds the rows its sweep changed (and
    /// the server ends it once it idles longer than [`SESSION_SETUP`] allows): drop the
    /// store before a slow output.
    pub fn view(&mut self, clock: Option<&Clock>, root: Option<&Path>) -> Result<()> {
        self.end_view()?;
        let now = self.now(clock)?;
        {
            let client = self.client()?;
            match super::sweep::next_due(client)? {
                Some(due) if due < now => {}
                _ => return Ok(()),
            }
        }
        self.client()?;
        let mut tx = Tx::begin(self.client.transaction()?, root, None);
        tx.tx.execute_typed(
            &format!("SELECT {}", LockMode::Shared.call()),
            &[(&WRITE_LOCK, Type::INT8)],
        )?;
        let now = match clock {
            Some(c) => c(),
            None => db_now(tx.tx.client()?)?,
        };
        // Nothing a view does is published: its events stay staged and are dropped.
        match sweep(&mut tx, now) {
            Ok(_) => {}
            // A store this role may not write (or a read-only replica) is shown as
            // stored, as SQLite shows a read-only copy; the handle's drop rolls back.
            Err(Error::Pg(e)) if e.as_db_error().is_some() => {
                tracing::debug!(error = %e, "a store that cannot be written: shown as stored, without expiry");
                return Ok(());
            }
            Err(e) => return Err(e),
        }
        // Leave the transaction open for the reads that follow (like SQLite's
        // `DropBehavior::Ignore`): forgetting the handle skips its rollback-on-drop, and
        // holds nothing but the borrow of the client. [`Db::end_view`] rolls it back.
        std::mem::forget(tx.tx);
        self.view_open = true;
        Ok(())
    }

    /// Roll back an open view (when the store is dropped).
    pub fn close_view(&mut self) {
        if let Err(e) = self.end_view() {
            tracing::debug!(error = %e, "could not roll back a view");
        }
    }
}

/// The body of write transaction `tx` (see [`Db::write`]).
fn run<T>(
    mut tx: Tx<'_>,
    opening: &Statement,
    clock: Option<&Clock>,
    f: impl FnOnce(&mut Tx<'_>, Millis) -> Result<T>,
) -> Result<T> {
    let (db_now, due) = open_write(&mut tx, opening)?;
    let now = match (clock, db_now) {
        (Some(c), _) => c(),
        (None, Some(now)) => now,
        (None, None) => return Err(Error::Invalid("the store gave no time".into())),
    };
    let mut swept = false;
    if due.is_some_and(|due| due < now) {
        swept = !sweep(&mut tx, now)?.is_empty();
    }
    // A savepoint only where a sweep is to be kept should the rule fail (it sends what the
    // sweep held, so the mark holds none); otherwise a failure rolls the whole write back.
    // None is released: the commit commits what an open savepoint holds.
    if swept {
        tx.tx.batch_execute("SAVEPOINT work")?;
    }
    let mark = tx.mark();
    match f(&mut tx, now) {
        Ok(out) => {
            commit(tx)?;
            Ok(out)
        }
        Err(e) => {
            if swept {
                // What was held since is forgotten before the rollback's statement.
                tx.rolled_back_to(mark);
                let kept = tx
                    .tx
                    .batch_execute("ROLLBACK TO SAVEPOINT work")
                    .and_then(|()| commit(tx));
                if let Err(k) = kept {
                    tracing::warn!(error = %k, "could not keep the sweep of a failed write");
                }
            }
            Err(e)
        }
    }
}

/// What a write's opening statement does ([`open_write`]): it takes the write lock in
/// `mode` and, in the same statement, reads the store's clock (`read_clock`; a test clock
/// gives it otherwise) and when something next falls due (`look_due`, for a write that
/// sweeps first; see [`super::sweep::NEXT_DUE`]).
#[derive(Debug, Clone, Copy)]
struct Opening {
    mode: LockMode,
    read_clock: bool,
    look_due: bool,
}

impl Opening {
    /// Its place in [`Db`]'s prepared openings.
    fn slot(self) -> usize {
        usize::from(matches!(self.mode, LockMode::Exclusive))
            | usize::from(self.read_clock) << 1
            | usize::from(self.look_due) << 2
    }

    /// Its SQL: the lock's key is `$1`; then the clock and the due time (or NULLs).
    fn sql(self) -> String {
        let now = if self.read_clock {
            now_expr!()
        } else {
            "NULL::bigint"
        };
        let due = if self.look_due {
            super::sweep::NEXT_DUE
        } else {
            "NULL::bigint"
        };
        format!("SELECT {}, {now}, {due}", self.mode.call())
    }
}

/// Open a write with its prepared [`Opening`]: the lock, the clock and the due time in one
/// round trip where there were three (an inbox batch on PostgreSQL is bound by its round
/// trips and the server's work, not its own). The due time is read in the statement's
/// snapshot, which may predate the lock's grant (a wait behind prune or import): it only
/// decides whether to sweep first, and a sweep missed is made by the next write.
fn open_write(tx: &mut Tx<'_>, opening: &Statement) -> Result<(Option<Millis>, Option<Millis>)> {
    let row = tx.tx.query_one(opening, &[&WRITE_LOCK])?;
    Ok((row.try_get(1)?, row.try_get(2)?))
}

/// Chain the staged events, notify the hosts that need to wake (see
/// [`super::wakeups`]), commit, and publish the head.
fn commit(mut tx: Tx<'_>) -> Result<()> {
    // The held rows first (the requests' inserts, the heaviest statement of a batch, before
    // the chain lock is taken), then the chain.
    tx.tx.flush()?;
    super::events::flush(&mut tx)?;
    let mut channels: Vec<String> = tx
        .outcomes_for
        .iter()
        .map(|o| super::wakeups::outbox_channel(o))
        .collect();
    if tx.appended {
        channels.push(super::wakeups::FEED_CHANNEL.to_string());
    }
    if !channels.is_empty() {
        tx.tx.execute_typed(
            "SELECT pg_notify(c, '') FROM UNNEST($1::text[]) AS c",
            &[(&channels, Type::TEXT_ARRAY)],
        )?;
    }
    let head = tx.head.take();
    tx.tx.commit()?;
    if let Some(head) = head {
        head.publish();
    }
    Ok(())
}

/// End what is due at `now`: expired provider leases (their claims go back to `pending`),
/// requests past their deadline (`ASK_ABORTED`), agents past their ttl.
fn sweep(tx: &mut Tx<'_>, now: Millis) -> Result<Swept> {
    crate::store::queue::sweep::sweep(tx, now)
}

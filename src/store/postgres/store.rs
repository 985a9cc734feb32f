//! [`PgDriver`]: the queue's [`Driver`] on one PostgreSQL connection, and [`PgStore`], the
//! queue over it. Each write is one write transaction ([`Db::write`]; prune and import
//! alone, [`Db::write_alone`]) or one read; which rule runs in it is the queue's
//! ([`Queue`]).
//!
//! Time: a write reads `now` from the database's clock under the lock, and a read that
//! judges liveness (a lease, an agent) reads it from the database too. This store never
//! asks the host's clock for a decision; [`PgStore::with_clock`] replaces the database's
//! clock (tests).

use std::path::{Path, PathBuf};

use postgres::IsolationLevel;

use super::conn::{self, Clock, Db};
use super::tx::PgRead;
use super::{export, wakeups};
use crate::clock::Millis;
use crate::error::Result;
use crate::store::calls::{ExportSink, Record, Wakeups};
use crate::store::driver::{Driver, Reads, Statements, Write};
use crate::store::queue::Queue;

/// The PostgreSQL backend: the queue over one connection ([`PgDriver`]).
pub type PgStore = Queue<PgDriver>;

/// The PostgreSQL driver: one connection, this host's root and origin, and (for tests) a
/// clock that replaces the database's.
pub struct PgDriver {
    db: Db,
    root: Option<PathBuf>,
    origin: Option<String>,
    clock: Option<Clock>,
}

impl std::fmt::Debug for PgDriver {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the config: it holds the password.
        f.debug_struct("PgDriver")
            .field("root", &self.root)
            .field("origin", &self.origin)
            .finish_non_exhaustive()
    }
}

impl Drop for PgDriver {
    fn drop(&mut self) {
        self.db.close_view();
    }
}

impl Queue<PgDriver> {
    /// Connect to `url` (`postgres://USER[:PASSWORD]@HOST[:PORT]/DB`, or key=value) and
    /// migrate. `root_dir` is where this host keeps `audit.key` and `audit.head` (`None`:
    /// an unkeyed chain and no anchor, for tools and tests); `origin` names the root that
    /// asks through this store: new requests record it, and
    /// [`crate::store::Store::outbox_pending`] returns only its rows (`None`: every row).
    pub fn connect(url: &str, root_dir: Option<&Path>, origin: Option<&str>) -> Result<PgStore> {
        let config = conn::parse_url(url)?;
        Ok(Queue::new(PgDriver {
            db: Db::open(config)?,
            root: root_dir.map(Path::to_path_buf),
            origin: origin.map(str::to_string),
            clock: None,
        }))
    }

    /// The same store judging time by `clock` instead of the database's (tests).
    pub fn with_clock(mut self, clock: Clock) -> PgStore {
        self.driver().clock = Some(clock);
        self
    }

    /// The origin new requests record.
    pub fn origin(&self) -> Option<&str> {
        self.driver_ref().origin.as_deref()
    }

    /// The client, for this backend's own tests and tools (reconnected when lost).
    pub fn client(&mut self) -> Result<&mut postgres::Client> {
        self.driver().db.client()
    }
}

impl Driver for PgDriver {
    fn write<T>(
        &mut self,
        kind: Write,
        f: impl FnOnce(&mut dyn Statements, Millis) -> Result<T>,
    ) -> Result<T> {
        let (clock, root, origin) = (
            self.clock.as_ref(),
            self.root.as_deref(),
            self.origin.as_deref(),
        );
        match kind {
            Write::Swept => self.db.write(clock, root, origin, |t, now| f(t, now)),
            Write::Plain | Write::Unsynced => {
                self.db
                    .write_no_sweep(clock, root, origin, |t, now| f(t, now))
            }
            Write::Alone => self.db.write_alone(clock, root, origin, true, |t, now| {
                // What runs alone (a prune of a large log) may take longer than a
                // statement may.
                t.tx.batch_execute("SET LOCAL statement_timeout = 0")?;
                f(t, now)
            }),
        }
    }

    fn read<T>(&mut self, f: impl Fn(&mut dyn Reads) -> Result<T>) -> Result<T> {
        self.db.read(|c| f(&mut PgRead(c)))
    }

    fn snapshot<T>(&mut self, f: impl Fn(&mut dyn Reads) -> Result<T>) -> Result<T> {
        // Its own snapshot: a view's transaction (and its uncommitted sweep) ends first.
        self.db.close_view();
        self.db.read(|c| {
            let mut tx = c
                .build_transaction()
                .isolation_level(IsolationLevel::RepeatableRead)
                .read_only(true)
                .start()?;
            let out = f(&mut PgRead(&mut tx))?;
            tx.commit()?;
            Ok(out)
        })
    }

    fn now(&mut self) -> Result<Millis> {
        self.db.now(self.clock.as_ref())
    }

    fn origin(&self) -> Option<&str> {
        self.origin.as_deref()
    }

    fn key_dir(&self) -> Option<PathBuf> {
        self.root.clone()
    }

    fn view_now(&mut self) -> Result<()> {
        self.db.view(self.clock.as_ref(), self.root.as_deref())
    }

    fn export(&mut self, sink: ExportSink<'_>) -> Result<()> {
        self.db.close_view();
        let mut tx = self
            .db
            .client()?
            .build_transaction()
            .isolation_level(IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()?;
        export::export(&mut tx, sink)?;
        tx.commit()?;
        Ok(())
    }

    fn import(&mut self, records: &mut dyn Iterator<Item = Result<Record>>) -> Result<u64> {
        self.db.write_alone(
            self.clock.as_ref(),
            self.root.as_deref(),
            self.origin.as_deref(),
            false,
            |t, _| {
                let origin = t.origin;
                export::import(t.tx.client()?, origin, records)
            },
        )
    }

    fn wakeups(&mut self, feed: bool) -> Result<Option<Box<dyn Wakeups>>> {
        // A store without an origin reads every root's outcomes: it hears the feed.
        let mut channels: Vec<String> = self
            .origin
            .iter()
            .map(|o| wakeups::outbox_channel(o))
            .collect();
        if feed || self.origin.is_none() {
            channels.push(wakeups::FEED_CHANNEL.to_string());
        }
        let listener = wakeups::Listener::connect(self.db.config(), channels)?;
        Ok(Some(Box::new(listener)))
    }
}

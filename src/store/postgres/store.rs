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
use super::{audit, events, export, requests, wakeups};
use crate::clock::Millis;
use crate::error::Result;
use crate::protocol::Outcome;
use crate::store::driver::{Driver, Statements};
use crate::store::queue::Queue;
use crate::store::{
    Anchor, Event, ExportSink, ListFilter, Record, RequestRow, Swept, Verified, Wakeups,
};

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
    type Read<'a> = PgRead<'a, postgres::Client>;

    fn write<T>(&mut self, f: impl FnOnce(&mut dyn Statements, Millis) -> Result<T>) -> Result<T> {
        self.db.write(
            self.clock.as_ref(),
            self.root.as_deref(),
            self.origin.as_deref(),
            |t, now| f(t, now),
        )
    }

    fn write_no_sweep<T>(&mut self, f: impl FnOnce(&mut dyn Statements) -> Result<T>) -> Result<T> {
        self.db.write_no_sweep(
            self.clock.as_ref(),
            self.root.as_deref(),
            self.origin.as_deref(),
            |t, _| f(t),
        )
    }

    fn write_alone<T>(
        &mut self,
        f: impl FnOnce(&mut dyn Statements, Millis) -> Result<T>,
    ) -> Result<T> {
        self.db.write_alone(
            self.clock.as_ref(),
            self.root.as_deref(),
            self.origin.as_deref(),
            true,
            |t, now| {
                // What runs alone (a prune of a large log) may take longer than a
                // statement may.
                t.tx.batch_execute("SET LOCAL statement_timeout = 0")?;
                f(t, now)
            },
        )
    }

    fn read<T>(&mut self, f: impl Fn(&mut PgRead<'_, postgres::Client>) -> Result<T>) -> Result<T> {
        self.db.read(|c| f(&mut PgRead(c)))
    }

    fn now(&mut self) -> Result<Millis> {
        self.db.now(self.clock.as_ref())
    }

    fn sweep_if_due(&mut self) -> Result<Option<Swept>> {
        conn::sweep_if_due(&mut self.db, self.clock.as_ref(), self.root.as_deref())
    }

    fn next_due(&mut self) -> Result<Option<Millis>> {
        self.db.read(requests::next_due)
    }

    fn set_context_ladders(&mut self, policies: &[(String, String)]) -> Result<()> {
        self.db
            .read(|c| super::ladder::set_context_ladders(c, policies))
    }

    fn add_delivery_routes(&mut self, routes: &[crate::store::Route]) -> Result<()> {
        self.db.read(|c| super::deliveries::add_routes(c, routes))
    }

    fn deliveries_due(
        &mut self,
        routes: &[crate::store::Route],
        now: Millis,
        limit: usize,
    ) -> Result<Vec<crate::store::Delivery>> {
        self.db
            .read(|c| super::deliveries::due(c, routes, now, limit))
    }

    fn next_delivery_due(&mut self, routes: &[crate::store::Route]) -> Result<Option<Millis>> {
        self.db.read(|c| super::deliveries::next_due(c, routes))
    }

    fn mark_delivered(&mut self, id: &str, now: Millis) -> Result<()> {
        self.db
            .read(|c| super::deliveries::mark_delivered(c, id, now))
    }

    fn mark_delivery_failed(&mut self, id: &str, next_ms: Millis, error: &str) -> Result<()> {
        self.db
            .read(|c| super::deliveries::mark_failed(c, id, next_ms, error))
    }

    fn deliveries(&mut self, request_id: &str) -> Result<Vec<crate::store::Delivery>> {
        self.db
            .read(|c| super::deliveries::of_request(c, request_id))
    }

    fn delivery_counts(&mut self) -> Result<Vec<crate::store::DeliveryCounts>> {
        self.db.read(super::deliveries::counts)
    }

    fn outbox_pending(&mut self, after: i64, limit: usize) -> Result<Vec<(i64, Outcome)>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let origin = self.origin.as_deref();
        self.db
            .read(|c| requests::outbox_pending(c, origin, after, limit))
    }

    fn mark_outbox_written(&mut self, keys: &[i64]) -> Result<()> {
        self.write_no_sweep(|t| crate::store::queue::requests::mark_outbox_written(t, keys))
    }

    fn view_now(&mut self) -> Result<()> {
        self.db.view(self.clock.as_ref(), self.root.as_deref())
    }

    fn get(&mut self, id: &str) -> Result<Option<RequestRow>> {
        self.db.read(|c| requests::get(c, id))
    }

    fn get_any(&mut self, id: &str) -> Result<Option<RequestRow>> {
        self.db.read(|c| requests::get_any(c, id))
    }

    fn list(&mut self, filter: &ListFilter) -> Result<Vec<RequestRow>> {
        self.db.read(|c| requests::list(c, filter))
    }

    fn events(&mut self, request_id: &str) -> Result<Vec<Event>> {
        self.db.read(|c| events::for_request(c, request_id))
    }

    fn verify(&mut self, anchors: &[(PathBuf, Anchor)]) -> Result<Verified> {
        // Its own snapshot: a view's transaction (and its uncommitted sweep) ends first.
        self.db.close_view();
        let root = self.root.clone();
        self.db
            .read(|c| audit::verify_snapshot(c, root.as_deref(), anchors))
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

//! [`PgStore`]: the [`Store`] trait on one PostgreSQL connection. Each method is one write
//! transaction ([`Db::write`]; prune and import alone, [`Db::write_alone`]) or one read, composed from the
//! functions of this backend's modules — the same composition as `SqliteStore`'s.
//!
//! Time: a write reads `now` from the database's clock under the lock, and a read that
//! judges liveness (a lease, an agent) reads it from the database too. This store never
//! asks the host's clock for a decision; [`PgStore::with_clock`] replaces the database's
//! clock (tests).

use std::path::{Path, PathBuf};

use postgres::IsolationLevel;

use super::conn::{self, Clock, Db, Tx};
use super::tx::PgRead;
use super::{audit, events, export, requests, wakeups};
use crate::clock::Millis;
use crate::core::audit::Actor;
use crate::error::{Error, Result};
use crate::protocol::Outcome;
use crate::store::driver::FeedReads;
use crate::store::queue;
use crate::store::{
    AgentInfo, Anchor, AskInput, Asked, Entered, Event, EventPage, ExportSink, FeedPage, FeedPos,
    HistoryFilter, HistoryRow, HostMark, InboxInput, InboxVerdict, Lease, LeaseInfo, LeaseRef,
    ListFilter, Provided, ProviderAct, ProviderFile, PruneExport, Pruned, Record, Registered,
    RequestRow, Revoked, Stats, Store, Swept, TokenCredential, Verified, Wakeups, WebToken,
};

/// The PostgreSQL backend: one connection, this host's root and origin, and (for tests) a
/// clock that replaces the database's.
pub struct PgStore {
    db: Db,
    root: Option<PathBuf>,
    origin: Option<String>,
    clock: Option<Clock>,
    policy: std::sync::Arc<crate::core::quorum::Policy>,
}

impl std::fmt::Debug for PgStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Never the config: it holds the password.
        f.debug_struct("PgStore")
            .field("root", &self.root)
            .field("origin", &self.origin)
            .finish_non_exhaustive()
    }
}

impl Drop for PgStore {
    fn drop(&mut self) {
        self.db.close_view();
    }
}

impl PgStore {
    /// Connect to `url` (`postgres://USER[:PASSWORD]@HOST[:PORT]/DB`, or key=value) and
    /// migrate. `root_dir` is where this host keeps `audit.key` and `audit.head` (`None`:
    /// an unkeyed chain and no anchor, for tools and tests); `origin` names the root that
    /// asks through this store: new requests record it, and [`Store::outbox_pending`]
    /// returns only its rows (`None`: every row).
    pub fn connect(url: &str, root_dir: Option<&Path>, origin: Option<&str>) -> Result<PgStore> {
        let config = conn::parse_url(url)?;
        Ok(PgStore {
            db: Db::open(config)?,
            root: root_dir.map(Path::to_path_buf),
            origin: origin.map(str::to_string),
            clock: None,
            policy: std::sync::Arc::default(),
        })
    }

    /// The same store judging time by `clock` instead of the database's (tests).
    pub fn with_clock(mut self, clock: Clock) -> PgStore {
        self.clock = Some(clock);
        self
    }

    /// The origin new requests record.
    pub fn origin(&self) -> Option<&str> {
        self.origin.as_deref()
    }

    /// The client, for this backend's own tests and tools (reconnected when lost).
    pub fn client(&mut self) -> Result<&mut postgres::Client> {
        self.db.client()
    }

    fn now(&mut self) -> Result<Millis> {
        self.db.now(self.clock.as_ref())
    }

    fn write<T>(&mut self, f: impl FnOnce(&mut Tx<'_>, Millis) -> Result<T>) -> Result<T> {
        self.db.write(
            self.clock.as_ref(),
            self.root.as_deref(),
            self.origin.as_deref(),
            f,
        )
    }

    fn write_no_sweep<T>(&mut self, f: impl FnOnce(&mut Tx<'_>, Millis) -> Result<T>) -> Result<T> {
        self.db.write_no_sweep(
            self.clock.as_ref(),
            self.root.as_deref(),
            self.origin.as_deref(),
            f,
        )
    }
}

impl Store for PgStore {
    fn set_quorum_policy(&mut self, policy: std::sync::Arc<crate::core::quorum::Policy>) {
        self.policy = policy;
    }

    fn ask(&mut self, input: AskInput) -> Result<Asked> {
        let policy = self.policy.clone();
        self.write(|t, now| queue::requests::accept_or_reject(t, now, input, &policy))
    }

    fn ingest(&mut self, inputs: Vec<InboxInput>) -> Result<Vec<InboxVerdict>> {
        let policy = self.policy.clone();
        self.write(|t, now| queue::requests::ingest(t, now, inputs, &policy))
    }

    fn abort(&mut self, id: &str, reason: Option<&str>, actor: &Actor) -> Result<Outcome> {
        self.write(|t, now| queue::answers::abort(t, now, id, reason, actor))
    }

    fn provide(&mut self, lease: &LeaseRef, act: ProviderAct) -> Result<Provided> {
        self.write(|t, now| queue::answers::provide(t, now, lease, &act))
    }

    fn apply_answer_files(
        &mut self,
        files: &[ProviderFile],
    ) -> Result<Vec<std::result::Result<Option<Outcome>, Error>>> {
        self.write(|t, now| queue::answers::apply_answer_files(t, now, files))
    }

    fn next_for_lease(
        &mut self,
        context: &str,
        lease_id: i64,
        after: FeedPos,
    ) -> Result<Option<String>> {
        self.db
            .read(|c| queue::answers::next_for_lease(&mut PgRead(c), context, lease_id, after))
    }

    fn register_as(
        &mut self,
        context: &str,
        name: &str,
        ttl_ms: Millis,
        host: Option<&HostMark>,
    ) -> Result<(Registered, Lease)> {
        self.write(|t, now| {
            let reg = crate::store::queue::leases::register(t, now, context, name, ttl_ms, host)?;
            let lease = crate::store::queue::leases::authenticate(t, &reg.lease, now)?;
            Ok((reg, lease))
        })
    }

    fn take_over_host(&mut self, host_id: &str) -> Result<Vec<Revoked>> {
        self.write(|t, now| crate::store::queue::leases::take_over(t, now, host_id))
    }

    fn heartbeat(&mut self, token: &str) -> Result<Lease> {
        self.write(|t, now| crate::store::queue::leases::heartbeat(t, now, token))
    }

    fn release(&mut self, token: &str) -> Result<bool> {
        self.write(|t, now| crate::store::queue::leases::release(t, now, token))
    }

    fn revoke(&mut self, context: &str, by: &str, reason: Option<&str>) -> Result<Revoked> {
        self.write(|t, now| crate::store::queue::leases::revoke(t, now, context, by, reason))
    }

    fn authenticate(&mut self, token: &str) -> Result<Lease> {
        let now = self.now()?;
        self.db
            .read(|c| crate::store::queue::leases::authenticate(&mut PgRead(c), token, now))
    }

    fn lease_info(&mut self, token: &str) -> Result<LeaseInfo> {
        let now = self.now()?;
        self.db
            .read(|c| crate::store::queue::leases::info(&mut PgRead(c), token, now))
    }

    fn lease_status(&mut self, context: Option<&str>) -> Result<Vec<LeaseInfo>> {
        let now = self.now()?;
        self.db
            .read(|c| crate::store::queue::leases::status(&mut PgRead(c), context, now))
    }

    fn agent_enter(
        &mut self,
        id: &str,
        owner: Option<&str>,
        lineage: Option<&str>,
        ttl_ms: Option<Millis>,
    ) -> Result<Entered> {
        self.write(|t, now| crate::store::queue::agents::enter(t, now, id, owner, lineage, ttl_ms))
    }

    fn agent_heartbeat(&mut self, id: &str, instance: &str) -> Result<AgentInfo> {
        self.write(|t, now| crate::store::queue::agents::heartbeat(t, now, id, instance))
    }

    fn agent_exit(&mut self, id: &str, instance: &str) -> Result<Vec<String>> {
        self.write(|t, now| crate::store::queue::agents::exit(t, now, id, instance))
    }

    fn agents(&mut self, live_only: bool) -> Result<Vec<AgentInfo>> {
        let now = self.now()?;
        self.db
            .read(|c| crate::store::queue::agents::list(&mut super::tx::PgRead(c), now, live_only))
    }

    fn sweep(&mut self) -> Result<Option<Swept>> {
        conn::sweep_if_due(&mut self.db, self.clock.as_ref(), self.root.as_deref())
    }

    fn next_due(&mut self) -> Result<Option<Millis>> {
        self.db.read(requests::next_due)
    }

    fn outbox_pending(&mut self, after: i64, limit: usize) -> Result<Vec<(i64, Outcome)>> {
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let origin = self.origin.as_deref();
        self.db
            .read(|c| requests::outbox_pending(c, origin, after, limit))
    }

    fn mark_outbox_written(&mut self, keys: &[i64]) -> Result<()> {
        self.write_no_sweep(|t, _| requests::mark_outbox_written(t, keys))
    }

    fn while_open(
        &mut self,
        ids: Option<&[&str]>,
        remove: &mut dyn FnMut(&[String]) -> Result<usize>,
    ) -> Result<usize> {
        self.write_no_sweep(|t, _| queue::feed::while_open(t, ids, remove))
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

    fn feed(&mut self, after: FeedPos, limit: usize) -> Result<FeedPage> {
        self.db
            .read(|c| queue::feed::new_requests(&mut PgRead(c), after, limit))
    }

    fn events_head(&mut self) -> Result<FeedPos> {
        self.db.read(|c| PgRead(c).events_head())
    }

    fn request_events(
        &mut self,
        after: FeedPos,
        kinds: &[crate::core::audit::EventKind],
        filter: &ListFilter,
        limit: usize,
    ) -> Result<EventPage> {
        self.db
            .read(|c| queue::feed::request_events(&mut PgRead(c), after, kinds, filter, limit))
    }

    fn open_requests(&mut self, context: Option<&str>) -> Result<Vec<RequestRow>> {
        self.db.read(|c| PgRead(c).open_requests(context))
    }

    fn history(&mut self, filter: &HistoryFilter) -> Result<Vec<HistoryRow>> {
        let now = self.now()?;
        self.db
            .read(|c| queue::history::history(&mut PgRead(c), filter, now))
    }

    fn stats(&mut self, since: Option<Millis>) -> Result<Stats> {
        let now = self.now()?;
        self.db
            .read(|c| queue::history::stats(&mut PgRead(c), since, now))
    }

    fn open_counts(&mut self) -> Result<crate::store::OpenCounts> {
        self.db
            .read(|c| queue::history::open_counts(&mut PgRead(c)))
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
                export::import(&mut t.tx, origin, records)
            },
        )
    }

    fn prune(
        &mut self,
        before: Millis,
        limit: Option<u64>,
        actor: &Actor,
        export: &mut dyn PruneExport,
    ) -> Result<Pruned> {
        let (mut pruned, ids) = self.db.write_alone(
            self.clock.as_ref(),
            self.root.as_deref(),
            self.origin.as_deref(),
            true,
            |t, now| {
                // A prune of a large log may take longer than a statement may.
                t.tx.batch_execute("SET LOCAL statement_timeout = 0")?;
                queue::prune::prune(t, now, before, limit, actor, &mut *export)
            },
        )?;
        if ids.is_empty() {
            return Ok(pruned);
        }
        self.write_no_sweep(|t, _| queue::prune::free_outcomes(t, ids, &mut pruned, &mut *export))?;
        Ok(pruned)
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

    fn token_create(
        &mut self,
        name: &str,
        role: crate::core::access::Role,
        context: Option<&str>,
        lookup: &str,
        hash: &[u8],
    ) -> Result<WebToken> {
        self.write(|t, now| queue::tokens::create(t, now, name, role, context, lookup, hash))
    }

    fn tokens(&mut self) -> Result<Vec<WebToken>> {
        self.db.read(|c| queue::tokens::list(&mut PgRead(c)))
    }

    fn token_revoke(&mut self, name: &str) -> Result<bool> {
        self.write(|t, now| queue::tokens::revoke(t, now, name))
    }

    fn token_credential(&mut self, lookup: &str) -> Result<Option<TokenCredential>> {
        self.db
            .read(|c| queue::tokens::by_lookup(&mut PgRead(c), lookup))
    }
}

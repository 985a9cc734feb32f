//! [`SqliteStore`]: the [`Store`] trait on one SQLite connection. Each method is one
//! `BEGIN IMMEDIATE` transaction (or one read), composed from the functions of this
//! backend's modules; savepoints, `INDEXED BY` and the WAL stay in here.

use std::path::PathBuf;
use std::sync::Arc;

use rusqlite::{Connection, TransactionBehavior};

use super::conn::{self, write_clocked, write_no_sweep};
use super::sql::{Sql, SqlRead};
use super::{audit, events, requests};
use crate::clock::Millis;
use crate::core::audit::Actor;
use crate::error::{Error, Result};
use crate::protocol::Outcome;
use crate::store::driver::FeedReads;
use crate::store::export::camel;
use crate::store::queue;
use crate::store::{
    AgentInfo, Anchor, AskInput, Asked, Entered, Event, EventPage, ExportSink, FeedPage, FeedPos,
    HistoryFilter, HistoryRow, HostMark, InboxInput, InboxVerdict, Lease, LeaseInfo, LeaseRef,
    ListFilter, Provided, ProviderAct, ProviderFile, PruneExport, Pruned, Registered, RequestRow,
    Revoked, Stats, Store, Swept, TokenCredential, Verified, WebToken,
};

/// A clock: milliseconds since the epoch.
pub type Clock = Arc<dyn Fn() -> Millis + Send + Sync>;

/// The SQLite backend: one connection and a clock.
pub struct SqliteStore {
    conn: Connection,
    clock: Clock,
    policy: Arc<crate::core::quorum::Policy>,
}

impl SqliteStore {
    /// A store on an open connection, on the system clock.
    pub fn new(conn: Connection) -> SqliteStore {
        SqliteStore {
            conn,
            clock: Arc::new(crate::clock::now_ms),
            policy: Arc::default(),
        }
    }

    /// A store on an open connection with its own clock (tests).
    pub fn with_clock(conn: Connection, clock: Clock) -> SqliteStore {
        SqliteStore {
            conn,
            clock,
            policy: Arc::default(),
        }
    }

    /// Open (creating and migrating if needed) the database at `path`.
    pub fn open(path: &std::path::Path) -> Result<SqliteStore> {
        Ok(SqliteStore::new(conn::open(path)?))
    }

    /// Open an existing database for reading only: nothing is created, migrated or
    /// written ([`conn::open_read`]).
    pub fn open_read(path: &std::path::Path) -> Result<SqliteStore> {
        Ok(SqliteStore::new(conn::open_read(path)?))
    }

    /// An in-memory store with the schema, for tests.
    pub fn in_memory() -> Result<SqliteStore> {
        Ok(SqliteStore::new(conn::open_in_memory()?))
    }

    /// The connection, for this backend's own tests and tools.
    pub fn connection(&mut self) -> &mut Connection {
        &mut self.conn
    }

    fn now(&self) -> Millis {
        (self.clock)()
    }

    fn write<T>(&mut self, f: impl FnOnce(&mut Sql<'_, '_>, Millis) -> Result<T>) -> Result<T> {
        let clock = self.clock.clone();
        write_clocked(&mut self.conn, &*clock, f)
    }
}

impl Store for SqliteStore {
    fn set_quorum_policy(&mut self, policy: Arc<crate::core::quorum::Policy>) {
        self.policy = policy;
    }

    fn ask(&mut self, input: AskInput) -> Result<Asked> {
        let policy = self.policy.clone();
        self.write(|tx, now| queue::requests::accept_or_reject(tx, now, input, &policy))
    }

    fn ingest(&mut self, inputs: Vec<InboxInput>) -> Result<Vec<InboxVerdict>> {
        let policy = self.policy.clone();
        self.write(|tx, now| queue::requests::ingest(tx, now, inputs, &policy))
    }

    fn abort(&mut self, id: &str, reason: Option<&str>, actor: &Actor) -> Result<Outcome> {
        self.write(|tx, now| queue::answers::abort(tx, now, id, reason, actor))
    }

    fn provide(&mut self, lease: &LeaseRef, act: ProviderAct) -> Result<Provided> {
        self.write(|tx, now| queue::answers::provide(tx, now, lease, &act))
    }

    fn apply_answer_files(
        &mut self,
        files: &[ProviderFile],
    ) -> Result<Vec<std::result::Result<Option<Outcome>, Error>>> {
        self.write(|tx, now| queue::answers::apply_answer_files(tx, now, files))
    }

    fn next_for_lease(
        &mut self,
        context: &str,
        lease_id: i64,
        after: FeedPos,
    ) -> Result<Option<String>> {
        queue::answers::next_for_lease(&mut SqlRead(&self.conn), context, lease_id, after)
    }

    fn register_as(
        &mut self,
        context: &str,
        name: &str,
        ttl_ms: Millis,
        host: Option<&HostMark>,
    ) -> Result<(Registered, Lease)> {
        self.write(|tx, now| {
            let reg = crate::store::queue::leases::register(tx, now, context, name, ttl_ms, host)?;
            let lease = crate::store::queue::leases::authenticate(tx, &reg.lease, now)?;
            Ok((reg, lease))
        })
    }

    fn take_over_host(&mut self, host_id: &str) -> Result<Vec<Revoked>> {
        self.write(|tx, now| crate::store::queue::leases::take_over(tx, now, host_id))
    }

    fn heartbeat(&mut self, token: &str) -> Result<Lease> {
        self.write(|tx, now| crate::store::queue::leases::heartbeat(tx, now, token))
    }

    fn release(&mut self, token: &str) -> Result<bool> {
        self.write(|tx, now| crate::store::queue::leases::release(tx, now, token))
    }

    fn revoke(&mut self, context: &str, by: &str, reason: Option<&str>) -> Result<Revoked> {
        self.write(|tx, now| crate::store::queue::leases::revoke(tx, now, context, by, reason))
    }

    fn authenticate(&mut self, token: &str) -> Result<Lease> {
        let now = self.now();
        crate::store::queue::leases::authenticate(&mut SqlRead(&self.conn), token, now)
    }

    fn lease_info(&mut self, token: &str) -> Result<LeaseInfo> {
        let now = self.now();
        crate::store::queue::leases::info(&mut SqlRead(&self.conn), token, now)
    }

    fn lease_status(&mut self, context: Option<&str>) -> Result<Vec<LeaseInfo>> {
        let now = self.now();
        crate::store::queue::leases::status(&mut SqlRead(&self.conn), context, now)
    }

    fn agent_enter(
        &mut self,
        id: &str,
        owner: Option<&str>,
        lineage: Option<&str>,
        ttl_ms: Option<Millis>,
    ) -> Result<Entered> {
        self.write(|tx, now| {
            crate::store::queue::agents::enter(tx, now, id, owner, lineage, ttl_ms)
        })
    }

    fn agent_heartbeat(&mut self, id: &str, instance: &str) -> Result<AgentInfo> {
        self.write(|tx, now| crate::store::queue::agents::heartbeat(tx, now, id, instance))
    }

    fn agent_exit(&mut self, id: &str, instance: &str) -> Result<Vec<String>> {
        self.write(|tx, now| crate::store::queue::agents::exit(tx, now, id, instance))
    }

    fn agents(&mut self, live_only: bool) -> Result<Vec<AgentInfo>> {
        let now = self.now();
        crate::store::queue::agents::list(&mut super::sql::SqlRead(&self.conn), now, live_only)
    }

    fn sweep(&mut self) -> Result<Option<Swept>> {
        let now = self.now();
        conn::sweep_if_due(&mut self.conn, now)
    }

    fn clock_now(&mut self) -> Result<Millis> {
        Ok(self.now())
    }

    fn next_due(&mut self) -> Result<Option<Millis>> {
        requests::next_due(&self.conn)
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

    fn while_open(
        &mut self,
        ids: Option<&[&str]>,
        remove: &mut dyn FnMut(&[String]) -> Result<usize>,
    ) -> Result<usize> {
        write_no_sweep(&mut self.conn, |db| {
            queue::feed::while_open(db, ids, remove)
        })
    }

    fn view_now(&mut self) -> Result<()> {
        let now = self.now();
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

    fn feed(&mut self, after: FeedPos, limit: usize) -> Result<FeedPage> {
        queue::feed::new_requests(&mut SqlRead(&self.conn), after, limit)
    }

    fn open_requests(&mut self, context: Option<&str>) -> Result<Vec<RequestRow>> {
        SqlRead(&self.conn).open_requests(context)
    }

    fn history(&mut self, filter: &HistoryFilter) -> Result<Vec<HistoryRow>> {
        let now = self.now();
        queue::history::history(&mut SqlRead(&self.conn), filter, now)
    }

    fn stats(&mut self, since: Option<Millis>) -> Result<Stats> {
        let now = self.now();
        queue::history::stats(&mut SqlRead(&self.conn), since, now)
    }

    fn open_counts(&mut self) -> Result<crate::store::OpenCounts> {
        queue::history::open_counts(&mut SqlRead(&self.conn))
    }

    fn events_head(&mut self) -> Result<FeedPos> {
        SqlRead(&self.conn).events_head()
    }

    fn request_events(
        &mut self,
        after: FeedPos,
        kinds: &[crate::core::audit::EventKind],
        filter: &ListFilter,
        limit: usize,
    ) -> Result<EventPage> {
        queue::feed::request_events(&mut SqlRead(&self.conn), after, kinds, filter, limit)
    }

    fn events(&mut self, request_id: &str) -> Result<Vec<Event>> {
        events::for_request(&self.conn, request_id)
    }

    fn verify(&mut self, anchors: &[(PathBuf, Anchor)]) -> Result<Verified> {
        audit::verify(&self.conn, anchors)
    }

    fn export(&mut self, sink: ExportSink<'_>) -> Result<()> {
        // One read transaction: a consistent snapshot even while the daemon writes.
        let tx = self
            .conn
            .transaction_with_behavior(TransactionBehavior::Deferred)?;
        for (kind, sql) in [
            ("request", "SELECT * FROM requests ORDER BY seq"),
            (
                "question",
                "SELECT * FROM questions ORDER BY request_seq, idx",
            ),
            (
                "lease",
                "SELECT lease_id, context, name, generation, ttl_ms, created_ms, heartbeat_ms, expires_ms, ended_ms, end_reason FROM leases ORDER BY lease_id",
            ),
            ("agent", "SELECT * FROM agents ORDER BY entered_ms"),
            (
                "vote",
                "SELECT * FROM votes ORDER BY request_seq, created_ms, voter",
            ),
            ("event", "SELECT * FROM events ORDER BY seq"),
        ] {
            dump(&tx, kind, sql, sink)?;
        }
        Ok(())
    }

    fn prune(
        &mut self,
        before: Millis,
        limit: Option<u64>,
        actor: &Actor,
        export: &mut dyn PruneExport,
    ) -> Result<Pruned> {
        let (mut pruned, ids) =
            self.write(|db, now| queue::prune::prune(db, now, before, limit, actor, &mut *export))?;
        if ids.is_empty() {
            return Ok(pruned);
        }
        write_no_sweep(&mut self.conn, |db| {
            queue::prune::free_outcomes(db, ids, &mut pruned, &mut *export)
        })?;
        Ok(pruned)
    }

    fn token_create(
        &mut self,
        name: &str,
        role: crate::core::access::Role,
        context: Option<&str>,
        lookup: &str,
        hash: &[u8],
    ) -> Result<WebToken> {
        self.write(|tx, now| queue::tokens::create(tx, now, name, role, context, lookup, hash))
    }

    fn tokens(&mut self) -> Result<Vec<WebToken>> {
        queue::tokens::list(&mut SqlRead(&self.conn))
    }

    fn token_revoke(&mut self, name: &str) -> Result<bool> {
        self.write(|tx, now| queue::tokens::revoke(tx, now, name))
    }

    fn token_credential(&mut self, lookup: &str) -> Result<Option<TokenCredential>> {
        queue::tokens::by_lookup(&mut SqlRead(&self.conn), lookup)
    }
}

fn dump(conn: &Connection, kind: &str, sql: &str, sink: ExportSink<'_>) -> Result<()> {
    dump_params(conn, kind, sql, [], sink)
}

/// [`dump`] of the rows `sql` selects with `?1` bound to `upto` (prune's export).
pub(super) fn dump_where(
    conn: &Connection,
    kind: &str,
    sql: &str,
    upto: i64,
    sink: ExportSink<'_>,
) -> Result<()> {
    dump_params(conn, kind, sql, [upto], sink)
}

fn dump_params<P: rusqlite::Params>(
    conn: &Connection,
    kind: &str,
    sql: &str,
    params: P,
    sink: ExportSink<'_>,
) -> Result<()> {
    use rusqlite::types::ValueRef;
    let mut stmt = conn.prepare(sql)?;
    let names: Vec<String> = stmt.column_names().iter().map(|s| camel(s)).collect();
    let mut rows = stmt.query(params)?;
    while let Some(r) = rows.next()? {
        let mut obj = serde_json::Map::new();
        obj.insert("type".into(), kind.into());
        for (i, name) in names.iter().enumerate() {
            let v = match r.get_ref(i)? {
                ValueRef::Null => serde_json::Value::Null,
                ValueRef::Integer(x) => x.into(),
                ValueRef::Real(x) => x.into(),
                ValueRef::Text(t) => String::from_utf8_lossy(t).into_owned().into(),
                ValueRef::Blob(b) => events::hex(b).into(),
            };
            obj.insert(name.clone(), v);
        }
        sink(kind, obj)?;
    }
    Ok(())
}

//! The write transaction every function of this backend works in, apart from the
//! connection that opens it ([`super::conn`]): the queue's modules (leases, agents,
//! requests, events) take a [`Tx`], and the connection's write helper sweeps through
//! them, so the type lives below both and neither imports the other back.
//!
//! A [`Tx`] is also the write's context: the events its rule appends are staged here and
//! chained only when it commits ([`super::events::flush`], under [`CHAIN_LOCK`]), and the
//! locks it took are remembered, so a statement that needs one takes it once. Its new
//! request and question rows are held by its [`Session`], the only way to the
//! transaction, which sends them before any other statement and at the commit
//! ([`super::session`]).

use std::path::Path;

use postgres::types::Type;
use postgres::Transaction;

use super::session::{Held, Session};

use crate::clock::Millis;
use crate::error::Result;
use crate::store::chain::ChainHead;
use crate::store::driver::ReadsInside;

/// The lock a transaction holds from its chain section to its commit: the one that orders
/// the log. Every transaction that appended takes it just before inserting its events
/// (so `seq` is the newest + 1, without gaps, and events appear in commit order), and
/// holds it only for that insert and the commit.
pub const CHAIN_LOCK: i64 = 0x6473_6871_0000_0003;

/// The lock a transaction takes before it numbers a new request or lease row (the
/// largest + 1), held to its commit: row numbers then grow in commit order without gaps,
/// as SQLite's do, and a request row and its creation event pair in the same order
/// (`check_records`). Only the writes that ask or take a lease take it; claims, answers,
/// heartbeats and sweeps never do.
pub const ROWS_LOCK: i64 = 0x6473_6871_0000_0004;

/// One event staged by a transaction, chained and inserted at its commit.
#[derive(Debug, Clone)]
pub struct Staged {
    /// When it happened (the write's `now`).
    pub at_ms: Millis,
    /// Its kind, as stored.
    pub kind: &'static str,
    /// The request it concerns.
    pub request_id: Option<String>,
    /// The lease it concerns.
    pub lease_id: Option<i64>,
    /// The agent it concerns.
    pub agent_id: Option<String>,
    /// Who did it, as stored.
    pub actor: String,
    /// Its data (JSON text).
    pub data: String,
}

/// The request rows of the ids a batch of asks will look up, read in one statement before
/// it ([`crate::store::driver::RequestStatements::preload_rows_of_ids`]) and kept up to
/// date by the inserts that follow, so each input's lookups (the id taken, an earlier
/// rejection of the same file) need no round trip. Any other statement that changes
/// request rows drops it ([`Tx::forget_id_rows`]): the lookups then read the table.
///
/// Kept by id: a lookup reads the rows of its own id only. (A list of every row, searched
/// whole per lookup, made a 512-file batch compare ids a few hundred thousand times.)
#[derive(Debug, Default)]
pub struct IdRows {
    /// Each id whose rows are all here, with its rows in `seq` order.
    by_id: std::collections::HashMap<String, Vec<IdRowCopy>>,
}

impl IdRows {
    /// The copy for `ids`, holding none of their rows yet.
    pub fn of_ids(ids: &[&str]) -> IdRows {
        IdRows {
            by_id: ids.iter().map(|i| (i.to_string(), Vec::new())).collect(),
        }
    }

    /// The rows of `id`, oldest first; `None` when `id` is not one this copy follows
    /// (then the table has the answer).
    pub fn rows(&self, id: &str) -> Option<&[IdRowCopy]> {
        self.by_id.get(id).map(Vec::as_slice)
    }

    /// Keep `row` of `id`, newer than the ones kept, when `id` is followed. Returns whether
    /// it was.
    pub fn push(&mut self, id: &str, row: IdRowCopy) -> bool {
        match self.by_id.get_mut(id) {
            Some(rows) => {
                rows.push(row);
                true
            }
            None => false,
        }
    }

    /// Whether `id` is followed (its new rows are to be kept).
    pub fn follows(&self, id: &str) -> bool {
        self.by_id.contains_key(id)
    }
}

/// One request row as [`IdRows`] keeps it (under its id).
#[derive(Debug, Clone)]
pub struct IdRowCopy {
    /// `seq`.
    pub seq: i64,
    /// `status`.
    pub status: String,
    /// `context`.
    pub context: String,
    /// `body`.
    pub body: String,
    /// `source`.
    pub source: String,
    /// `created_ms`.
    pub created_ms: i64,
    /// `error_code`.
    pub error_code: Option<String>,
    /// `error_message`.
    pub error_message: Option<String>,
}

/// What a transaction holds unsent at a savepoint, to return to if it is rolled back.
#[derive(Debug, Clone, Copy, Default)]
pub struct Mark {
    events: usize,
    held: Held,
}

/// One write transaction, with what the functions of this backend need beside it: the
/// root (where `audit.key` and `audit.head` live), the origin a new request records, the
/// events staged for the chain and the locks taken.
pub struct Tx<'c> {
    /// The transaction itself, holding new request and question rows until a statement
    /// or the commit needs them sent ([`Session`]).
    pub tx: Session<'c>,
    /// The root dir of this host, when it has one.
    pub root: Option<&'c Path>,
    /// The root that asks, recorded on new requests (`requests.origin`).
    pub origin: Option<&'c str>,
    /// Whether an event was appended (then the commit notifies
    /// [`super::wakeups::FEED_CHANNEL`]).
    pub appended: bool,
    /// The roots whose outcomes this write made due (their channels are notified).
    pub(super) outcomes_for: std::collections::BTreeSet<String>,
    /// The events appended and not yet inserted, oldest first.
    pub(super) staged: Vec<Staged>,
    /// The rows of the ids a batch of asks preloaded, while they are current.
    pub(super) id_rows: Option<IdRows>,
    /// The head the inserted events left, published to `audit.head` after the commit.
    pub(super) head: Option<ChainHead>,
    /// Whether [`CHAIN_LOCK`] is held.
    pub(super) chain_locked: bool,
    /// Whether [`ROWS_LOCK`] is held.
    rows_locked: bool,
    /// What was unsent at the answer file's savepoint (see `savepoint_answer_file`).
    pub(super) answer_file_mark: Mark,
    /// The operator's ladder policy of each context this write looked up: read
    /// once a write, beside the held rows, not once a file.
    pub(super) ladder_policies: std::collections::HashMap<String, Option<String>>,
    /// The channels each context's deliveries go out on, read once a write: an
    /// event of a context without channels costs no statement.
    pub(super) sending_channels:
        Option<std::collections::HashMap<String, Vec<crate::core::channel::Channel>>>,
}

impl<'c> ReadsInside for Tx<'c> {
    type Reads<'r>
        = PgRead<'r, Transaction<'c>>
    where
        Self: 'r;

    fn reads(&mut self) -> Result<PgRead<'_, Transaction<'c>>> {
        Ok(PgRead(self.tx.client()?))
    }

    fn reads_beside_held(&mut self) -> PgRead<'_, Transaction<'c>> {
        PgRead(self.tx.beside_held())
    }
}

impl<'c> Tx<'c> {
    /// The context of transaction `tx`, which has done nothing yet. The store's write
    /// helpers make one per write ([`super::conn::Db::write`]) and commit it, chaining what
    /// it staged; a tool or test that makes its own commits only what it wrote itself.
    pub fn begin(tx: Transaction<'c>, root: Option<&'c Path>, origin: Option<&'c str>) -> Tx<'c> {
        Tx {
            tx: Session::new(tx),
            root,
            origin,
            appended: false,
            outcomes_for: std::collections::BTreeSet::new(),
            staged: Vec::new(),
            id_rows: None,
            head: None,
            chain_locked: false,
            rows_locked: false,
            answer_file_mark: Mark::default(),
            ladder_policies: std::collections::HashMap::new(),
            sending_channels: None,
        }
    }

    /// Take `lock` (a transaction-scoped advisory lock) unless `held`.
    fn lock(&mut self, lock: i64, held: bool) -> Result<()> {
        if !held {
            self.tx
                .execute_typed("SELECT pg_advisory_xact_lock($1)", &[(&lock, Type::INT8)])?;
        }
        Ok(())
    }

    /// Take [`ROWS_LOCK`] (once), before numbering a new request or lease row.
    pub fn lock_rows(&mut self) -> Result<()> {
        self.lock(ROWS_LOCK, self.rows_locked)?;
        self.rows_locked = true;
        Ok(())
    }

    /// Take [`CHAIN_LOCK`] (once), before reading the chain's head to extend it.
    pub(super) fn lock_chain(&mut self) -> Result<()> {
        self.lock(CHAIN_LOCK, self.chain_locked)?;
        self.chain_locked = true;
        Ok(())
    }

    /// An outcome of the root `origin` is due once this commits: wake its daemon.
    pub fn outcome_due_for(&mut self, origin: Option<String>) {
        if let Some(o) = origin {
            self.outcomes_for.insert(o);
        }
    }

    /// A statement changed request rows in a way [`IdRows`] does not follow: drop it.
    pub fn forget_id_rows(&mut self) {
        self.id_rows = None;
    }

    /// What is unsent now: a mark to return to when a savepoint is rolled back.
    pub fn mark(&self) -> Mark {
        Mark {
            events: self.staged.len(),
            held: self.tx.held(),
        }
    }

    /// Before (or after) a rollback to a savepoint taken at `mark`: what was staged and
    /// held since is gone with it. (Held rows are sent before a savepoint is taken, so
    /// those held at a rollback all came after it; events are only sent at the commit.)
    /// Call it before the rollback's statement, which would otherwise send them first.
    pub fn rolled_back_to(&mut self, mark: Mark) {
        // Rows inserted since may be in the copy: read the table again.
        self.id_rows = None;
        self.staged.truncate(mark.events);
        self.tx.forget_since(mark.held);
    }
}

/// The read statements of this backend on any client (a read on the connection, or the
/// transaction of a write), for the queue rules that also run outside a write: each
/// concern's file implements its read trait ([`crate::store::driver`]) on it, and on
/// [`Tx`] through it.
pub struct PgRead<'a, C: postgres::GenericClient>(pub &'a mut C);

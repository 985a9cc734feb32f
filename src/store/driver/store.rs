//! What a driver offers besides its statements: its transactions, its clock, and the
//! operations that are its database's own.
//!
//! [`crate::store::queue::Queue`] is the one implementation of [`crate::store::Store`]: it
//! runs each use-case's rule inside a transaction this trait opens. So the composition of
//! the queue (which rule runs in which kind of transaction, with which time) is written
//! once, and a backend says only how to open a write, a read, and what its database does
//! that no rule decides: the sweep's cheap "is anything due" probe, the outcome cursor,
//! snapshots for `audit verify` and export, a copy's import, and how another host's commit
//! is heard.
//!
//! Writes hand the rule `&mut dyn Statements` (a rule is compiled once, not per driver);
//! reads hand it the driver's read type, which implements every read trait, so a rule that
//! takes `&mut dyn TokenReads` gets it by an unsizing coercion.

use std::path::PathBuf;

use super::{
    AgentReads, AnswerReads, FeedReads, HistoryReads, LeaseReads, LinkReads, SlackReads,
    Statements, TokenReads,
};
use crate::clock::Millis;
use crate::error::Result;
use crate::protocol::Outcome;
use crate::store::{
    Anchor, Delivery, DeliveryCounts, Event, ExportSink, ListFilter, Record, RequestRow, Route,
    Swept, Verified, Wakeups,
};

/// Every read a rule outside a write may make: what a driver's read type implements.
pub trait Reads:
    LeaseReads
    + AgentReads
    + AnswerReads
    + FeedReads
    + HistoryReads
    + TokenReads
    + SlackReads
    + LinkReads
{
}

impl<T> Reads for T where
    T: LeaseReads
        + AgentReads
        + AnswerReads
        + FeedReads
        + HistoryReads
        + TokenReads
        + SlackReads
        + LinkReads
        + ?Sized
{
}

/// A backend: how it opens its transactions, whose clock it judges by, and what its
/// database does on its own. One per connection; synchronous and `Send`, like the store.
pub trait Driver: Send {
    /// The read context a rule gets outside a write (a connection, or an open view).
    type Read<'a>: Reads
    where
        Self: 'a;

    /// One write transaction: the driver takes its write lock, reads the time from its
    /// clock after that, sweeps what fell due at that time, runs `f`, and commits on `Ok`
    /// (publishing the chain head the write appended); on `Err` it rolls `f` back.
    fn write<T>(&mut self, f: impl FnOnce(&mut dyn Statements, Millis) -> Result<T>) -> Result<T>;

    /// A write without the sweep: bookkeeping that must not wait on, or decide, what fell
    /// due (the outbox's marks, freeing outcome files).
    fn write_no_sweep<T>(&mut self, f: impl FnOnce(&mut dyn Statements) -> Result<T>) -> Result<T>;

    /// A write that runs alone, no other write beside it (prune): on SQLite every write
    /// already does; on PostgreSQL it takes the write lock exclusive and lifts the
    /// statement timeout.
    fn write_alone<T>(
        &mut self,
        f: impl FnOnce(&mut dyn Statements, Millis) -> Result<T>,
    ) -> Result<T>;

    /// One read. `f` may run twice when the first attempt lost its connection (reads are
    /// idempotent), hence `Fn`.
    fn read<T>(&mut self, f: impl Fn(&mut Self::Read<'_>) -> Result<T>) -> Result<T>;

    /// The time a read judges liveness by (the store's clock: the database's, for a
    /// shared store).
    fn now(&mut self) -> Result<Millis>;

    // ---- the database's own operations -------------------------------------------------

    /// End what fell due, in a write of its own, when anything has (a cheap probe
    /// otherwise): see [`crate::store::Store::sweep`].
    fn sweep_if_due(&mut self) -> Result<Option<Swept>>;

    /// The earliest future time something falls due.
    fn next_due(&mut self) -> Result<Option<Millis>>;

    /// See [`crate::store::Store::set_context_ladders`].
    fn set_context_ladders(&mut self, policies: &[(String, String)]) -> Result<()>;

    // ---- the deliveries outbox: bookkeeping of the sender ([`crate::store::Store`]) ----

    /// See [`crate::store::Store::add_delivery_routes`].
    fn add_delivery_routes(&mut self, routes: &[Route]) -> Result<()>;

    /// See [`crate::store::Store::deliveries_due`].
    fn deliveries_due(
        &mut self,
        routes: &[Route],
        now: Millis,
        limit: usize,
    ) -> Result<Vec<Delivery>>;

    /// See [`crate::store::Store::next_delivery_due`].
    fn next_delivery_due(&mut self, routes: &[Route]) -> Result<Option<Millis>>;

    /// See [`crate::store::Store::mark_delivered`].
    fn mark_delivered(&mut self, id: &str, now: Millis) -> Result<()>;

    /// See [`crate::store::Store::mark_delivery_failed`].
    fn mark_delivery_failed(&mut self, id: &str, next_ms: Millis, error: &str) -> Result<()>;

    /// See [`crate::store::Store::deliveries`].
    fn deliveries(&mut self, request_id: &str) -> Result<Vec<Delivery>>;

    /// See [`crate::store::Store::delivery_counts`].
    fn delivery_counts(&mut self) -> Result<Vec<DeliveryCounts>>;

    /// See [`crate::store::Store::outbox_pending`] (a driver's origin filter applies).
    fn outbox_pending(&mut self, after: i64, limit: usize) -> Result<Vec<(i64, Outcome)>>;

    /// See [`crate::store::Store::mark_outbox_written`].
    fn mark_outbox_written(&mut self, keys: &[i64]) -> Result<()>;

    /// See [`crate::store::Store::view_now`].
    fn view_now(&mut self) -> Result<()>;

    /// The accepted request `id`.
    fn get(&mut self, id: &str) -> Result<Option<RequestRow>>;

    /// The request `id`, or else its newest rejection.
    fn get_any(&mut self, id: &str) -> Result<Option<RequestRow>>;

    /// Requests by filter.
    fn list(&mut self, filter: &ListFilter) -> Result<Vec<RequestRow>>;

    /// The events of one request.
    fn events(&mut self, request_id: &str) -> Result<Vec<Event>>;

    /// `audit verify` in a snapshot of the driver's own ([`crate::store::queue::audit`]
    /// decides; the driver opens the snapshot and knows its storage check).
    fn verify(&mut self, anchors: &[(PathBuf, Anchor)]) -> Result<Verified>;

    /// Every record in one snapshot.
    fn export(&mut self, sink: ExportSink<'_>) -> Result<()>;

    /// Load a copy into an empty store; refused by a driver that cannot.
    fn import(&mut self, records: &mut dyn Iterator<Item = Result<Record>>) -> Result<u64> {
        let _ = records;
        Err(crate::Error::Invalid(
            "this store cannot load a copy; copy into a PostgreSQL store".into(),
        ))
    }

    /// How this host hears other hosts' commits, when the database can tell.
    fn wakeups(&mut self, feed: bool) -> Result<Option<Box<dyn Wakeups>>> {
        let _ = feed;
        Ok(None)
    }
}

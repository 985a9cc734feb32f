//! What a driver offers besides its statements: its transactions, its clock, and the
//! operations that are its database's own.
//!
//! [`crate::store::queue::Queue`] runs each use-case's rule inside a transaction this
//! trait opens. So the composition of the queue (which rule runs in which kind of
//! transaction, with which time) is written once, and a backend says only how to open a
//! write ([`Write`]), a read and a snapshot, whose clock it reads, and what its database
//! does that no rule decides: a view at now, export, a copy's import, and how another
//! host's commit is heard.
//!
//! Writes hand the rule `&mut dyn Statements`, and reads `&mut dyn Reads` (a rule is
//! compiled once, not per driver); a rule that takes only `&mut dyn TokenReads` gets it
//! by an upcast.

use std::path::PathBuf;

use super::{
    AgentReads, AnswerReads, AuditReads, DelegationReads, DeliveryReads, EventReads, FeedReads,
    HistoryReads, LeaseReads, LinkReads, OutboxReads, PushReads, RequestReads, SignInReads,
    SlackReads, Statements, SweepReads, TelegramReads, TokenReads,
};
use crate::clock::Millis;
use crate::error::Result;
use crate::store::calls::{ExportSink, Record, Wakeups};

/// Every statement a rule may make outside a write: what a driver's read type implements.
/// All are reads but the deliveries' marks ([`DeliveryReads`]), which change nothing of
/// the record.
pub trait Reads:
    LeaseReads
    + AgentReads
    + AnswerReads
    + AuditReads
    + DeliveryReads
    + EventReads
    + FeedReads
    + HistoryReads
    + LinkReads
    + OutboxReads
    + PushReads
    + RequestReads
    + SignInReads
    + SlackReads
    + TelegramReads
    + SweepReads
    + TokenReads
    + DelegationReads
{
}

impl<T> Reads for T where
    T: LeaseReads
        + AgentReads
        + AnswerReads
        + AuditReads
        + DeliveryReads
        + EventReads
        + FeedReads
        + HistoryReads
        + LinkReads
        + OutboxReads
        + PushReads
        + RequestReads
        + SignInReads
        + SlackReads
        + TelegramReads
        + SweepReads
        + TokenReads
        + DelegationReads
        + ?Sized
{
}

/// The kinds of write transaction a rule runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Write {
    /// What fell due at the write's time is swept first, then the rule: a use-case's
    /// write, which must never act on an expired lease or a passed deadline.
    Swept,
    /// The rule alone, without the sweep: bookkeeping that must not wait on, or decide,
    /// what fell due (freeing outcome files, recording a posted message, the sweep
    /// itself, the operator's settings at a daemon's start).
    Plain,
    /// Like [`Write::Plain`], for bookkeeping whose loss to a power cut is harmless
    /// because it is made again (marking outcome files written: a lost mark only writes
    /// the same files once more). A driver may commit it without its own flush (SQLite
    /// does, with `synchronous=NORMAL` for this one commit).
    Unsynced,
    /// Like [`Write::Swept`], with no other write beside it (prune): on SQLite every write
    /// already runs alone; on PostgreSQL it takes the write lock exclusive and lifts the
    /// statement timeout.
    Alone,
}

/// A backend: how it opens its transactions, whose clock it judges by, and what its
/// database does on its own. One per connection; synchronous and `Send`, like the store.
pub trait Driver: Send {
    /// One write transaction of `kind`: the driver takes its write lock, reads the time
    /// from its clock after that (sweeping what fell due at that time, for
    /// [`Write::Swept`] and [`Write::Alone`]), runs `f` at that time, and commits on `Ok`
    /// (publishing the chain head the write appended); on `Err` it rolls `f` back.
    fn write<T>(
        &mut self,
        kind: Write,
        f: impl FnOnce(&mut dyn Statements, Millis) -> Result<T>,
    ) -> Result<T>;

    /// One read (on the connection, or in the view [`Driver::view_now`] opened). `f` may
    /// run twice when the first attempt lost its connection (reads are idempotent, and
    /// so are the deliveries' marks), hence `Fn`.
    fn read<T>(&mut self, f: impl Fn(&mut dyn Reads) -> Result<T>) -> Result<T>;

    /// One read in a snapshot of its own, consistent however long it takes while others
    /// write (SQLite's read transaction, PostgreSQL's `REPEATABLE READ READ ONLY`); an
    /// open view ends first. `Fn` as [`Driver::read`].
    fn snapshot<T>(&mut self, f: impl Fn(&mut dyn Reads) -> Result<T>) -> Result<T>;

    /// The time a read judges liveness by (the store's clock: the database's, for a
    /// shared store).
    fn now(&mut self) -> Result<Millis>;

    /// The root whose requests this store's outbox writes ([`OutboxReads`]); `None` for
    /// every row (a store with one root, or a tool's).
    fn origin(&self) -> Option<&str>;

    /// The directory of this host's `audit.key` and `audit.head`, if it has one.
    fn key_dir(&self) -> Option<PathBuf>;

    // ---- the database's own operations -------------------------------------------------

    /// Present the store as it is now to the reads that follow, without making anything
    /// durable: see [`crate::store::Store::view_now`].
    fn view_now(&mut self) -> Result<()>;

    /// Every record in one snapshot: the tables' SQL and each database's value types.
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

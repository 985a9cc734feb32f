//! This driver's statements ([`crate::store::driver`]): [`Sql`] on a write transaction,
//! [`SqlRead`] on a connection for the rules that also run outside a write.
//!
//! Each concern's file implements its traits on them beside its SQL; the reads a write
//! makes are [`SqlRead`]'s on the write's transaction
//! ([`crate::store::driver::ReadsInside`]).
//!
//! [`Sql`] is also the write's context: one per `BEGIN IMMEDIATE` transaction, made by the
//! write helpers of [`super::conn`] and handed to the rule, it carries the chain's head as
//! the transaction's appends left it, so each append chains from the one before without
//! reading the log again, and the commit publishes it to `audit.head`. Only
//! [`super::conn`] can make one, so no second context of the same transaction can chain
//! from a stale head.

use std::ops::Deref;

use rusqlite::{Connection, Transaction};

use super::events;
use crate::clock::Millis;
use crate::error::Result;
use crate::store::chain::{ChainHead, NewEvent};
use crate::store::driver::{EventStatements, ReadsInside};

/// The statements of this driver inside one `BEGIN IMMEDIATE` transaction, and the chain
/// head its appends staged.
pub struct Sql<'a, 'c>(pub &'a Transaction<'c>, Option<ChainHead>);

/// The read statements of this driver on a connection (a read, or inside a write).
pub struct SqlRead<'a>(pub &'a Connection);

impl<'a, 'c> Sql<'a, 'c> {
    /// The context of the write transaction `tx`, which has appended nothing yet.
    pub(super) fn begin(tx: &'a Transaction<'c>) -> Sql<'a, 'c> {
        Sql(tx, None)
    }

    /// The head this write's appends left, to publish once it commits.
    pub(super) fn into_head(self) -> Option<ChainHead> {
        self.1
    }

    /// The read statements on this transaction's connection.
    pub fn read(&self) -> SqlRead<'_> {
        SqlRead(self.0)
    }

    /// After a rollback to a savepoint: the events appended since are gone, so the head is
    /// read again from the log.
    pub fn savepoint_rolled_back(&mut self) -> Result<()> {
        events::savepoint_rolled_back(self.0, &mut self.1)
    }
}

impl ReadsInside for Sql<'_, '_> {
    type Reads<'r>
        = SqlRead<'r>
    where
        Self: 'r;

    fn reads(&mut self) -> Result<SqlRead<'_>> {
        Ok(self.read())
    }

    // One writer, nothing held: every read sees the transaction as it is.
    fn reads_beside_held(&mut self) -> SqlRead<'_> {
        self.read()
    }
}

impl<'c> Deref for Sql<'_, 'c> {
    type Target = Transaction<'c>;

    fn deref(&self) -> &Transaction<'c> {
        self.0
    }
}

impl EventStatements for Sql<'_, '_> {
    fn append_event(&mut self, now: Millis, event: NewEvent<'_>) -> Result<()> {
        events::append(self.0, &mut self.1, now, event).map(drop)
    }

    fn append_event_now(&mut self, now: Millis, event: NewEvent<'_>) -> Result<i64> {
        events::append(self.0, &mut self.1, now, event)
    }
}

impl crate::store::driver::EventReads for SqlRead<'_> {
    fn events_of_request(&mut self, request_id: &str) -> Result<Vec<crate::store::types::Event>> {
        events::for_request(self.0, request_id)
    }
}

//! This driver's statements ([`crate::store::driver`]): [`Sql`] on a write transaction,
//! [`SqlRead`] on a connection for the rules that also run outside a write.
//!
//! Each concern's file implements its traits on them beside its SQL; a read trait is
//! implemented on both (the write's through the read's).

use rusqlite::{Connection, Transaction};

use super::events;
use crate::clock::Millis;
use crate::error::Result;
use crate::store::chain::NewEvent;
use crate::store::driver::EventStatements;

/// The statements of this driver inside one `BEGIN IMMEDIATE` transaction.
pub struct Sql<'a, 'c>(pub &'a Transaction<'c>);

/// The read statements of this driver on a connection (a read, or inside a write).
pub struct SqlRead<'a>(pub &'a Connection);

impl<'c> Sql<'_, 'c> {
    /// The read statements on this transaction's connection.
    pub fn read(&self) -> SqlRead<'_> {
        SqlRead(self.0)
    }
}

impl EventStatements for Sql<'_, '_> {
    fn append_event(&mut self, now: Millis, event: NewEvent<'_>) -> Result<()> {
        events::append(self.0, now, event).map(drop)
    }

    fn append_event_now(&mut self, now: Millis, event: NewEvent<'_>) -> Result<i64> {
        events::append(self.0, now, event)
    }
}

//! The chain's statements: appending an event to the keyed, hash-chained log.
//!
//! See [`super`] for what a statement is and is not.

use crate::clock::Millis;
use crate::error::Result;
use crate::store::chain::NewEvent;

/// Appending to the event log.
pub trait EventStatements {
    /// Append `event` at `now`, chained to the log's head; its seq.
    fn append_event(&mut self, now: Millis, event: NewEvent<'_>) -> Result<i64>;
}

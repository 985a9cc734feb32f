//! The chain's statements: appending an event to the keyed, hash-chained log, and reading
//! one request's events back.
//!
//! See [`super`] for what a statement is and is not.

use crate::clock::Millis;
use crate::error::Result;
use crate::store::chain::NewEvent;
use crate::store::types::Event;

/// Appending to the event log.
pub trait EventStatements {
    /// Append `event` at `now`, chained to the log's head by the time the write commits.
    ///
    /// A driver may chain it at once (SQLite: the transaction holds the one write lock)
    /// or stage it and chain every staged event at the end of the write, under a lock
    /// held only for that (PostgreSQL): a rule never reads its own events back, and never
    /// needs an event's seq.
    fn append_event(&mut self, now: Millis, event: NewEvent<'_>) -> Result<()>;

    /// Append `event` at `now` and chain it now, with whatever is staged before it; its
    /// seq. Only for a rule that records the seq and holds the store exclusively (prune's
    /// checkpoint).
    fn append_event_now(&mut self, now: Millis, event: NewEvent<'_>) -> Result<i64>;
}

/// The log's read of one request, outside a write (`dshq events`).
pub trait EventReads {
    /// The events of request `request_id`, oldest first.
    fn events_of_request(&mut self, request_id: &str) -> Result<Vec<Event>>;
}

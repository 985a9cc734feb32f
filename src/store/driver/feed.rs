//! The statements of one concern. Feeds: the event log read from a position on, each event
//! with its request as it is now, and the open queue.
//!
//! Positions are event positions (`events.seq`): a driver numbers events in commit order
//! (SQLite's one writer; PostgreSQL's chain lock, held to the commit), so everything at or
//! below a position read is final, and a reader that keeps the newest position it saw
//! misses nothing. Request row numbers are not in commit order once writers run side by
//! side, so no feed pages by them.
//!
//! See [`super`] for what a statement is and is not.

use crate::core::lifecycle::RequestRow;
use crate::error::Result;
use crate::store::types::{Event, ListFilter};

/// The reads the feeds need, on a read connection or inside a write.
pub trait FeedReads {
    /// The newest event position (0 for an empty log).
    fn events_head(&mut self) -> Result<i64>;

    /// The position `limit` events after `after`, or the newest when fewer follow.
    fn events_upto(&mut self, after: i64, limit: usize) -> Result<i64>;

    /// The events in `(after, upto]`, oldest first.
    fn events_between(&mut self, after: i64, upto: i64) -> Result<Vec<Event>>;

    /// The accepted requests that the events in `(after, upto]` of `kinds` (stored names)
    /// are about, as `(event position, request as it is now)`, oldest event first,
    /// matching `filter`'s request filters (contexts, agent, intent, text, source).
    fn event_requests(
        &mut self,
        after: i64,
        upto: i64,
        kinds: &[&str],
        filter: &ListFilter,
    ) -> Result<Vec<(i64, RequestRow)>>;

    /// The open requests (pending or claimed) of `context` (every context for `None`),
    /// oldest first.
    fn open_requests(&mut self, context: Option<&str>) -> Result<Vec<RequestRow>>;

    /// The open requests among `ids`, in the order given (every open request, oldest
    /// first, for `None`), by id.
    fn open_ids(&mut self, ids: Option<&[&str]>) -> Result<Vec<String>>;
}

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

/// Implements [`FeedReads`] for a driver's read type by the driver's functions of the
/// same names (`EVENTS::{head, upto, range}` and `FEED::{event_requests,
/// open_requests, open_ids}`), each given the read's connection (`self.0`) first: the
/// mapping of these statements to their SQL is written once, here, not once per driver.
///
/// `feed_reads_by!([GENERICS] TYPE, EVENTS, FEED)`, e.g.
/// `feed_reads_by!([C: GenericClient] PgRead<'_, C>, events, super::feed)`.
macro_rules! feed_reads_by {
    ([$($generics:tt)*] $ty:ty, $($events:ident)::+, $($reads:ident)::+) => {
        impl<$($generics)*> $crate::store::driver::feed::FeedReads for $ty {
            fn events_head(&mut self) -> $crate::error::Result<i64> {
                $($events)::+::head(self.0)
            }

            fn events_upto(&mut self, after: i64, limit: usize) -> $crate::error::Result<i64> {
                $($events)::+::upto(self.0, after, limit)
            }

            fn events_between(
                &mut self,
                after: i64,
                upto: i64,
            ) -> $crate::error::Result<Vec<$crate::store::types::Event>> {
                $($events)::+::range(self.0, after, upto)
            }

            fn event_requests(
                &mut self,
                after: i64,
                upto: i64,
                kinds: &[&str],
                filter: &$crate::store::types::ListFilter,
            ) -> $crate::error::Result<Vec<(i64, $crate::core::lifecycle::RequestRow)>> {
                $($reads)::+::event_requests(self.0, after, upto, kinds, filter)
            }

            fn open_requests(
                &mut self,
                context: Option<&str>,
            ) -> $crate::error::Result<Vec<$crate::core::lifecycle::RequestRow>> {
                $($reads)::+::open_requests(self.0, context)
            }

            fn open_ids(&mut self, ids: Option<&[&str]>) -> $crate::error::Result<Vec<String>> {
                $($reads)::+::open_ids(self.0, ids)
            }
        }
    };
}
pub(crate) use feed_reads_by;

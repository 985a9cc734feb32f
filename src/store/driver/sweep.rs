//! The statements of one concern. The sweep: when something next falls due (a lease
//! expiry, a deadline, a ladder's next rung, an agent ttl), and the open requests whose
//! deadline passed.
//!
//! See [`super`] for what a statement is and is not; the rule is
//! [`crate::store::queue::sweep`].

use crate::clock::Millis;
use crate::core::lifecycle::RequestRow;
use crate::error::Result;

/// The sweep's read, outside a write: the daemon sleeps until then, and a write sweeps
/// only when something is due.
pub trait SweepReads {
    /// The earliest time something falls due, if anything will.
    fn next_due(&mut self) -> Result<Option<Millis>>;
}

/// The statements the sweep's rule needs from a write transaction.
pub trait SweepStatements {
    /// The open (`pending` or `claimed`) requests whose deadline is before `now`.
    fn open_requests_past_deadline(&mut self, now: Millis) -> Result<Vec<RequestRow>>;
}

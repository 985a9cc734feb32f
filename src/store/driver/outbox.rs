//! The statements of one concern. The outbox of outcome files: which final requests still
//! need their file, and marking it written.
//!
//! See [`super`] for what a statement is and is not; the rule is
//! [`crate::store::queue::outbox`].

use crate::error::Result;
use crate::protocol::types::Outcome;

/// The outbox's read, outside a write.
pub trait OutboxReads {
    /// Final requests whose outcome file is not written yet, oldest first, after the row
    /// `after` (a cursor, so outcomes that failed to be written do not hide the ones after
    /// them), at most `limit`, each with its row to mark. Only the rows `origin` asked when
    /// it is given and the store records origins (PostgreSQL: many roots share one store;
    /// a SQLite store has one root, and every row is its own).
    fn outbox_pending(
        &mut self,
        origin: Option<&str>,
        after: i64,
        limit: usize,
    ) -> Result<Vec<(i64, Outcome)>>;
}

/// The statements the outbox's rule needs from a write transaction.
pub trait OutboxStatements {
    /// Clear the outbox flag of the rows at `seqs` that have it.
    fn unset_outbox_pending_of_seqs(&mut self, seqs: &[i64]) -> Result<()>;
}

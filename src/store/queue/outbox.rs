//! The outbox of outcome files, over [`crate::store::driver::outbox`]: which final
//! requests still need their file, marking it written, and the stale files of open
//! requests (an error outcome left by a rejection whose id was then accepted).

use crate::error::Result;
use crate::protocol::Outcome;
use crate::store::driver::{FeedReads, OutboxReads, Statements};

/// The final requests of `origin` whose outcome file is not written yet, after the row
/// `after`, at most `limit` ([`OutboxReads::outbox_pending`]).
pub fn pending(
    db: &mut dyn OutboxReads,
    origin: Option<&str>,
    after: i64,
    limit: usize,
) -> Result<Vec<(i64, Outcome)>> {
    db.outbox_pending(origin, after, limit)
}

/// Mark outcome files as written (by the rows [`pending`] returned).
pub fn mark_written(db: &mut dyn Statements, seqs: &[i64]) -> Result<()> {
    db.unset_outbox_pending_of_seqs(seqs)
}

/// Call `remove` with the open requests among `ids` (every open request for `None`):
/// their outcome files, if any, are stale. Run inside a write, so no answer commits
/// between the check and the removal.
pub fn while_open(
    db: &mut (impl FeedReads + ?Sized),
    ids: Option<&[&str]>,
    remove: &mut dyn FnMut(&[String]) -> Result<usize>,
) -> Result<usize> {
    let open = db.open_ids(ids)?;
    remove(&open)
}

//! Deadlines: open requests whose deadline passed are aborted by the sweep
//! ([`crate::store::queue::requests::abort_overdue`]); the statements it needs here.

use super::row::{rows, COLUMNS, FROM};
use crate::clock::Millis;
use crate::core::lifecycle::RequestRow;
use crate::error::Result;
use crate::store::postgres::tx::Tx;
use crate::store::queue;

/// Abort every open request whose deadline has passed at `now`.
pub fn abort_overdue(t: &mut Tx<'_>, now: Millis) -> Result<Vec<String>> {
    queue::requests::abort_overdue(t, now)
}

/// The open requests whose deadline is before `now`, oldest first.
pub(super) fn open_past_deadline(t: &mut Tx<'_>, now: Millis) -> Result<Vec<RequestRow>> {
    rows(&t.tx.query(
        &format!(
            "SELECT {COLUMNS} FROM {FROM}
             WHERE r.status IN ('pending', 'claimed') AND r.deadline_ms IS NOT NULL
               AND r.deadline_ms < $1
             ORDER BY r.seq"
        ),
        &[&now],
    )?)
}

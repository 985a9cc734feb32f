//! Deadlines: open requests whose deadline passed are aborted by the sweep
//! ([`crate::store::queue::requests::abort_overdue`]); the statements it needs here.

use rusqlite::Transaction;

use super::row::{row, COLUMNS, FROM};
use crate::clock::Millis;
use crate::core::lifecycle::RequestRow;
use crate::error::Result;
use crate::store::queue;
use crate::store::sqlite::sql::Sql;

/// Abort every open request whose deadline has passed at `now`.
pub fn abort_overdue(tx: &mut Sql<'_, '_>, now: Millis) -> Result<Vec<String>> {
    queue::requests::abort_overdue(tx, now)
}

/// The open requests whose deadline is before `now`.
pub(super) fn open_past_deadline(tx: &Transaction, now: Millis) -> Result<Vec<RequestRow>> {
    let mut stmt = tx.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM {FROM}
         WHERE r.seq IN (SELECT seq FROM requests INDEXED BY requests_deadline
                         WHERE status IN ('pending', 'claimed') AND deadline_ms IS NOT NULL AND deadline_ms < ?1)"
    ))?;
    let rows = stmt.query_map([now], row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

//! Deadlines: open requests whose deadline passed are aborted by the sweep.

use rusqlite::Transaction;

use super::provide::finish_error;
use super::row::{row, COLUMNS, FROM};
use crate::clock::{rfc3339, Millis};
use crate::core::audit::Actor;
use crate::core::lifecycle::{RequestRow, Status};
use crate::error::Result;
use crate::protocol::error::Code;

/// Abort every open request whose deadline has passed at `now`.
pub fn abort_overdue(tx: &Transaction, now: Millis) -> Result<Vec<String>> {
    let due: Vec<RequestRow> = {
        let mut stmt = tx.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM {FROM}
             WHERE r.seq IN (SELECT seq FROM requests INDEXED BY requests_deadline
                             WHERE status IN ('pending', 'claimed') AND deadline_ms IS NOT NULL AND deadline_ms < ?1)"
        ))?;
        let rows = stmt.query_map([now], row)?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    let mut ids = Vec::with_capacity(due.len());
    for r in due {
        let deadline = r.deadline_ms.map(rfc3339).unwrap_or_default();
        finish_error(
            tx,
            &r,
            Status::Aborted,
            Code::AskAborted,
            &format!("the deadline {deadline} passed before an answer"),
            None,
            None,
            &Actor::Daemon,
            now,
        )?;
        ids.extend(r.id);
    }
    Ok(ids)
}

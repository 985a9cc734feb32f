//! Deadlines: open requests whose deadline passed are aborted by the sweep.

use super::provide::finish_error;
use super::row::{rows, COLUMNS, FROM};
use crate::clock::{rfc3339, Millis};
use crate::core::audit::Actor;
use crate::core::lifecycle::Status;
use crate::error::Result;
use crate::protocol::error::Code;
use crate::store::postgres::tx::Tx;

/// Abort every open request whose deadline has passed at `now`.
pub fn abort_overdue(t: &mut Tx<'_>, now: Millis) -> Result<Vec<String>> {
    let due = rows(&t.tx.query(
        &format!(
            "SELECT {COLUMNS} FROM {FROM}
             WHERE r.status IN ('pending', 'claimed') AND r.deadline_ms IS NOT NULL
               AND r.deadline_ms < $1
             ORDER BY r.seq"
        ),
        &[&now],
    )?)?;
    let mut ids = Vec::with_capacity(due.len());
    for r in due {
        let deadline = r.deadline_ms.map(rfc3339).unwrap_or_default();
        finish_error(
            t,
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

//! Deadlines: open requests whose deadline passed are aborted by the sweep
//! ([`crate::store::queue::requests::abort_overdue`]); the statements it needs here.

use postgres::types::Type;

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

/// The sweep's abort of one open request (no provider, the claim kept as it is).
pub(super) fn set_aborted_if_open(
    t: &mut Tx<'_>,
    seq: i64,
    now: Millis,
    code: &str,
    message: &str,
) -> Result<u64> {
    Ok(t.tx.execute_typed(
        "UPDATE requests SET status = 'aborted', finished_ms = $1, error_code = $2, error_message = $3,
                provider = NULL, outbox_pending = TRUE
         WHERE seq = $4 AND status IN ('pending', 'claimed')",
        &[
            (&now, Type::INT8),
            (&code, Type::TEXT),
            (&message, Type::TEXT),
            (&seq, Type::INT8),
        ],
    )?)
}

//! The sweep's statements on this driver: when something next falls due (so the daemon
//! sleeps exactly until then), and the open requests whose deadline passed, which the
//! sweep aborts ([`crate::store::queue::sweep`]).

use rusqlite::Connection;
use rusqlite::Transaction;

use super::requests::{row, COLUMNS, FROM};
use crate::clock::Millis;
use crate::core::lifecycle::RequestRow;
use crate::error::Result;
use crate::store::driver::{SweepReads, SweepStatements};
use crate::store::sqlite::tx::{Sql, SqlRead};

/// The earliest future time something falls due (a lease expiry, a deadline, a ladder's
/// next rung, an agent ttl), so the daemon can sleep exactly until then.
pub fn next_due(conn: &Connection) -> Result<Option<Millis>> {
    Ok(conn.prepare_cached(
        "SELECT MIN(t) FROM (
             SELECT MIN(expires_ms) AS t FROM leases WHERE ended_ms IS NULL
             UNION ALL SELECT MIN(deadline_ms) FROM requests INDEXED BY requests_deadline WHERE status IN ('pending', 'claimed') AND deadline_ms IS NOT NULL
             UNION ALL SELECT MIN(ladder_due_ms) FROM requests INDEXED BY requests_ladder_due WHERE status IN ('pending', 'claimed') AND ladder_due_ms IS NOT NULL
             UNION ALL SELECT MIN(expires_ms) FROM agents WHERE ended_ms IS NULL AND expires_ms IS NOT NULL
             UNION ALL SELECT MIN(until_ms) FROM delegations)",
    )?
    .query_row([], |r| r.get(0))?)
}

/// The open requests whose deadline is before `now`.
pub(in crate::store::sqlite) fn open_past_deadline(
    tx: &Transaction,
    now: Millis,
) -> Result<Vec<RequestRow>> {
    let mut stmt = tx.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM {FROM}
         WHERE r.seq IN (SELECT seq FROM requests INDEXED BY requests_deadline
                         WHERE status IN ('pending', 'claimed') AND deadline_ms IS NOT NULL AND deadline_ms < ?1)"
    ))?;
    let rows = stmt.query_map([now], row)?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

impl SweepReads for SqlRead<'_> {
    fn next_due(&mut self) -> Result<Option<Millis>> {
        next_due(self.0)
    }
}

impl SweepStatements for Sql<'_, '_> {
    fn open_requests_past_deadline(&mut self, now: Millis) -> Result<Vec<RequestRow>> {
        open_past_deadline(self.0, now)
    }
}

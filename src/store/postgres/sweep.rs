//! The sweep's statements on this driver: when something next falls due (so the daemon
//! sleeps exactly until then), and the open requests whose deadline passed, which the
//! sweep aborts ([`crate::store::queue::sweep`]).

use postgres::GenericClient;

use super::requests::{rows, COLUMNS, FROM};
use crate::clock::Millis;
use crate::core::lifecycle::RequestRow;
use crate::error::Result;
use crate::store::driver::{SweepReads, SweepStatements};
use crate::store::postgres::tx::{PgRead, Tx};

/// The earliest time something falls due (a lease expiry, a deadline, a ladder's next
/// rung, an agent ttl), as one SQL expression (a write's opening statement embeds it).
pub const NEXT_DUE: &str = "LEAST(
                 (SELECT MIN(expires_ms) FROM leases WHERE ended_ms IS NULL),
                 (SELECT MIN(deadline_ms) FROM requests
                   WHERE status IN ('pending', 'claimed') AND deadline_ms IS NOT NULL),
                 (SELECT MIN(ladder_due_ms) FROM requests
                   WHERE status IN ('pending', 'claimed') AND ladder_due_ms IS NOT NULL),
                 (SELECT MIN(expires_ms) FROM agents
                   WHERE ended_ms IS NULL AND expires_ms IS NOT NULL),
                 (SELECT MIN(until_ms) FROM delegations))";

/// The earliest time something falls due ([`NEXT_DUE`]).
pub fn next_due(c: &mut impl GenericClient) -> Result<Option<Millis>> {
    Ok(c.query_typed_one(&format!("SELECT {NEXT_DUE}"), &[])?
        .try_get(0)?)
}

/// The open requests whose deadline is before `now`, oldest first.
pub(in crate::store::postgres) fn open_past_deadline(
    t: &mut Tx<'_>,
    now: Millis,
) -> Result<Vec<RequestRow>> {
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

impl<C: GenericClient> SweepReads for PgRead<'_, C> {
    fn next_due(&mut self) -> Result<Option<Millis>> {
        next_due(self.0)
    }
}

impl SweepStatements for Tx<'_> {
    fn open_requests_past_deadline(&mut self, now: Millis) -> Result<Vec<RequestRow>> {
        open_past_deadline(self, now)
    }
}

//! When something next falls due, so the daemon sleeps exactly until then.

use rusqlite::Connection;

use crate::clock::Millis;
use crate::error::Result;

/// The earliest future time something falls due (a lease expiry, a deadline, a ladder's
/// next rung, an agent ttl), so the daemon can sleep exactly until then.
pub fn next_due(conn: &Connection) -> Result<Option<Millis>> {
    Ok(conn.prepare_cached(
        "SELECT MIN(t) FROM (
             SELECT MIN(expires_ms) AS t FROM leases WHERE ended_ms IS NULL
             UNION ALL SELECT MIN(deadline_ms) FROM requests INDEXED BY requests_deadline WHERE status IN ('pending', 'claimed') AND deadline_ms IS NOT NULL
             UNION ALL SELECT MIN(ladder_due_ms) FROM requests INDEXED BY requests_ladder_due WHERE status IN ('pending', 'claimed') AND ladder_due_ms IS NOT NULL
             UNION ALL SELECT MIN(expires_ms) FROM agents WHERE ended_ms IS NULL AND expires_ms IS NOT NULL)",
    )?
    .query_row([], |r| r.get(0))?)
}

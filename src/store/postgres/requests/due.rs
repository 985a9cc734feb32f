//! When something next falls due, so the daemon sleeps exactly until then.

use postgres::GenericClient;

use crate::clock::Millis;
use crate::error::Result;

/// The earliest time something falls due (a lease expiry, a deadline, a ladder's next
/// rung, an agent ttl), as one SQL expression (a write's opening statement embeds it).
pub const NEXT_DUE: &str = "LEAST(
                 (SELECT MIN(expires_ms) FROM leases WHERE ended_ms IS NULL),
                 (SELECT MIN(deadline_ms) FROM requests
                   WHERE status IN ('pending', 'claimed') AND deadline_ms IS NOT NULL),
                 (SELECT MIN(ladder_due_ms) FROM requests
                   WHERE status IN ('pending', 'claimed') AND ladder_due_ms IS NOT NULL),
                 (SELECT MIN(expires_ms) FROM agents
                   WHERE ended_ms IS NULL AND expires_ms IS NOT NULL))";

/// The earliest time something falls due ([`NEXT_DUE`]).
pub fn next_due(c: &mut impl GenericClient) -> Result<Option<Millis>> {
    Ok(c.query_typed_one(&format!("SELECT {NEXT_DUE}"), &[])?
        .try_get(0)?)
}

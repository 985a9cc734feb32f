//! The outbox of outcome files on PostgreSQL ([`crate::store::driver::outbox`]): which
//! final requests still need their file, and whose; and marking it written.
//!
//! Every host's daemon writes the outcome files of its own root only: a store opened with
//! an origin sees only the requests that origin asked (`requests.origin`); a store opened
//! without one (tools) sees every row.

use postgres::GenericClient;

use super::requests::{rows, COLUMNS, FROM};
use crate::error::Result;
use crate::protocol::types::Outcome;
use crate::store::driver::{OutboxReads, OutboxStatements};
use crate::store::postgres::tx::{PgRead, Tx};

/// Final requests of `origin` (every origin for `None`) whose outcome file is not written
/// yet, oldest first, after `after_seq` (a cursor).
pub fn outbox_pending(
    c: &mut impl GenericClient,
    origin: Option<&str>,
    after_seq: i64,
    limit: i64,
) -> Result<Vec<(i64, Outcome)>> {
    let found = rows(&c.query(
        &format!(
            "SELECT {COLUMNS} FROM {FROM} WHERE r.outbox_pending AND r.seq > $1
               AND ($3::text IS NULL OR r.origin = $3)
               AND NOT (r.status = 'rejected' AND EXISTS (
                        SELECT 1 FROM requests o WHERE o.id = r.id AND o.status <> 'rejected'))
             ORDER BY r.seq LIMIT $2"
        ),
        &[&after_seq, &limit, &origin],
    )?)?;
    Ok(found
        .into_iter()
        .filter_map(|r| r.outcome().map(|o| (r.seq, o)))
        .collect())
}

/// Clear the outbox flag of the rows at `seqs`.
fn unset_outbox_pending(t: &mut Tx<'_>, seqs: &[i64]) -> Result<()> {
    t.tx.execute(
        "UPDATE requests SET outbox_pending = FALSE WHERE seq = ANY($1) AND outbox_pending",
        &[&seqs],
    )?;
    Ok(())
}

impl<C: GenericClient> OutboxReads for PgRead<'_, C> {
    fn outbox_pending(
        &mut self,
        origin: Option<&str>,
        after: i64,
        limit: usize,
    ) -> Result<Vec<(i64, Outcome)>> {
        outbox_pending(
            self.0,
            origin,
            after,
            i64::try_from(limit).unwrap_or(i64::MAX),
        )
    }
}

impl OutboxStatements for Tx<'_> {
    fn unset_outbox_pending_of_seqs(&mut self, seqs: &[i64]) -> Result<()> {
        unset_outbox_pending(self, seqs)
    }
}

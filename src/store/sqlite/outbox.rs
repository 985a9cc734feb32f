//! Outbox bookkeeping: which final requests still need their outcome file.

use rusqlite::{Connection, Transaction};

use crate::store::sqlite::sql::Sql;

use super::requests::{row, COLUMNS, FROM};
use crate::error::Result;
use crate::protocol::types::Outcome;

/// Final requests whose outcome file is not written yet, oldest first, after `after_seq`
/// (a cursor, so outcomes that failed to be written do not hide the ones after them).
pub fn outbox_pending(
    conn: &Connection,
    after_seq: i64,
    limit: i64,
) -> Result<Vec<(i64, Outcome)>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM {FROM} WHERE r.outbox_pending = 1 AND r.seq > ?1
           AND NOT (r.status = 'rejected' AND EXISTS (
                    SELECT 1 FROM requests o WHERE o.id = r.id AND o.status <> 'rejected'))
         ORDER BY r.seq LIMIT ?2"
    ))?;
    let rows = stmt.query_map([after_seq, limit], row)?;
    let mut out = Vec::new();
    for r in rows {
        let r = r?;
        if let Some(o) = r.outcome() {
            out.push((r.seq, o));
        }
    }
    Ok(out)
}

/// Mark outcome files as written ([`crate::store::queue::requests::mark_outbox_written`]).
pub fn mark_outbox_written(tx: &mut Sql<'_, '_>, seqs: &[i64]) -> Result<()> {
    crate::store::queue::requests::mark_outbox_written(tx, seqs)
}

/// Clear the outbox flag of the rows at `seqs`.
pub(in crate::store::sqlite) fn unset_outbox_pending(tx: &Transaction, seqs: &[i64]) -> Result<()> {
    let mut stmt = tx.prepare_cached(
        "UPDATE requests SET outbox_pending = 0 WHERE seq = ?1 AND outbox_pending = 1",
    )?;
    for s in seqs {
        stmt.execute([s])?;
    }
    Ok(())
}

//! The outbox of outcome files on SQLite ([`crate::store::driver::outbox`]): which final
//! requests still need their file (every row: a SQLite store has one root), and marking it
//! written.

use rusqlite::{Connection, Transaction};

use crate::store::driver::{OutboxReads, OutboxStatements};
use crate::store::sqlite::tx::{Sql, SqlRead};

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

/// Clear the outbox flag of the rows at `seqs`.
fn unset_outbox_pending(tx: &Transaction, seqs: &[i64]) -> Result<()> {
    let mut stmt = tx.prepare_cached(
        "UPDATE requests SET outbox_pending = 0 WHERE seq = ?1 AND outbox_pending = 1",
    )?;
    for s in seqs {
        stmt.execute([s])?;
    }
    Ok(())
}

impl OutboxReads for SqlRead<'_> {
    fn outbox_pending(
        &mut self,
        _origin: Option<&str>,
        after: i64,
        limit: usize,
    ) -> Result<Vec<(i64, Outcome)>> {
        outbox_pending(self.0, after, i64::try_from(limit).unwrap_or(i64::MAX))
    }
}

impl OutboxStatements for Sql<'_, '_> {
    fn unset_outbox_pending_of_seqs(&mut self, seqs: &[i64]) -> Result<()> {
        unset_outbox_pending(self.0, seqs)
    }
}

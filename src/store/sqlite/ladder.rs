//! This driver's statements of the deadline ladder
//! ([`crate::store::driver::LadderStatements`]); the rule is
//! [`crate::store::queue::ladder`]. Each update is guarded by the open states.

use rusqlite::{params, OptionalExtension};

use super::requests::{row, COLUMNS, FROM};
use crate::clock::Millis;
use crate::core::lifecycle::RequestRow;
use crate::error::Result;
use crate::store::driver::LadderStatements;
use crate::store::sqlite::tx::Sql;

impl LadderStatements for Sql<'_, '_> {
    fn replace_context_ladders(&mut self, policies: &[(String, String)]) -> Result<()> {
        self.0.execute("DELETE FROM context_ladders", [])?;
        let mut insert = self
            .0
            .prepare_cached("INSERT INTO context_ladders (context, ladder) VALUES (?1, ?2)")?;
        for (c, l) in policies {
            insert.execute(params![c, l])?;
        }
        Ok(())
    }

    fn context_ladder_policy(&mut self, context: &str) -> Result<Option<String>> {
        Ok(self
            .0
            .prepare_cached("SELECT ladder FROM context_ladders WHERE context = ?1")?
            .query_row([context], |r| r.get(0))
            .optional()?)
    }

    fn open_requests_with_rung_due_before(&mut self, now: Millis) -> Result<Vec<RequestRow>> {
        let mut stmt = self.0.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM {FROM}
             WHERE r.seq IN (SELECT seq FROM requests INDEXED BY requests_ladder_due
                             WHERE status IN ('pending', 'claimed') AND ladder_due_ms IS NOT NULL
                               AND ladder_due_ms < ?1)
             ORDER BY r.seq"
        ))?;
        let rows = stmt.query_map([now], row)?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn set_ladder_step_if_open(
        &mut self,
        seq: i64,
        done: i64,
        due_ms: Option<Millis>,
    ) -> Result<bool> {
        let n = self
            .0
            .prepare_cached(
                "UPDATE requests SET ladder_done = ?2, ladder_due_ms = ?3
             WHERE seq = ?1 AND status IN ('pending', 'claimed')",
            )?
            .execute(params![seq, done, due_ms])?;
        Ok(n == 1)
    }

    fn set_context_pending_if_open(&mut self, seq: i64, context: &str) -> Result<bool> {
        let n = self.0.prepare_cached(
            "UPDATE requests SET context = ?2, status = 'pending', claimed_lease = NULL, claimed_ms = NULL
             WHERE seq = ?1 AND status IN ('pending', 'claimed')",
        )?
        .execute(params![seq, context])?;
        Ok(n == 1)
    }

    fn set_answered_by_policy_if_open(
        &mut self,
        seq: i64,
        answer_json: &str,
        decision: Option<&str>,
        now: Millis,
    ) -> Result<bool> {
        let n = self.0.prepare_cached(
            "UPDATE requests SET status = 'answered', finished_ms = ?2, answer = ?3, decision = ?4,
                    provider = NULL, decided_by = 'policy', outbox_pending = 1, ladder_due_ms = NULL
             WHERE seq = ?1 AND status IN ('pending', 'claimed')",
        )?
        .execute(params![seq, now, answer_json, decision])?;
        Ok(n == 1)
    }
}

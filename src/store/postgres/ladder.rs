//! This driver's statements of the deadline ladder
//! ([`crate::store::driver::LadderStatements`]); the rule is
//! [`crate::store::queue::ladder`]. Each update is guarded by the open states.

use postgres::types::Type;

use super::requests::{rows, COLUMNS, FROM};
use crate::clock::Millis;
use crate::core::lifecycle::RequestRow;
use crate::error::Result;
use crate::store::driver::LadderStatements;
use crate::store::postgres::tx::Tx;

impl LadderStatements for Tx<'_> {
    fn replace_context_ladders(&mut self, policies: &[(String, String)]) -> Result<()> {
        self.tx.execute("DELETE FROM context_ladders", &[])?;
        for (ctx, l) in policies {
            self.tx.execute(
                "INSERT INTO context_ladders (context, ladder) VALUES ($1, $2)",
                &[ctx, l],
            )?;
        }
        self.ladder_policies.clear();
        Ok(())
    }

    fn context_ladder_policy(&mut self, context: &str) -> Result<Option<String>> {
        // Once a write per context, beside the held rows (no held row touches the
        // policies): a batch's files would otherwise each cost this round trip and the
        // send of the rows held before it.
        if let Some(policy) = self.ladder_policies.get(context) {
            return Ok(policy.clone());
        }
        let policy = match self.tx.beside_held().query_typed_opt(
            "SELECT ladder FROM context_ladders WHERE context = $1",
            &[(&context, Type::TEXT)],
        )? {
            Some(r) => Some(r.try_get(0)?),
            None => None,
        };
        self.ladder_policies
            .insert(context.to_string(), policy.clone());
        Ok(policy)
    }

    fn open_requests_with_rung_due_before(&mut self, now: Millis) -> Result<Vec<RequestRow>> {
        rows(&self.tx.query(
            &format!(
                "SELECT {COLUMNS} FROM {FROM}
                 WHERE r.status IN ('pending', 'claimed') AND r.ladder_due_ms IS NOT NULL
                   AND r.ladder_due_ms < $1
                 ORDER BY r.seq"
            ),
            &[&now],
        )?)
    }

    fn set_ladder_step_if_open(
        &mut self,
        seq: i64,
        done: i64,
        due_ms: Option<Millis>,
    ) -> Result<bool> {
        let n = self.tx.execute_typed(
            "UPDATE requests SET ladder_done = $2, ladder_due_ms = $3
             WHERE seq = $1 AND status IN ('pending', 'claimed')",
            &[
                (&seq, Type::INT8),
                (&done, Type::INT8),
                (&due_ms, Type::INT8),
            ],
        )?;
        Ok(n == 1)
    }

    fn set_context_pending_if_open(&mut self, seq: i64, context: &str) -> Result<bool> {
        self.forget_id_rows();
        let n = self.tx.execute_typed(
            "UPDATE requests SET context = $2, status = 'pending', claimed_lease = NULL, claimed_ms = NULL
             WHERE seq = $1 AND status IN ('pending', 'claimed')",
            &[(&seq, Type::INT8), (&context, Type::TEXT)],
        )?;
        Ok(n == 1)
    }

    fn set_answered_by_policy_if_open(
        &mut self,
        seq: i64,
        answer_json: &str,
        decision: Option<&str>,
        now: Millis,
    ) -> Result<bool> {
        self.forget_id_rows();
        let done = self.tx.query_typed_opt(
            "UPDATE requests SET status = 'answered', finished_ms = $2, answer = $3, decision = $4,
                    provider = NULL, decided_by = 'policy', outbox_pending = TRUE, ladder_due_ms = NULL
             WHERE seq = $1 AND status IN ('pending', 'claimed') RETURNING origin",
            &[
                (&seq, Type::INT8),
                (&now, Type::INT8),
                (&answer_json, Type::TEXT),
                (&decision, Type::TEXT),
            ],
        )?;
        self.outcome_of_row_due(done)
    }
}

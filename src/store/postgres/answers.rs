//! This driver's statements of answering ([`crate::store::driver::AnswerStatements`]):
//! claims, answers, cancels and aborts, each fenced in its SQL by the states it leaves and
//! the lease that may make it. The rules are [`crate::store::queue::answers`].
//!
//! `claim --next` picks its row with `FOR UPDATE SKIP LOCKED`: under the write lock no
//! other writer holds a row lock, so it changes nothing today, but it gives the claim the
//! queue semantics the issue asks for (two reviewers never get the same request) even if
//! claims ever run outside the lock.

use postgres::types::Type;
use postgres::GenericClient;

use super::requests::get;
use crate::clock::Millis;
use crate::core::lifecycle::RequestRow;
use crate::core::quorum::Vote;
use crate::error::Result;
use crate::protocol::types::Decision;
use crate::store::driver::answers::{AnsweredQuestion, AnsweredRow, ErrorEnd, Fence, NewVote};
use crate::store::driver::{AnswerReads, AnswerStatements};
use crate::store::postgres::tx::{PgRead, Tx};

/// The fencing condition of a lease-holder's update on `$1` (lease id), `$2` (now) and
/// `$4` (generation): a stale holder (ended, expired, another generation) matches no row.
const LEASE_LIVE: &str = "EXISTS (SELECT 1 FROM leases WHERE lease_id = $1 AND generation = $4
                          AND ended_ms IS NULL AND expires_ms >= $2 FOR SHARE)";

impl<C: GenericClient> AnswerReads for PgRead<'_, C> {
    fn first_open_for_lease_after(
        &mut self,
        context: &str,
        lease_id: i64,
        after: i64,
    ) -> Result<Option<String>> {
        match self.0.query_opt(
            "SELECT id FROM requests WHERE context = $1 AND seq > $2
                AND (status = 'pending' OR (status = 'claimed' AND claimed_lease = $3))
             ORDER BY seq LIMIT 1",
            &[&context, &after, &lease_id],
        )? {
            Some(r) => Ok(r.try_get(0)?),
            None => Ok(None),
        }
    }
}

impl Tx<'_> {
    /// Whether a guarded update that makes an outcome due changed its row (`RETURNING
    /// origin`); if so, the asking root is woken at the commit.
    pub(super) fn outcome_of_row_due(&mut self, done: Option<postgres::Row>) -> Result<bool> {
        let Some(row) = done else { return Ok(false) };
        self.outcome_due_for(row.try_get(0)?);
        Ok(true)
    }
}

impl AnswerStatements for Tx<'_> {
    fn answer_target(&mut self, id: &str) -> Result<Option<RequestRow>> {
        get(self.tx.client()?, id)
    }

    fn oldest_pending_id(&mut self, context: &str) -> Result<Option<String>> {
        match self.tx.query_opt(
            "SELECT id FROM requests WHERE context = $1 AND status = 'pending'
             ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED",
            &[&context],
        )? {
            Some(r) => Ok(r.try_get(0)?),
            None => Ok(None),
        }
    }

    fn set_claimed_if_pending_and_lease_live(
        &mut self,
        seq: i64,
        fence: Fence,
        now: Millis,
    ) -> Result<bool> {
        self.forget_id_rows();
        let n = self.tx.execute_typed(
            &format!(
                "UPDATE requests SET status = 'claimed', claimed_lease = $1, claimed_ms = $2
                 WHERE seq = $3 AND status = 'pending' AND {LEASE_LIVE}"
            ),
            &[
                (&fence.lease_id, Type::INT8),
                (&now, Type::INT8),
                (&seq, Type::INT8),
                (&fence.generation, Type::INT8),
            ],
        )?;
        Ok(n == 1)
    }

    fn set_answered_if_open_claimed_by_and_lease_live(
        &mut self,
        row: AnsweredRow<'_>,
        fence: Fence,
        now: Millis,
    ) -> Result<bool> {
        self.forget_id_rows();
        let done = self.tx.query_typed_opt(
            "UPDATE requests SET status = 'answered', claimed_lease = $1, claimed_ms = COALESCE(claimed_ms, $2),
                    finished_ms = $2, answer = $3, decision = $4, provider = $5, edits = $8,
                    outbox_pending = TRUE, approvers = $9, on_behalf_of = $10
             WHERE seq = $6 AND status IN ('pending', 'claimed') AND (claimed_lease IS NULL OR claimed_lease = $1)
               AND EXISTS (SELECT 1 FROM leases WHERE lease_id = $1 AND generation = $7
                           AND ended_ms IS NULL AND expires_ms >= $2 FOR SHARE)
             RETURNING origin",
            &[
                (&fence.lease_id, Type::INT8),
                (&now, Type::INT8),
                (&row.answer_json, Type::TEXT),
                (&row.decision, Type::TEXT),
                (&row.provider, Type::TEXT),
                (&row.seq, Type::INT8),
                (&fence.generation, Type::INT8),
                (&row.edits_json, Type::TEXT),
                (&row.approvers, Type::TEXT),
                (&row.on_behalf_of, Type::TEXT),
            ],
        )?;
        self.outcome_of_row_due(done)
    }

    fn set_answered_by_vote_if_open(&mut self, row: AnsweredRow<'_>, now: Millis) -> Result<bool> {
        self.forget_id_rows();
        let done = self.tx.query_typed_opt(
            "UPDATE requests SET status = 'answered', claimed_lease = NULL, claimed_ms = COALESCE(claimed_ms, $1),
                    finished_ms = $1, answer = $2, decision = $3, provider = $4, edits = $6,
                    outbox_pending = TRUE, approvers = $7, on_behalf_of = $8
             WHERE seq = $5 AND status IN ('pending', 'claimed')
             RETURNING origin",
            &[
                (&now, Type::INT8),
                (&row.answer_json, Type::TEXT),
                (&row.decision, Type::TEXT),
                (&row.provider, Type::TEXT),
                (&row.seq, Type::INT8),
                (&row.edits_json, Type::TEXT),
                (&row.approvers, Type::TEXT),
                (&row.on_behalf_of, Type::TEXT),
            ],
        )?;
        self.outcome_of_row_due(done)
    }

    fn lock_request_if_open_for_vote(&mut self, seq: i64) -> Result<bool> {
        Ok(self
            .tx
            .query_opt(
                "SELECT 1 FROM requests WHERE seq = $1 AND status IN ('pending', 'claimed')
                 FOR UPDATE",
                &[&seq],
            )?
            .is_some())
    }

    fn insert_vote_if_voter_new(&mut self, v: NewVote<'_>, now: Millis) -> Result<bool> {
        let n = self.tx.execute_typed(
            "INSERT INTO votes (request_seq, voter, answer, decision, lease_id, created_ms, person, for_person)
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING",
            &[
                (&v.request_seq, Type::INT8),
                (&v.voter, Type::TEXT),
                (&v.answer_json, Type::TEXT),
                (&v.decision, Type::TEXT),
                (&v.lease_id, Type::INT8),
                (&now, Type::INT8),
                (&v.person, Type::TEXT),
                (&v.for_person, Type::TEXT),
            ],
        )?;
        Ok(n == 1)
    }

    fn votes_of_request(&mut self, seq: i64) -> Result<Vec<Vote>> {
        self.tx
            .query(
                "SELECT voter, answer, decision, created_ms, person, for_person FROM votes WHERE request_seq = $1
                 ORDER BY created_ms, voter",
                &[&seq],
            )?
            .iter()
            .map(|r| {
                let decision: Option<String> = r.try_get(2)?;
                Ok(Vote {
                    voter: r.try_get(0)?,
                    person: r.try_get(4)?,
                    answer: r.try_get(1)?,
                    decision: decision.as_deref().and_then(Decision::parse),
                    at_ms: r.try_get(3)?,
                    for_person: r.try_get(5)?,
                })
            })
            .collect()
    }

    fn set_question_answer(&mut self, q: AnsweredQuestion<'_>) -> Result<()> {
        self.tx.execute_typed(
            "UPDATE questions SET selected = $1, custom = $2, decision = $3 WHERE request_seq = $4 AND idx = $5",
            &[
                (&q.selected_json, Type::TEXT),
                (&q.custom, Type::TEXT),
                (&q.decision, Type::TEXT),
                (&q.request_seq, Type::INT8),
                (&q.idx, Type::INT8),
            ],
        )?;
        Ok(())
    }

    fn is_fence_live(&mut self, fence: Fence, now: Millis) -> Result<bool> {
        Ok(self
            .tx
            .query_opt(
                "SELECT 1 FROM leases WHERE lease_id = $1 AND generation = $3
                   AND ended_ms IS NULL AND expires_ms >= $2 FOR SHARE",
                &[&fence.lease_id, &now, &fence.generation],
            )?
            .is_some())
    }

    fn set_error_end_if_open(&mut self, end: ErrorEnd<'_>, now: Millis) -> Result<bool> {
        self.forget_id_rows();
        let done = self.tx.query_typed_opt(
            "UPDATE requests SET status = $1, finished_ms = $2, error_code = $3, error_message = $4,
                    provider = $5, outbox_pending = TRUE, claimed_lease = COALESCE($7, claimed_lease)
             WHERE seq = $6 AND status IN ('pending', 'claimed') RETURNING origin",
            &[
                (&end.status.as_str(), Type::TEXT),
                (&now, Type::INT8),
                (&end.code.as_str(), Type::TEXT),
                (&end.message, Type::TEXT),
                (&end.provider, Type::TEXT),
                (&end.seq, Type::INT8),
                (&end.lease_id, Type::INT8),
            ],
        )?;
        self.outcome_of_row_due(done)
    }

    fn savepoint_answer_file(&mut self) -> Result<()> {
        // Held rows go first: the mark then holds none, and a rollback forgets only
        // what came after.
        self.tx.flush()?;
        self.answer_file_mark = self.mark();
        self.tx.batch_execute("SAVEPOINT answer_file")
    }

    fn release_answer_file(&mut self) -> Result<()> {
        self.tx.batch_execute("RELEASE SAVEPOINT answer_file")
    }

    fn rollback_answer_file(&mut self) -> Result<()> {
        // Forget what was held since first: the rollback's statement would send it.
        let mark = self.answer_file_mark;
        self.rolled_back_to(mark);
        self.tx
            .batch_execute("ROLLBACK TO SAVEPOINT answer_file; RELEASE SAVEPOINT answer_file")?;
        Ok(())
    }
}

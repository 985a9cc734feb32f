//! This driver's statements of answering ([`crate::store::driver::AnswerStatements`]):
//! claims, answers, cancels and aborts, each fenced in its SQL by the states it leaves and
//! the lease that may make it. The rules are [`crate::store::queue::answers`].

use rusqlite::{params, OptionalExtension};

use super::requests::get;
use crate::clock::Millis;
use crate::core::lifecycle::RequestRow;
use crate::core::quorum::Vote;
use crate::error::Result;
use crate::protocol::types::Decision;
use crate::store::driver::answers::{AnsweredQuestion, AnsweredRow, ErrorEnd, Fence, NewVote};
use crate::store::driver::{AnswerReads, AnswerStatements};
use crate::store::sqlite::tx::{Sql, SqlRead};

/// The fencing condition of a lease-holder's update: `?1` is the lease id, `?2` now and
/// `?4` the generation. A stale holder (ended, expired, or another generation) matches
/// no row.
const LEASE_LIVE: &str = "EXISTS (SELECT 1 FROM leases WHERE lease_id = ?1 AND generation = ?4
                          AND ended_ms IS NULL AND expires_ms >= ?2)";

impl AnswerReads for SqlRead<'_> {
    fn first_open_for_lease_after(
        &mut self,
        context: &str,
        lease_id: i64,
        after: i64,
    ) -> Result<Option<String>> {
        Ok(self
            .0
            .prepare_cached(
                "SELECT id FROM requests WHERE context = ?1 AND seq > ?2
                    AND (status = 'pending' OR (status = 'claimed' AND claimed_lease = ?3))
                 ORDER BY seq LIMIT 1",
            )?
            .query_row(params![context, after, lease_id], |r| r.get(0))
            .optional()?)
    }
}

impl AnswerStatements for Sql<'_, '_> {
    fn answer_target(&mut self, id: &str) -> Result<Option<RequestRow>> {
        get(self.0, id)
    }

    fn oldest_pending_id(&mut self, context: &str) -> Result<Option<String>> {
        Ok(self
            .0
            .prepare_cached(
                "SELECT id FROM requests INDEXED BY requests_open
                 WHERE context = ?1 AND status IN ('pending', 'claimed') AND status = 'pending' ORDER BY seq LIMIT 1",
            )?
            .query_row([context], |r| r.get(0))
            .optional()?)
    }

    fn set_claimed_if_pending_and_lease_live(
        &mut self,
        seq: i64,
        fence: Fence,
        now: Millis,
    ) -> Result<bool> {
        let n = self.0.execute(
            &format!(
                "UPDATE requests SET status = 'claimed', claimed_lease = ?1, claimed_ms = ?2
                 WHERE seq = ?3 AND status = 'pending' AND {LEASE_LIVE}"
            ),
            params![fence.lease_id, now, seq, fence.generation],
        )?;
        Ok(n == 1)
    }

    fn set_answered_if_open_claimed_by_and_lease_live(
        &mut self,
        row: AnsweredRow<'_>,
        fence: Fence,
        now: Millis,
    ) -> Result<bool> {
        let n = self.0.execute(
            "UPDATE requests SET status = 'answered', claimed_lease = ?1, claimed_ms = COALESCE(claimed_ms, ?2),
                    finished_ms = ?2, answer = ?3, decision = ?4, provider = ?5, edits = ?8,
                    outbox_pending = 1, approvers = ?9, on_behalf_of = ?10
             WHERE seq = ?6 AND status IN ('pending', 'claimed') AND (claimed_lease IS NULL OR claimed_lease = ?1)
               AND EXISTS (SELECT 1 FROM leases WHERE lease_id = ?1 AND generation = ?7
                           AND ended_ms IS NULL AND expires_ms >= ?2)",
            params![
                fence.lease_id,
                now,
                row.answer_json,
                row.decision,
                row.provider,
                row.seq,
                fence.generation,
                row.edits_json,
                row.approvers,
                row.on_behalf_of
            ],
        )?;
        Ok(n == 1)
    }

    fn set_answered_by_vote_if_open(&mut self, row: AnsweredRow<'_>, now: Millis) -> Result<bool> {
        let n = self.0.execute(
            "UPDATE requests SET status = 'answered', claimed_lease = NULL, claimed_ms = COALESCE(claimed_ms, ?1),
                    finished_ms = ?1, answer = ?2, decision = ?3, provider = ?4, edits = ?6,
                    outbox_pending = 1, approvers = ?7, on_behalf_of = ?8
             WHERE seq = ?5 AND status IN ('pending', 'claimed')",
            params![
                now,
                row.answer_json,
                row.decision,
                row.provider,
                row.seq,
                row.edits_json,
                row.approvers,
                row.on_behalf_of
            ],
        )?;
        Ok(n == 1)
    }

    fn lock_request_if_open_for_vote(&mut self, seq: i64) -> Result<bool> {
        // The transaction holds SQLite's one write lock: nothing to lock.
        Ok(self
            .0
            .prepare_cached(
                "SELECT 1 FROM requests WHERE seq = ?1 AND status IN ('pending', 'claimed')",
            )?
            .query_row([seq], |_| Ok(()))
            .optional()?
            .is_some())
    }

    fn insert_vote_if_voter_new(&mut self, v: NewVote<'_>, now: Millis) -> Result<bool> {
        let n = self
            .0
            .prepare_cached(
                "INSERT INTO votes (request_seq, voter, answer, decision, lease_id, created_ms, person, for_person)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT DO NOTHING",
            )?
            .execute(params![
                v.request_seq,
                v.voter,
                v.answer_json,
                v.decision,
                v.lease_id,
                now,
                v.person,
                v.for_person
            ])?;
        Ok(n == 1)
    }

    fn votes_of_request(&mut self, seq: i64) -> Result<Vec<Vote>> {
        let mut stmt = self.0.prepare_cached(
            "SELECT voter, answer, decision, created_ms, person, for_person FROM votes WHERE request_seq = ?1
             ORDER BY created_ms, voter",
        )?;
        let rows = stmt.query_map([seq], |r| {
            let decision: Option<String> = r.get(2)?;
            Ok(Vote {
                voter: r.get(0)?,
                person: r.get(4)?,
                answer: r.get(1)?,
                decision: decision.as_deref().and_then(Decision::parse),
                at_ms: r.get(3)?,
                for_person: r.get(5)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn set_question_answer(&mut self, q: AnsweredQuestion<'_>) -> Result<()> {
        self.0
            .prepare_cached(
                "UPDATE questions SET selected = ?1, custom = ?2, decision = ?3 WHERE request_seq = ?4 AND idx = ?5",
            )?
            .execute(params![
                q.selected_json,
                q.custom,
                q.decision,
                q.request_seq,
                q.idx
            ])?;
        Ok(())
    }

    fn is_fence_live(&mut self, fence: Fence, now: Millis) -> Result<bool> {
        Ok(self
            .0
            .prepare_cached(&format!("SELECT 1 WHERE {LEASE_LIVE}"))?
            .exists(params![
                fence.lease_id,
                now,
                rusqlite::types::Null,
                fence.generation
            ])?)
    }

    fn set_error_end_if_open(&mut self, end: ErrorEnd<'_>, now: Millis) -> Result<bool> {
        let n = self.0.execute(
            "UPDATE requests SET status = ?1, finished_ms = ?2, error_code = ?3, error_message = ?4,
                    provider = ?5, outbox_pending = 1, claimed_lease = COALESCE(?7, claimed_lease)
             WHERE seq = ?6 AND status IN ('pending', 'claimed')",
            params![
                end.status.as_str(),
                now,
                end.code.as_str(),
                end.message,
                end.provider,
                end.seq,
                end.lease_id
            ],
        )?;
        Ok(n == 1)
    }

    fn savepoint_answer_file(&mut self) -> Result<()> {
        Ok(self.0.execute_batch("SAVEPOINT answer_file")?)
    }

    fn release_answer_file(&mut self) -> Result<()> {
        Ok(self.0.execute_batch("RELEASE answer_file")?)
    }

    fn rollback_answer_file(&mut self) -> Result<()> {
        self.0
            .execute_batch("ROLLBACK TO answer_file; RELEASE answer_file")?;
        self.savepoint_rolled_back()
    }
}

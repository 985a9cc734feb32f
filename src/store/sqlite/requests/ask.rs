//! Asking on SQLite: the statements of [`crate::store::queue::requests`] (accept, reject,
//! deadlines, the outbox), and the entry points this backend's callers use, which run
//! those rules on a transaction.

use rusqlite::{params, OptionalExtension};

use super::reads::get;
use crate::clock::Millis;
use crate::core::lifecycle::RequestRow;
use crate::error::Result;
use crate::protocol::error::UserQuestionError;
use crate::protocol::types::Request;
use crate::store::driver::requests::{IdRow, NewQuestion, NewRejection, NewRequest};
use crate::store::queue;
pub use crate::store::queue::requests::Rejection;
use crate::store::sqlite::outbox;
use crate::store::sqlite::sql::Sql;
use crate::store::types::Accepted;

/// Check and accept a parsed request ([`queue::requests::accept`]) in `tx`.
pub fn accept(
    tx: &mut Sql<'_, '_>,
    request: Request,
    fallback_id: Option<&str>,
    source: &str,
    now: Millis,
) -> Result<Accepted> {
    queue::requests::accept(
        tx,
        now,
        request,
        fallback_id,
        source,
        &crate::core::quorum::Policy::default(),
    )
}

/// Record a rejected input for the audit ([`queue::requests::record_rejection`]) in `tx`.
pub fn record_rejection(
    tx: &mut Sql<'_, '_>,
    rej: &Rejection<'_>,
    error: &UserQuestionError,
    now: Millis,
) -> Result<bool> {
    queue::requests::record_rejection(tx, now, rej, error)
}

/// The verdict of an earlier rejection of this very input
/// ([`queue::requests::earlier_rejection`]) in `tx`.
pub fn earlier_rejection(
    tx: &mut Sql<'_, '_>,
    id: &str,
    source: &str,
    body: &str,
    file_mtime_ms: Millis,
) -> Result<Option<UserQuestionError>> {
    queue::requests::earlier_rejection(tx, id, source, body, file_mtime_ms)
}

impl crate::store::driver::RequestStatements for Sql<'_, '_> {
    fn lock_row_numbers(&mut self) -> Result<()> {
        // `BEGIN IMMEDIATE` made this writer the only one.
        Ok(())
    }

    fn preload_rows_of_ids(&mut self, _ids: &[&str]) -> Result<()> {
        // In-process statements: a lookup costs no round trip.
        Ok(())
    }

    fn rows_with_id(&mut self, id: &str) -> Result<Vec<IdRow>> {
        let mut stmt = self.0.prepare_cached(
            "SELECT status, context, body FROM requests INDEXED BY requests_id WHERE id = ?1",
        )?;
        let rows = stmt.query_map([id], |r| {
            Ok(IdRow {
                status: r.get(0)?,
                context: r.get(1)?,
                body: r.get(2)?,
            })
        })?;
        Ok(rows.collect::<rusqlite::Result<_>>()?)
    }

    fn unset_outbox_of_rejections_of_id(&mut self, id: &str) -> Result<()> {
        self.0
            .prepare_cached(
                "UPDATE requests SET outbox_pending = 0 WHERE id = ?1 AND status = 'rejected' AND outbox_pending = 1",
            )?
            .execute([id])?;
        Ok(())
    }

    fn insert_pending_request(&mut self, r: &NewRequest<'_>) -> Result<Option<i64>> {
        self.0
            .prepare_cached(
                "INSERT INTO requests (id, context, status, agent_id, agent_instance, agent_lineage, body, source,
                                       require_provider, deadline_ms, created_ms, ladder, ladder_due_ms,
                                       quorum)
                 VALUES (?1, ?2, 'pending', ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
            )?
            .execute(params![
                r.id,
                r.context,
                r.agent_id,
                r.agent_instance,
                r.agent_lineage,
                r.body,
                r.source,
                r.require_provider,
                r.deadline_ms,
                r.created_ms,
                r.ladder,
                r.ladder_due_ms,
                r.quorum
            ])?;
        Ok(Some(self.0.last_insert_rowid()))
    }

    fn insert_question(&mut self, q: &NewQuestion<'_>) -> Result<()> {
        self.0
            .prepare_cached(
                "INSERT INTO questions (request_seq, idx, qid, question, header, detail, multi_select,
                                        intent_kind, intent_approve, options)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
            )?
            .execute(params![
                q.request_seq,
                q.idx,
                q.qid,
                q.question,
                q.header,
                q.detail,
                q.multi_select,
                q.intent_kind,
                q.intent_approve,
                q.options,
            ])?;
        Ok(())
    }

    fn accepted_request_exists(&mut self, id: &str) -> Result<bool> {
        Ok(get(self.0, id)?.is_some())
    }

    fn rejection_exists(
        &mut self,
        id: Option<&str>,
        source: &str,
        body: &str,
        code: &str,
    ) -> Result<bool> {
        Ok(self
            .0
            .prepare_cached(
                // By source (the file): left to itself the planner walks every rejected row
                // (the status index), and the id index walks every id-less one; either made
                // each rejection in a flood slower than the last.
                "SELECT 1 FROM requests INDEXED BY requests_rejected_source WHERE source = ?2 AND id IS ?1 AND status = 'rejected' AND body = ?3 AND error_code = ?4",
            )?
            .exists(params![id, source, body, code])?)
    }

    fn insert_rejected_request(&mut self, r: &NewRejection<'_>) -> Result<i64> {
        self.0
            .prepare_cached(
                "INSERT INTO requests (id, context, status, body, source, created_ms, finished_ms, error_code, error_message, outbox_pending)
                 VALUES (?1, ?2, 'rejected', ?3, ?4, ?5, ?5, ?6, ?7, ?8)",
            )?
            .execute(params![
                r.id,
                r.context,
                r.body,
                r.source,
                r.now,
                r.error_code,
                r.error_message,
                r.outbox_pending
            ])?;
        Ok(self.0.last_insert_rowid())
    }

    fn newest_rejection_since(
        &mut self,
        id: &str,
        source: &str,
        body: &str,
        since: Millis,
    ) -> Result<Option<(Option<String>, Option<String>)>> {
        Ok(self
            .0
            .prepare_cached(
                // The index's second key is the seq of a rejection (0 for an accepted
                // request), so "newest rejection first" reads the index in order instead
                // of sorting.
                "SELECT error_code, error_message FROM requests INDEXED BY requests_id
                 WHERE id = ?1 AND status = 'rejected' AND (CASE WHEN status = 'rejected' THEN seq ELSE 0 END) > 0
                   AND source = ?2 AND body = ?3 AND created_ms >= ?4
                 ORDER BY (CASE WHEN status = 'rejected' THEN seq ELSE 0 END) DESC LIMIT 1",
            )?
            .query_row(params![id, source, body, since], |r| {
                Ok((r.get(0)?, r.get(1)?))
            })
            .optional()?)
    }

    fn open_requests_past_deadline(&mut self, now: Millis) -> Result<Vec<RequestRow>> {
        crate::store::sqlite::sweep::open_past_deadline(self.0, now)
    }

    fn unset_outbox_pending_of_seqs(&mut self, seqs: &[i64]) -> Result<()> {
        outbox::unset_outbox_pending(self.0, seqs)
    }
}

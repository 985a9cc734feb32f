//! Requests on SQLite: the statements of asking ([`crate::store::driver::RequestStatements`]:
//! accept, reject, the id and rejection lookups), the reads of one request and of lists
//! (`show`, `list`, `wait`), and how a request row maps to a [`RequestRow`], which the
//! other concerns' statements select too. The rules are [`crate::store::queue::requests`].
//!
//! The lifecycle (spec §5) is enforced with conditional updates: every transition names
//! the states it leaves (`WHERE status IN ('pending', 'claimed')`) and the lease that may
//! make it, so a final state never changes and of two concurrent answers exactly one
//! matches a row.

use rusqlite::{params, Connection, OptionalExtension};

use crate::clock::Millis;
pub use crate::core::lifecycle::{RequestRow, Status};
use crate::error::Result;
use crate::protocol::types::Decision;
use crate::store::driver::requests::{IdRow, NewQuestion, NewRejection, NewRequest};
use crate::store::driver::RequestReads;
use crate::store::sqlite::tx::{Sql, SqlRead};
pub use crate::store::types::{Accepted, ListFilter};

pub(super) const COLUMNS: &str = "r.seq, r.id, r.context, r.status, r.agent_id, r.agent_instance, r.agent_lineage, r.body,
    r.source, r.deadline_ms, r.created_ms, r.claimed_lease, l.name, r.claimed_ms, r.finished_ms, r.answer,
    r.decision, r.provider, r.error_code, r.error_message, r.ladder, r.ladder_done, r.decided_by,
    r.edits, r.quorum, r.approvers, r.on_behalf_of,
    CASE WHEN r.quorum IS NULL THEN NULL ELSE (
        SELECT json_group_array(json_object('voter', v.voter, 'person', v.person, 'answer', v.answer,
                                            'decision', v.decision, 'atMs', v.created_ms, 'forPerson', v.for_person))
        FROM (SELECT * FROM votes WHERE request_seq = r.seq ORDER BY created_ms, voter) v) END";
/// How many columns [`COLUMNS`] has (a query may select more after them).
pub(super) const WIDTH: usize = 28;

pub(super) const FROM: &str = "requests r LEFT JOIN leases l ON l.lease_id = r.claimed_lease";

pub(super) fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RequestRow> {
    let status: String = r.get(3)?;
    let decision: Option<String> = r.get(16)?;
    Ok(RequestRow {
        seq: r.get(0)?,
        id: r.get(1)?,
        context: r.get(2)?,
        status: Status::parse(&status).unwrap_or(Status::Rejected),
        agent_id: r.get(4)?,
        agent_instance: r.get(5)?,
        agent_lineage: r.get(6)?,
        body: r.get(7)?,
        source: r.get(8)?,
        deadline_ms: r.get(9)?,
        created_ms: r.get(10)?,
        claimed_lease: r.get(11)?,
        claimed_by: r.get(12)?,
        claimed_ms: r.get(13)?,
        finished_ms: r.get(14)?,
        answer: r.get(15)?,
        decision: decision.as_deref().and_then(Decision::parse),
        provider: r.get(17)?,
        error_code: r.get(18)?,
        error_message: r.get(19)?,
        ladder: r.get(20)?,
        ladder_done: r.get(21)?,
        decided_by: r.get(22)?,
        edits: r.get(23)?,
        quorum: r.get(24)?,
        approvers: r.get(25)?,
        on_behalf_of: r.get(26)?,
        votes: r.get(27)?,
    })
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
}

/// The accepted request with `id` (not a rejection), if any.
pub fn get(conn: &Connection, id: &str) -> Result<Option<RequestRow>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM {FROM} WHERE r.id = ?1 AND r.status <> 'rejected'"
        ))?
        .query_row([id], row)
        .optional()?)
}

/// The request with `id`, or else its newest rejection.
pub fn get_any(conn: &Connection, id: &str) -> Result<Option<RequestRow>> {
    if let Some(r) = get(conn, id)? {
        return Ok(Some(r));
    }
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM {FROM} WHERE r.id = ?1 ORDER BY r.seq DESC LIMIT 1"
        ))?
        .query_row([id], row)
        .optional()?)
}

/// The request filters of a [`ListFilter`] but its status: `?2` the contexts (a JSON
/// array), `?4` the agent, `?5` the intent kind, `?6` the text.
pub(super) const MATCHES: &str = "(?2 IS NULL OR r.context IN (SELECT value FROM json_each(?2)))
       AND (?4 IS NULL OR r.agent_id = ?4)
       AND (?5 IS NULL OR EXISTS (SELECT 1 FROM questions q
                                  WHERE q.request_seq = r.seq AND q.intent_kind = ?5))
       AND (?6 IS NULL OR EXISTS (SELECT 1 FROM questions q
                                  WHERE q.request_seq = r.seq
                                    AND instr(lower(q.question), lower(?6)) > 0))
       AND (?8 IS NULL OR r.source = ?8)";

/// The contexts of `f` as one JSON array (`None`: every context).
pub(super) fn contexts_json(f: &ListFilter) -> Option<String> {
    (!f.contexts.is_empty()).then(|| serde_json::Value::from(f.contexts.clone()).to_string())
}

/// Requests, newest first (or oldest first), filtered in the query: several contexts
/// arrive as one JSON array (`json_each`), so one cached statement serves any number;
/// the text match is `instr` on `lower()` (ASCII case folding, and no LIKE wildcards to
/// escape).
pub fn list(conn: &Connection, f: &ListFilter) -> Result<Vec<RequestRow>> {
    let order = if f.oldest_first { "ASC" } else { "DESC" };
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM {FROM}
         WHERE (?1 IS NULL OR r.status = ?1) AND {MATCHES}
         ORDER BY r.seq {order} LIMIT ?3"
    ))?;
    let contexts = contexts_json(f);
    let rows = stmt.query_map(
        params![
            f.status.map(Status::as_str),
            contexts,
            f.limit.unwrap_or(-1),
            f.agent,
            f.intent,
            f.grep,
            None::<String>,
            f.source,
        ],
        row,
    )?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

impl RequestReads for SqlRead<'_> {
    fn request(&mut self, id: &str) -> Result<Option<RequestRow>> {
        get(self.0, id)
    }

    fn request_or_rejection(&mut self, id: &str) -> Result<Option<RequestRow>> {
        get_any(self.0, id)
    }

    fn requests(&mut self, filter: &ListFilter) -> Result<Vec<RequestRow>> {
        list(self.0, filter)
    }
}

//! Asking on PostgreSQL: the statements of [`crate::store::queue::requests`] (accept,
//! reject, deadlines, the outbox). A new row records the store's origin (the root that
//! asked), so that root's daemon writes its outcome file.

use postgres::types::Type;

use super::reads::get;
use super::{outbox, timeouts};
use crate::clock::Millis;
use crate::core::lifecycle::RequestRow;
use crate::error::Result;
use crate::store::driver::requests::{IdRow, NewQuestion, NewRejection, NewRequest};
use crate::store::postgres::tx::{IdRowCopy, IdRows, Tx};
pub use crate::store::queue::requests::Rejection;

// A new row's position (`requests.seq`) is the largest + 1, taken under the row-number lock,
// as SQLite numbers its rows: an identity would leave a gap for every rolled-back insert,
// and the positions are in the events (`rowSeq`), the feeds and the export, which must
// read the same on both backends. (The identity stays the column's default for tools.)
//
// The statements of an accept are sent with their parameter types (one round trip each,
// under the write lock).

/// Send the question rows `t` holds, in one statement (nothing when it holds none).
pub fn flush_questions(t: &mut Tx<'_>) -> Result<()> {
    if t.questions.is_empty() {
        return Ok(());
    }
    let c = std::mem::take(&mut t.questions);
    t.tx.execute_typed(
        "INSERT INTO questions (request_seq, idx, qid, question, header, detail, multi_select,
                                intent_kind, intent_approve, options)
         SELECT * FROM UNNEST($1::int8[], $2::int8[], $3::text[], $4::text[], $5::text[],
                              $6::text[], $7::bool[], $8::text[], $9::text[], $10::text[])",
        &[
            (&c.request_seq, Type::INT8_ARRAY),
            (&c.idx, Type::INT8_ARRAY),
            (&c.qid, Type::TEXT_ARRAY),
            (&c.question, Type::TEXT_ARRAY),
            (&c.header, Type::TEXT_ARRAY),
            (&c.detail, Type::TEXT_ARRAY),
            (&c.multi_select, Type::BOOL_ARRAY),
            (&c.intent_kind, Type::TEXT_ARRAY),
            (&c.intent_approve, Type::TEXT_ARRAY),
            (&c.options, Type::TEXT_ARRAY),
        ],
    )?;
    Ok(())
}

impl crate::store::driver::RequestStatements for Tx<'_> {
    fn lock_row_numbers(&mut self) -> Result<()> {
        self.lock_rows()
    }

    fn preload_rows_of_ids(&mut self, ids: &[&str]) -> Result<()> {
        let rows = self.tx.query_typed(
            "SELECT seq, id, status, context, body, source, created_ms, error_code, error_message
             FROM requests WHERE id = ANY($1) ORDER BY seq",
            &[(&ids, Type::TEXT_ARRAY)],
        )?;
        let mut copy = IdRows {
            ids: ids.iter().map(|i| i.to_string()).collect(),
            rows: Vec::with_capacity(rows.len()),
        };
        for r in &rows {
            copy.rows.push(IdRowCopy {
                seq: r.try_get(0)?,
                id: r.try_get(1)?,
                status: r.try_get(2)?,
                context: r.try_get(3)?,
                body: r.try_get(4)?,
                source: r.try_get(5)?,
                created_ms: r.try_get(6)?,
                error_code: r.try_get(7)?,
                error_message: r.try_get(8)?,
            });
        }
        self.id_rows = Some(copy);
        Ok(())
    }

    fn rows_with_id(&mut self, id: &str) -> Result<Vec<IdRow>> {
        if let Some(copy) = self.id_rows.as_ref().filter(|c| c.ids.contains(id)) {
            return Ok(copy
                .rows
                .iter()
                .filter(|r| r.id == id)
                .map(|r| IdRow {
                    status: r.status.clone(),
                    context: r.context.clone(),
                    body: r.body.clone(),
                })
                .collect());
        }
        self.tx
            .query_typed(
                "SELECT status, context, body FROM requests WHERE id = $1",
                &[(&id, Type::TEXT)],
            )?
            .iter()
            .map(|r| {
                Ok(IdRow {
                    status: r.try_get(0)?,
                    context: r.try_get(1)?,
                    body: r.try_get(2)?,
                })
            })
            .collect()
    }

    fn unset_outbox_of_rejections_of_id(&mut self, id: &str) -> Result<()> {
        self.forget_id_rows();
        self.tx.execute(
            "UPDATE requests SET outbox_pending = FALSE WHERE id = $1 AND status = 'rejected' AND outbox_pending",
            &[&id],
        )?;
        Ok(())
    }

    fn insert_pending_request(&mut self, r: &NewRequest<'_>) -> Result<Option<i64>> {
        let inserted = self.tx.query_typed_opt(
            // The position is the largest + 1, under the row-number lock (see above).
            "INSERT INTO requests (seq, id, context, status, agent_id, agent_instance, agent_lineage, body, source,
                                   require_provider, deadline_ms, created_ms, origin, quorum)
             VALUES ((SELECT COALESCE(MAX(seq), 0) + 1 FROM requests),
                     $1, $2, 'pending', $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)
             ON CONFLICT (id) WHERE status <> 'rejected' DO NOTHING RETURNING seq",
            &[
                (&r.id, Type::TEXT),
                (&r.context, Type::TEXT),
                (&r.agent_id, Type::TEXT),
                (&r.agent_instance, Type::TEXT),
                (&r.agent_lineage, Type::TEXT),
                (&r.body, Type::TEXT),
                (&r.source, Type::TEXT),
                (&r.require_provider, Type::BOOL),
                (&r.deadline_ms, Type::INT8),
                (&r.created_ms, Type::INT8),
                (&self.origin, Type::TEXT),
                (&r.quorum, Type::TEXT),
            ],
        );
        let Some(row) = inserted? else {
            return Ok(None);
        };
        let seq: i64 = row.try_get(0)?;
        if let Some(copy) = self.id_rows.as_mut().filter(|c| c.ids.contains(r.id)) {
            copy.rows.push(IdRowCopy {
                seq,
                id: r.id.to_string(),
                status: "pending".into(),
                context: r.context.to_string(),
                body: r.body.to_string(),
                source: r.source.to_string(),
                created_ms: r.created_ms,
                error_code: None,
                error_message: None,
            });
        }
        Ok(Some(seq))
    }

    fn insert_question(&mut self, q: &NewQuestion<'_>) -> Result<()> {
        // Held, and sent with the others in one statement (see `QuestionColumns`).
        let c = &mut self.questions;
        c.request_seq.push(q.request_seq);
        c.idx.push(q.idx);
        c.qid.push(q.qid.to_string());
        c.question.push(q.question.to_string());
        c.header.push(q.header.map(str::to_string));
        c.detail.push(q.detail.map(str::to_string));
        c.multi_select.push(q.multi_select);
        c.intent_kind.push(q.intent_kind.map(str::to_string));
        c.intent_approve.push(q.intent_approve.map(str::to_string));
        c.options.push(q.options.to_string());
        Ok(())
    }

    fn accepted_request_exists(&mut self, id: &str) -> Result<bool> {
        Ok(get(&mut self.tx, id)?.is_some())
    }

    fn rejection_exists(
        &mut self,
        id: Option<&str>,
        source: &str,
        body: &str,
        code: &str,
    ) -> Result<bool> {
        Ok(self
            .tx
            .query_opt(
                "SELECT 1 FROM requests WHERE source = $2 AND id IS NOT DISTINCT FROM $1::text
                   AND status = 'rejected' AND body = $3 AND error_code = $4 LIMIT 1",
                &[&id, &source, &body, &code],
            )?
            .is_some())
    }

    fn insert_rejected_request(&mut self, r: &NewRejection<'_>) -> Result<i64> {
        if r.outbox_pending {
            let origin = self.origin.map(str::to_string);
            self.outcome_due_for(origin);
        }
        let seq: i64 = self
            .tx
            .query_one(
                "INSERT INTO requests (seq, id, context, status, body, source, created_ms, finished_ms, error_code, error_message, outbox_pending, origin)
                 VALUES ((SELECT COALESCE(MAX(seq), 0) + 1 FROM requests),
                         $1, $2, 'rejected', $3, $4, $5, $5, $6, $7, $8, $9) RETURNING seq",
                &[
                    &r.id,
                    &r.context,
                    &r.body,
                    &r.source,
                    &r.now,
                    &r.error_code,
                    &r.error_message,
                    &r.outbox_pending,
                    &self.origin,
                ],
            )?
            .try_get(0)?;
        if let Some(id) = r.id {
            if let Some(copy) = self.id_rows.as_mut().filter(|c| c.ids.contains(id)) {
                copy.rows.push(IdRowCopy {
                    seq,
                    id: id.to_string(),
                    status: "rejected".into(),
                    context: r.context.to_string(),
                    body: r.body.to_string(),
                    source: r.source.to_string(),
                    created_ms: r.now,
                    error_code: Some(r.error_code.to_string()),
                    error_message: Some(r.error_message.to_string()),
                });
            }
        }
        Ok(seq)
    }

    fn newest_rejection_since(
        &mut self,
        id: &str,
        source: &str,
        body: &str,
        since: Millis,
    ) -> Result<Option<(Option<String>, Option<String>)>> {
        if let Some(copy) = self.id_rows.as_ref().filter(|c| c.ids.contains(id)) {
            return Ok(copy
                .rows
                .iter()
                .rev()
                .find(|r| {
                    r.id == id
                        && r.status == "rejected"
                        && r.source == source
                        && r.body == body
                        && r.created_ms >= since
                })
                .map(|r| (r.error_code.clone(), r.error_message.clone())));
        }
        // Typed: one round trip (every inbox file runs it).
        let Some(r) = self.tx.query_typed_opt(
            "SELECT error_code, error_message FROM requests
             WHERE id = $1 AND status = 'rejected' AND source = $2 AND body = $3 AND created_ms >= $4
             ORDER BY seq DESC LIMIT 1",
            &[
                (&id, Type::TEXT),
                (&source, Type::TEXT),
                (&body, Type::TEXT),
                (&since, Type::INT8),
            ],
        )?
        else {
            return Ok(None);
        };
        Ok(Some((r.try_get(0)?, r.try_get(1)?)))
    }

    fn open_requests_past_deadline(&mut self, now: Millis) -> Result<Vec<RequestRow>> {
        timeouts::open_past_deadline(self, now)
    }

    fn unset_outbox_pending_of_seqs(&mut self, seqs: &[i64]) -> Result<()> {
        outbox::unset_outbox_pending(self, seqs)
    }
}

//! Asking on PostgreSQL: the statements of [`crate::store::queue::requests`] (accept,
//! reject, deadlines, the outbox). A new row records the store's origin (the root that
//! asked), so that root's daemon writes its outcome file.

use postgres::types::Type;

use super::reads::get;
use crate::clock::Millis;
use crate::core::lifecycle::RequestRow;
use crate::error::Result;
use crate::store::driver::requests::{IdRow, NewQuestion, NewRejection, NewRequest};
use crate::store::postgres::outbox;
use crate::store::postgres::session::HeldRequest;
use crate::store::postgres::tx::{IdRowCopy, IdRows, Tx};
pub use crate::store::queue::requests::Rejection;

// A new row's position (`requests.seq`) is the largest + 1, counted under the row-number
// lock, as SQLite numbers its rows: an identity would leave a gap for every rolled-back
// insert, and the positions are in the events (`rowSeq`), the feeds and the export, which
// must read the same on both backends. (The identity stays the column's default for tools.)
//
// New rows (requests, accepted or rejected, and questions) are held by the transaction and
// sent together before its next statement or its commit ([`crate::store::postgres::session`]):
// an inbox batch's rows cost one statement, not one a file. The lookups of a batch are
// served from its preloaded copy ([`IdRows`]), kept current by the held inserts.

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
        let mut copy = IdRows::of_ids(ids);
        for r in &rows {
            let id: &str = r.try_get(1)?;
            copy.push(
                id,
                IdRowCopy {
                    seq: r.try_get(0)?,
                    status: r.try_get(2)?,
                    context: r.try_get(3)?,
                    body: r.try_get(4)?,
                    source: r.try_get(5)?,
                    created_ms: r.try_get(6)?,
                    error_code: r.try_get(7)?,
                    error_message: r.try_get(8)?,
                },
            );
        }
        self.id_rows = Some(copy);
        Ok(())
    }

    fn rows_with_id(&mut self, id: &str) -> Result<Vec<IdRow>> {
        if let Some(rows) = self.id_rows.as_ref().and_then(|c| c.rows(id)) {
            return Ok(rows
                .iter()
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
        // Held, numbered under the row-number lock (see above). The id was looked up under
        // that lock; the unique index still refuses a taken one, when the rows are sent,
        // and the whole write with it.
        self.lock_rows()?;
        let seq = self.tx.next_request_seq()?;
        self.tx
            .hold_request(HeldRequest::Pending(seq, r), self.origin)?;
        if let Some(copy) = self.id_rows.as_mut().filter(|c| c.follows(r.id)) {
            copy.push(
                r.id,
                IdRowCopy {
                    seq,
                    status: "pending".into(),
                    context: r.context.to_string(),
                    body: r.body.to_string(),
                    source: r.source.to_string(),
                    created_ms: r.created_ms,
                    error_code: None,
                    error_message: None,
                },
            );
        }
        Ok(Some(seq))
    }

    fn insert_question(&mut self, q: &NewQuestion<'_>) -> Result<()> {
        // Held, and sent with the request rows in one statement (see above).
        self.tx.hold_question(q)
    }

    fn accepted_request_exists(&mut self, id: &str) -> Result<bool> {
        if let Some(rows) = self.id_rows.as_ref().and_then(|c| c.rows(id)) {
            return Ok(rows.iter().any(|r| r.status != "rejected"));
        }
        Ok(get(self.tx.client()?, id)?.is_some())
    }

    fn rejection_exists(
        &mut self,
        id: Option<&str>,
        source: &str,
        body: &str,
        code: &str,
    ) -> Result<bool> {
        if let Some(rows) = id.and_then(|i| self.id_rows.as_ref().and_then(|c| c.rows(i))) {
            return Ok(rows.iter().any(|r| {
                r.status == "rejected"
                    && r.source == source
                    && r.body == body
                    && r.error_code.as_deref() == Some(code)
            }));
        }
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
        // Held and numbered as a pending row is (see `insert_pending_request`).
        self.lock_rows()?;
        let seq = self.tx.next_request_seq()?;
        self.tx
            .hold_request(HeldRequest::Rejected(seq, r), self.origin)?;
        if let Some(id) = r.id {
            if let Some(copy) = self.id_rows.as_mut().filter(|c| c.follows(id)) {
                copy.push(
                    id,
                    IdRowCopy {
                        seq,
                        status: "rejected".into(),
                        context: r.context.to_string(),
                        body: r.body.to_string(),
                        source: r.source.to_string(),
                        created_ms: r.now,
                        error_code: Some(r.error_code.to_string()),
                        error_message: Some(r.error_message.to_string()),
                    },
                );
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
        if let Some(rows) = self.id_rows.as_ref().and_then(|c| c.rows(id)) {
            return Ok(rows
                .iter()
                .rev()
                .find(|r| {
                    r.status == "rejected"
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
        crate::store::postgres::sweep::open_past_deadline(self, now)
    }

    fn unset_outbox_pending_of_seqs(&mut self, seqs: &[i64]) -> Result<()> {
        outbox::unset_outbox_pending(self, seqs)
    }
}

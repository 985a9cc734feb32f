//! Requests on PostgreSQL: the statements of asking
//! ([`crate::store::driver::RequestStatements`]: accept, reject, the id and rejection
//! lookups), the reads of one request and of lists (`show`, `list`, `wait`), and how a
//! request row maps to a [`RequestRow`], which the other concerns' statements select too.
//! The rules are [`crate::store::queue::requests`]. A new row records the store's origin
//! (the root that asked), so that root's daemon writes its outcome file.
//!
//! The lifecycle (spec §5) is enforced with conditional updates: every transition names
//! the states it leaves (`WHERE status IN ('pending', 'claimed')`) and the lease that may
//! make it, so a final state never changes and of two concurrent answers exactly one
//! matches a row.

use postgres::types::{ToSql, Type};
use postgres::{GenericClient, Row};

use crate::clock::Millis;
use crate::core::lifecycle::{RequestRow, Status};
use crate::error::Result;
use crate::protocol::types::Decision;
use crate::store::driver::requests::{IdRow, NewQuestion, NewRejection, NewRequest};
use crate::store::driver::RequestReads;
use crate::store::postgres::session::HeldRequest;
use crate::store::postgres::tx::{IdRowCopy, IdRows, PgRead, Tx};
use crate::store::types::ListFilter;

pub(super) const COLUMNS: &str = "r.seq, r.id, r.context, r.status, r.agent_id, r.agent_instance, r.agent_lineage, r.body,
    r.source, r.deadline_ms, r.created_ms, r.claimed_lease, l.name, r.claimed_ms, r.finished_ms, r.answer,
    r.decision, r.provider, r.error_code, r.error_message, r.ladder, r.ladder_done, r.decided_by,
    r.edits, r.quorum, r.approvers, r.on_behalf_of,
    CASE WHEN r.quorum IS NULL THEN NULL ELSE (
        SELECT COALESCE(json_agg(json_build_object('voter', v.voter, 'person', v.person, 'answer', v.answer,
                                                   'decision', v.decision, 'atMs', v.created_ms, 'forPerson', v.for_person)
                                 ORDER BY v.created_ms, v.voter), '[]')::text
        FROM votes v WHERE v.request_seq = r.seq) END";
pub(super) const FROM: &str = "requests r LEFT JOIN leases l ON l.lease_id = r.claimed_lease";

/// How many columns [`COLUMNS`] has (a query may select more after them).
pub(super) const WIDTH: usize = 28;

pub(super) fn row(r: &Row) -> Result<RequestRow> {
    let status: String = r.try_get(3)?;
    let decision: Option<String> = r.try_get(16)?;
    Ok(RequestRow {
        seq: r.try_get(0)?,
        id: r.try_get(1)?,
        context: r.try_get(2)?,
        // A status the CHECK constraint refuses cannot be stored; an unknown one reads
        // as rejected, as SQLite's row mapping does, and then fails the record check.
        status: Status::parse(&status).unwrap_or(Status::Rejected),
        agent_id: r.try_get(4)?,
        agent_instance: r.try_get(5)?,
        agent_lineage: r.try_get(6)?,
        body: r.try_get(7)?,
        source: r.try_get(8)?,
        deadline_ms: r.try_get(9)?,
        created_ms: r.try_get(10)?,
        claimed_lease: r.try_get(11)?,
        claimed_by: r.try_get(12)?,
        claimed_ms: r.try_get(13)?,
        finished_ms: r.try_get(14)?,
        answer: r.try_get(15)?,
        decision: decision.as_deref().and_then(Decision::parse),
        provider: r.try_get(17)?,
        error_code: r.try_get(18)?,
        error_message: r.try_get(19)?,
        ladder: r.try_get(20)?,
        ladder_done: r.try_get(21)?,
        decided_by: r.try_get(22)?,
        edits: r.try_get(23)?,
        quorum: r.try_get(24)?,
        approvers: r.try_get(25)?,
        on_behalf_of: r.try_get(26)?,
        votes: r.try_get(27)?,
    })
}

/// Every row of `rows` mapped.
pub(super) fn rows(rows: &[Row]) -> Result<Vec<RequestRow>> {
    rows.iter().map(row).collect()
}

/// Every request row, oldest first (what the audit's record check reads).
pub(crate) fn all_oldest_first(c: &mut impl GenericClient) -> Result<Vec<RequestRow>> {
    rows(&c.query(&format!("SELECT {COLUMNS} FROM {FROM} ORDER BY r.seq"), &[])?)
}

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
}

/// The accepted request with `id` (not a rejection), if any.
pub fn get(c: &mut impl GenericClient, id: &str) -> Result<Option<RequestRow>> {
    c.query_typed_opt(
        &format!("SELECT {COLUMNS} FROM {FROM} WHERE r.id = $1 AND r.status <> 'rejected'"),
        &[(&id, Type::TEXT)],
    )?
    .as_ref()
    .map(row)
    .transpose()
}

/// The request with `id`, or else its newest rejection.
pub fn get_any(c: &mut impl GenericClient, id: &str) -> Result<Option<RequestRow>> {
    if let Some(r) = get(c, id)? {
        return Ok(Some(r));
    }
    c.query_opt(
        &format!("SELECT {COLUMNS} FROM {FROM} WHERE r.id = $1 ORDER BY r.seq DESC LIMIT 1"),
        &[&id],
    )?
    .as_ref()
    .map(row)
    .transpose()
}

/// ASCII lower case in SQL (SQLite's `lower()` folds ASCII only; PostgreSQL's follows the
/// collation, so it is spelled out to match exactly).
fn ascii_lower(expr: &str) -> String {
    format!("translate({expr}, 'ABCDEFGHIJKLMNOPQRSTUVWXYZ', 'abcdefghijklmnopqrstuvwxyz')")
}

/// The request filters of a [`ListFilter`] but its status, on parameters `$n..$n+4`:
/// the contexts (a text array), the agent, the intent kind, the text, the source.
pub(super) fn matches(n: usize) -> String {
    let (ctx, agent, intent, grep, source) = (n, n + 1, n + 2, n + 3, n + 4);
    format!(
        "(${ctx}::text[] IS NULL OR r.context = ANY(${ctx}::text[]))
       AND (${agent}::text IS NULL OR r.agent_id = ${agent}::text)
       AND (${intent}::text IS NULL OR EXISTS (SELECT 1 FROM questions q
                                  WHERE q.request_seq = r.seq AND q.intent_kind = ${intent}::text))
       AND (${grep}::text IS NULL OR EXISTS (SELECT 1 FROM questions q
                                  WHERE q.request_seq = r.seq
                                    AND strpos({}, {}) > 0))
       AND (${source}::text IS NULL OR r.source = ${source}::text)",
        ascii_lower("q.question"),
        ascii_lower(&format!("${grep}::text"))
    )
}

/// The values of [`matches`]' parameters.
pub(super) struct Matching {
    contexts: Option<Vec<String>>,
    agent: Option<String>,
    intent: Option<String>,
    grep: Option<String>,
    source: Option<String>,
}

impl Matching {
    pub(super) fn of(f: &ListFilter) -> Matching {
        Matching {
            contexts: (!f.contexts.is_empty()).then(|| f.contexts.clone()),
            agent: f.agent.clone(),
            intent: f.intent.clone(),
            grep: f.grep.clone(),
            source: f.source.clone(),
        }
    }

    pub(super) fn params(&self) -> [&(dyn ToSql + Sync); 5] {
        [
            &self.contexts,
            &self.agent,
            &self.intent,
            &self.grep,
            &self.source,
        ]
    }
}

/// Requests, newest first (or oldest first), filtered in the query.
pub fn list(c: &mut impl GenericClient, f: &ListFilter) -> Result<Vec<RequestRow>> {
    let order = if f.oldest_first { "ASC" } else { "DESC" };
    let m = Matching::of(f);
    let status = f.status.map(Status::as_str);
    // SQLite's `LIMIT -1` (any negative) is no limit; so is PostgreSQL's `LIMIT NULL`.
    let limit = f.limit.filter(|l| *l >= 0);
    let mut params: Vec<&(dyn ToSql + Sync)> = vec![&status, &limit];
    params.extend(m.params());
    rows(&c.query(
        &format!(
            "SELECT {COLUMNS} FROM {FROM}
             WHERE ($1::text IS NULL OR r.status = $1::text) AND {}
             ORDER BY r.seq {order} LIMIT $2",
            matches(3)
        ),
        &params,
    )?)
}

impl<C: GenericClient> RequestReads for PgRead<'_, C> {
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

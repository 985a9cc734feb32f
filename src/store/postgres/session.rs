//! The transaction as the statements of a write see it: new request and question rows are
//! held here, not sent, and every statement sent through it sends them first.
//!
//! Why: an inbox batch inserts a request row, its questions and its event per file, and
//! through the blocking client each statement costs a round trip (about a millisecond on
//! a small machine, against a fifth of that in server work). Held, a batch's rows go as
//! one statement (requests and questions together), and its events as one more at the
//! commit ([`super::events::flush`]).
//!
//! What keeps this safe:
//!
//! - **Nothing reads around them.** [`Session`] is the only way to the transaction: each
//!   of its statements (and [`Session::client`], which hands the transaction to a read
//!   that takes any client) sends what is held first, so every read, update, savepoint and
//!   the commit see the rows as if they had been inserted one by one. The only statements
//!   that skip the send are the ones [`Session::beside_held`] is used for: reads of tables
//!   a held row never touches (the registry, the leases), which the ask checks run per
//!   file.
//! - **Numbers are given under the row-number lock.** A held request row's `seq` is the
//!   largest + 1 counted here ([`Session::next_request_seq`]), read once after
//!   [`super::tx::ROWS_LOCK`] is taken; every writer of request rows holds that lock to its
//!   commit (asking, the inbox), so no other row can take a number meanwhile, and the
//!   numbers stay gapless and in commit order. A rollback to a savepoint forgets the count.
//! - **The index still has the last word.** The send is a plain insert: a row whose id an
//!   accepted row holds fails the whole write (it rolls back, all or nothing) rather than
//!   vanish beside its event. Under the lock the rule looked the id up first, so it does not
//!   happen.

use postgres::types::{ToSql, Type};
use postgres::{Row, ToStatement, Transaction};

use crate::error::Result;

/// Question rows inserted by a transaction and not yet sent, as columns.
#[derive(Debug, Default)]
pub struct QuestionColumns {
    /// `request_seq`.
    pub request_seq: Vec<i64>,
    /// `idx`.
    pub idx: Vec<i64>,
    /// `qid`.
    pub qid: Vec<String>,
    /// `question`.
    pub question: Vec<String>,
    /// `header`.
    pub header: Vec<Option<String>>,
    /// `detail`.
    pub detail: Vec<Option<String>>,
    /// `multi_select`.
    pub multi_select: Vec<bool>,
    /// `intent_kind`.
    pub intent_kind: Vec<Option<String>>,
    /// `intent_approve`.
    pub intent_approve: Vec<Option<String>>,
    /// `options` (JSON).
    pub options: Vec<String>,
}

impl QuestionColumns {
    /// How many rows are held.
    pub fn len(&self) -> usize {
        self.request_seq.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.request_seq.is_empty()
    }

    /// Forget the rows after the first `n`.
    pub fn truncate(&mut self, n: usize) {
        self.request_seq.truncate(n);
        self.idx.truncate(n);
        self.qid.truncate(n);
        self.question.truncate(n);
        self.header.truncate(n);
        self.detail.truncate(n);
        self.multi_select.truncate(n);
        self.intent_kind.truncate(n);
        self.intent_approve.truncate(n);
        self.options.truncate(n);
    }
}

/// Request rows (pending or rejected) inserted by a transaction and not yet sent, as
/// columns. The columns a row of one kind does not set are NULL (or the column's default,
/// `FALSE`, for the two flags).
#[derive(Debug, Default)]
pub struct RequestColumns {
    /// `seq`.
    pub seq: Vec<i64>,
    /// `id`.
    pub id: Vec<Option<String>>,
    /// `context`.
    pub context: Vec<String>,
    /// `status` (`pending` or `rejected`).
    pub status: Vec<&'static str>,
    /// `agent_id`.
    pub agent_id: Vec<Option<String>>,
    /// `agent_instance`.
    pub agent_instance: Vec<Option<String>>,
    /// `agent_lineage`.
    pub agent_lineage: Vec<Option<String>>,
    /// `body`.
    pub body: Vec<String>,
    /// `source`.
    pub source: Vec<String>,
    /// `require_provider`.
    pub require_provider: Vec<bool>,
    /// `deadline_ms`.
    pub deadline_ms: Vec<Option<i64>>,
    /// `created_ms`.
    pub created_ms: Vec<i64>,
    /// `finished_ms` (a rejection's `created_ms`).
    pub finished_ms: Vec<Option<i64>>,
    /// `error_code`.
    pub error_code: Vec<Option<String>>,
    /// `error_message`.
    pub error_message: Vec<Option<String>>,
    /// `outbox_pending`.
    pub outbox_pending: Vec<bool>,
    /// `origin`.
    pub origin: Vec<Option<String>>,
    /// `ladder` (the resolved deadline ladder, JSON).
    pub ladder: Vec<Option<String>>,
    /// `ladder_due_ms` (when its first rung falls due).
    pub ladder_due_ms: Vec<Option<i64>>,
    /// `quorum` (the quorum the request is held to, JSON).
    pub quorum: Vec<Option<String>>,
}

impl RequestColumns {
    /// How many rows are held.
    pub fn len(&self) -> usize {
        self.seq.len()
    }

    /// Whether none is.
    pub fn is_empty(&self) -> bool {
        self.seq.is_empty()
    }

    /// Forget the rows after the first `n`.
    pub fn truncate(&mut self, n: usize) {
        self.seq.truncate(n);
        self.id.truncate(n);
        self.context.truncate(n);
        self.status.truncate(n);
        self.agent_id.truncate(n);
        self.agent_instance.truncate(n);
        self.agent_lineage.truncate(n);
        self.body.truncate(n);
        self.source.truncate(n);
        self.require_provider.truncate(n);
        self.deadline_ms.truncate(n);
        self.created_ms.truncate(n);
        self.finished_ms.truncate(n);
        self.error_code.truncate(n);
        self.error_message.truncate(n);
        self.outbox_pending.truncate(n);
        self.origin.truncate(n);
        self.ladder.truncate(n);
        self.ladder_due_ms.truncate(n);
        self.quorum.truncate(n);
    }
}

/// How many rows a session holds, to return to when a savepoint is rolled back.
#[derive(Debug, Clone, Copy, Default)]
pub struct Held {
    requests: usize,
    questions: usize,
}

/// A write's transaction, with the rows it holds unsent (see the module doc). The
/// statement methods are the transaction's own, each sending the held rows first.
pub struct Session<'c> {
    tx: Transaction<'c>,
    /// Request rows not yet sent.
    pub(super) requests: RequestColumns,
    /// Question rows not yet sent.
    pub(super) questions: QuestionColumns,
    /// The next request row number, once counted under the row-number lock.
    next_seq: Option<i64>,
}

impl<'c> Session<'c> {
    /// The session of `tx`, holding nothing.
    pub fn new(tx: Transaction<'c>) -> Session<'c> {
        Session {
            tx,
            requests: RequestColumns::default(),
            questions: QuestionColumns::default(),
            next_seq: None,
        }
    }

    /// What is held now.
    pub fn held(&self) -> Held {
        Held {
            requests: self.requests.len(),
            questions: self.questions.len(),
        }
    }

    /// A savepoint taken when `held` was held has been (or is about to be) rolled back:
    /// forget the rows held since, and the row count (rows sent since are gone too).
    pub fn forget_since(&mut self, held: Held) {
        self.requests.truncate(held.requests);
        self.questions.truncate(held.questions);
        self.next_seq = None;
    }

    /// The number of the next request row: the largest + 1, read once (sending what is
    /// held first) and counted here after. Call it only under [`super::tx::ROWS_LOCK`].
    pub fn next_request_seq(&mut self) -> Result<i64> {
        let next = match self.next_seq {
            Some(n) => n,
            None => self
                .query_typed_one("SELECT COALESCE(MAX(seq), 0) + 1 FROM requests", &[])?
                .try_get(0)?,
        };
        self.next_seq = Some(next + 1);
        Ok(next)
    }

    /// Send the held rows: requests and questions in one statement (nothing when none is
    /// held). The rows are taken first, so a failed send leaves nothing held (the write
    /// fails with it).
    pub fn flush(&mut self) -> Result<()> {
        if self.requests.is_empty() && self.questions.is_empty() {
            return Ok(());
        }
        let r = std::mem::take(&mut self.requests);
        let q = std::mem::take(&mut self.questions);
        // With their parameter types: one round trip, however many rows. The questions'
        // reference to their request is checked at the commit (deferred).
        self.tx.execute_typed(
            "WITH r AS (
               INSERT INTO requests (seq, id, context, status, agent_id, agent_instance, agent_lineage,
                                     body, source, require_provider, deadline_ms, created_ms, finished_ms,
                                     error_code, error_message, outbox_pending, origin, ladder,
                                     ladder_due_ms, quorum)
               SELECT * FROM UNNEST($1::int8[], $2::text[], $3::text[], $4::text[], $5::text[],
                                    $6::text[], $7::text[], $8::text[], $9::text[], $10::bool[],
                                    $11::int8[], $12::int8[], $13::int8[], $14::text[], $15::text[],
                                    $16::bool[], $17::text[], $18::text[], $19::int8[], $20::text[]))
             INSERT INTO questions (request_seq, idx, qid, question, header, detail, multi_select,
                                    intent_kind, intent_approve, options)
             SELECT * FROM UNNEST($21::int8[], $22::int8[], $23::text[], $24::text[], $25::text[],
                                  $26::text[], $27::bool[], $28::text[], $29::text[], $30::text[])",
            &[
                (&r.seq, Type::INT8_ARRAY),
                (&r.id, Type::TEXT_ARRAY),
                (&r.context, Type::TEXT_ARRAY),
                (&r.status, Type::TEXT_ARRAY),
                (&r.agent_id, Type::TEXT_ARRAY),
                (&r.agent_instance, Type::TEXT_ARRAY),
                (&r.agent_lineage, Type::TEXT_ARRAY),
                (&r.body, Type::TEXT_ARRAY),
                (&r.source, Type::TEXT_ARRAY),
                (&r.require_provider, Type::BOOL_ARRAY),
                (&r.deadline_ms, Type::INT8_ARRAY),
                (&r.created_ms, Type::INT8_ARRAY),
                (&r.finished_ms, Type::INT8_ARRAY),
                (&r.error_code, Type::TEXT_ARRAY),
                (&r.error_message, Type::TEXT_ARRAY),
                (&r.outbox_pending, Type::BOOL_ARRAY),
                (&r.origin, Type::TEXT_ARRAY),
                (&r.ladder, Type::TEXT_ARRAY),
                (&r.ladder_due_ms, Type::INT8_ARRAY),
                (&r.quorum, Type::TEXT_ARRAY),
                (&q.request_seq, Type::INT8_ARRAY),
                (&q.idx, Type::INT8_ARRAY),
                (&q.qid, Type::TEXT_ARRAY),
                (&q.question, Type::TEXT_ARRAY),
                (&q.header, Type::TEXT_ARRAY),
                (&q.detail, Type::TEXT_ARRAY),
                (&q.multi_select, Type::BOOL_ARRAY),
                (&q.intent_kind, Type::TEXT_ARRAY),
                (&q.intent_approve, Type::TEXT_ARRAY),
                (&q.options, Type::TEXT_ARRAY),
            ],
        )?;
        Ok(())
    }

    /// The transaction, after sending what is held: for a read or a write that takes any
    /// client.
    pub fn client(&mut self) -> Result<&mut Transaction<'c>> {
        self.flush()?;
        Ok(&mut self.tx)
    }

    /// The transaction without sending what is held: only for statements on tables a held
    /// row never touches (the registry, the leases), and for the rollback to a savepoint
    /// after [`Session::forget_since`].
    pub fn beside_held(&mut self) -> &mut Transaction<'c> {
        &mut self.tx
    }

    /// Send what is held, then commit.
    pub fn commit(mut self) -> Result<()> {
        self.flush()?;
        Ok(self.tx.commit()?)
    }

    /// [`Transaction::execute`], after sending what is held.
    pub fn execute<T>(&mut self, query: &T, params: &[&(dyn ToSql + Sync)]) -> Result<u64>
    where
        T: ?Sized + ToStatement,
    {
        Ok(self.client()?.execute(query, params)?)
    }

    /// [`Transaction::execute_typed`], after sending what is held.
    pub fn execute_typed(
        &mut self,
        query: &str,
        params: &[(&(dyn ToSql + Sync), Type)],
    ) -> Result<u64> {
        Ok(self.client()?.execute_typed(query, params)?)
    }

    /// [`Transaction::query`], after sending what is held.
    pub fn query<T>(&mut self, query: &T, params: &[&(dyn ToSql + Sync)]) -> Result<Vec<Row>>
    where
        T: ?Sized + ToStatement,
    {
        Ok(self.client()?.query(query, params)?)
    }

    /// [`Transaction::query_one`], after sending what is held.
    pub fn query_one<T>(&mut self, query: &T, params: &[&(dyn ToSql + Sync)]) -> Result<Row>
    where
        T: ?Sized + ToStatement,
    {
        Ok(self.client()?.query_one(query, params)?)
    }

    /// [`Transaction::query_opt`], after sending what is held.
    pub fn query_opt<T>(&mut self, query: &T, params: &[&(dyn ToSql + Sync)]) -> Result<Option<Row>>
    where
        T: ?Sized + ToStatement,
    {
        Ok(self.client()?.query_opt(query, params)?)
    }

    /// [`Transaction::query_typed`], after sending what is held.
    pub fn query_typed(
        &mut self,
        query: &str,
        params: &[(&(dyn ToSql + Sync), Type)],
    ) -> Result<Vec<Row>> {
        Ok(self.client()?.query_typed(query, params)?)
    }

    /// [`Transaction::query_typed_one`], after sending what is held.
    pub fn query_typed_one(
        &mut self,
        query: &str,
        params: &[(&(dyn ToSql + Sync), Type)],
    ) -> Result<Row> {
        Ok(self.client()?.query_typed_one(query, params)?)
    }

    /// [`Transaction::query_typed_opt`], after sending what is held.
    pub fn query_typed_opt(
        &mut self,
        query: &str,
        params: &[(&(dyn ToSql + Sync), Type)],
    ) -> Result<Option<Row>> {
        Ok(self.client()?.query_typed_opt(query, params)?)
    }

    /// [`Transaction::batch_execute`], after sending what is held.
    pub fn batch_execute(&mut self, query: &str) -> Result<()> {
        Ok(self.client()?.batch_execute(query)?)
    }
}

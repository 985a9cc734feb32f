//! The transaction as the statements of a write see it: new request and question rows are
//! held here, not sent, and every statement sent through it sends them first.
//!
//! Why: an inbox batch inserts a request row, its questions and its event per file, and
//! through the blocking client each statement costs a round trip (about a millisecond on
//! a small machine, against a fifth of that in server work). Held, a batch's rows go as
//! one binary `COPY` per table (requests, then questions), and its events as one statement
//! at the commit ([`super::events::flush`]). `COPY` rather than one `INSERT … SELECT FROM
//! UNNEST` of column arrays: the server decodes no arrays and plans no statement, and the
//! rows stream to it while they are encoded; measured side by side, a burst's commits took
//! 7% less time (docs/PERFORMANCE.md), for two more round trips a batch.
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
//! - **The index still has the last word.** The send is a plain `COPY`, an insert to the
//!   server (constraints, indexes and triggers hold): a row whose id an accepted row holds
//!   fails the whole write (it rolls back, all or nothing) rather than vanish beside its
//!   event. Under the lock the rule looked the id up first, so it does not happen.

use postgres::types::{ToSql, Type};
use postgres::{Row, ToStatement, Transaction};

use super::copy::CopyRows;
use crate::error::Result;

/// The types of the request columns a held row sets, in the order [`Session::flush`]
/// copies them.
const REQUEST_TYPES: &[Type] = &[
    Type::INT8,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::BOOL,
    Type::INT8,
    Type::INT8,
    Type::INT8,
    Type::TEXT,
    Type::TEXT,
    Type::BOOL,
    Type::TEXT,
    Type::TEXT,
    Type::INT8,
    Type::TEXT,
];

/// The types of the question columns, in the order [`Session::flush`] copies them.
const QUESTION_TYPES: &[Type] = &[
    Type::INT8,
    Type::INT8,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
    Type::BOOL,
    Type::TEXT,
    Type::TEXT,
    Type::TEXT,
];

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

    /// Send the held rows: a binary `COPY` of the requests, then one of the questions
    /// (nothing when none is held). The rows are taken first, so a failed send leaves
    /// nothing held (the write fails with it). The questions' reference to their request
    /// is checked at the commit (deferred).
    pub fn flush(&mut self) -> Result<()> {
        if self.requests.is_empty() && self.questions.is_empty() {
            return Ok(());
        }
        let r = std::mem::take(&mut self.requests);
        let q = std::mem::take(&mut self.questions);
        if !r.is_empty() {
            let mut rows = CopyRows::new(REQUEST_TYPES);
            for i in 0..r.len() {
                rows.row(&[
                    &r.seq[i],
                    &r.id[i],
                    &r.context[i],
                    &r.status[i],
                    &r.agent_id[i],
                    &r.agent_instance[i],
                    &r.agent_lineage[i],
                    &r.body[i],
                    &r.source[i],
                    &r.require_provider[i],
                    &r.deadline_ms[i],
                    &r.created_ms[i],
                    &r.finished_ms[i],
                    &r.error_code[i],
                    &r.error_message[i],
                    &r.outbox_pending[i],
                    &r.origin[i],
                    &r.ladder[i],
                    &r.ladder_due_ms[i],
                    &r.quorum[i],
                ])?;
            }
            rows.send(
                &mut self.tx,
                "COPY requests (seq, id, context, status, agent_id, agent_instance, agent_lineage,
                                body, source, require_provider, deadline_ms, created_ms, finished_ms,
                                error_code, error_message, outbox_pending, origin, ladder,
                                ladder_due_ms, quorum) FROM STDIN (FORMAT binary)",
            )?;
        }
        if !q.is_empty() {
            let mut rows = CopyRows::new(QUESTION_TYPES);
            for i in 0..q.len() {
                rows.row(&[
                    &q.request_seq[i],
                    &q.idx[i],
                    &q.qid[i],
                    &q.question[i],
                    &q.header[i],
                    &q.detail[i],
                    &q.multi_select[i],
                    &q.intent_kind[i],
                    &q.intent_approve[i],
                    &q.options[i],
                ])?;
            }
            rows.send(
                &mut self.tx,
                "COPY questions (request_seq, idx, qid, question, header, detail, multi_select,
                                 intent_kind, intent_approve, options) FROM STDIN (FORMAT binary)",
            )?;
        }
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

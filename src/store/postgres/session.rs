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

use super::copy::{CopyRows, Mark};
use crate::error::Result;
use crate::store::driver::requests::{NewQuestion, NewRejection, NewRequest};

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

/// A request row to hold, with the number it was given: a pending request or a rejection
/// (the columns a row of one kind does not set are NULL, or the column's default, `FALSE`,
/// for the two flags).
pub enum HeldRequest<'a> {
    /// An accepted request, `pending`.
    Pending(i64, &'a NewRequest<'a>),
    /// A rejected input.
    Rejected(i64, &'a NewRejection<'a>),
}

/// The `COPY` of the held request rows: its columns are [`REQUEST_TYPES`]', in order.
const COPY_REQUESTS: &str = "COPY requests (seq, id, context, status, agent_id, agent_instance,
        agent_lineage, body, source, require_provider, deadline_ms, created_ms, finished_ms,
        error_code, error_message, outbox_pending, origin, ladder, ladder_due_ms, quorum)
    FROM STDIN (FORMAT binary)";

/// The `COPY` of the held question rows: its columns are [`QUESTION_TYPES`]', in order.
const COPY_QUESTIONS: &str = "COPY questions (request_seq, idx, qid, question, header, detail,
        multi_select, intent_kind, intent_approve, options)
    FROM STDIN (FORMAT binary)";

/// How much a session holds, to return to when a savepoint is rolled back.
#[derive(Debug, Clone, Copy, Default)]
pub struct Held {
    requests: Mark,
    questions: Mark,
}

/// A write's transaction, with the rows it holds unsent (see the module doc). The
/// statement methods are the transaction's own, each sending the held rows first.
pub struct Session<'c> {
    tx: Transaction<'c>,
    /// Request rows not yet sent, encoded for their `COPY` as they are held.
    requests: CopyRows,
    /// Question rows not yet sent, likewise.
    questions: CopyRows,
    /// The next request row number, once counted under the row-number lock.
    next_seq: Option<i64>,
}

impl<'c> Session<'c> {
    /// The session of `tx`, holding nothing.
    pub fn new(tx: Transaction<'c>) -> Session<'c> {
        Session {
            tx,
            requests: CopyRows::new(REQUEST_TYPES),
            questions: CopyRows::new(QUESTION_TYPES),
            next_seq: None,
        }
    }

    /// What is held now.
    pub fn held(&self) -> Held {
        Held {
            requests: self.requests.mark(),
            questions: self.questions.mark(),
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
        let r = std::mem::replace(&mut self.requests, CopyRows::new(REQUEST_TYPES));
        let q = std::mem::replace(&mut self.questions, CopyRows::new(QUESTION_TYPES));
        if !r.is_empty() {
            r.send(&mut self.tx, COPY_REQUESTS)?;
        }
        if !q.is_empty() {
            q.send(&mut self.tx, COPY_QUESTIONS)?;
        }
        Ok(())
    }

    /// Hold a request row recording `origin` (sent at the next statement or the commit,
    /// see the module doc), encoded now: nothing of it is copied but into the `COPY`'s
    /// buffer.
    pub fn hold_request(&mut self, row: HeldRequest<'_>, origin: Option<&str>) -> Result<()> {
        match row {
            HeldRequest::Pending(seq, r) => self.requests.row(&[
                &seq,
                &Some(r.id),
                &r.context,
                &"pending",
                &r.agent_id,
                &r.agent_instance,
                &r.agent_lineage,
                &r.body,
                &r.source,
                &r.require_provider,
                &r.deadline_ms,
                &r.created_ms,
                &None::<i64>,
                &None::<&str>,
                &None::<&str>,
                &false,
                &origin,
                &r.ladder,
                &r.ladder_due_ms,
                &r.quorum,
            ]),
            HeldRequest::Rejected(seq, r) => self.requests.row(&[
                &seq,
                &r.id,
                &r.context,
                &"rejected",
                &None::<&str>,
                &None::<&str>,
                &None::<&str>,
                &r.body,
                &r.source,
                &false,
                &None::<i64>,
                &r.now,
                &Some(r.now),
                &Some(r.error_code),
                &Some(r.error_message),
                &r.outbox_pending,
                &origin,
                &None::<&str>,
                &None::<i64>,
                &None::<&str>,
            ]),
        }
    }

    /// Hold a question row, as [`Session::hold_request`] does.
    pub fn hold_question(&mut self, q: &NewQuestion<'_>) -> Result<()> {
        self.questions.row(&[
            &q.request_seq,
            &q.idx,
            &q.qid,
            &q.question,
            &q.header,
            &q.detail,
            &q.multi_select,
            &q.intent_kind,
            &q.intent_approve,
            &q.options,
        ])
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

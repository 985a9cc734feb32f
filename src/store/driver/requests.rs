//! The statements of one concern. Asking: accepting a request, recording a rejection; and
//! the reads of one request and of lists.
//!
//! See [`super`] for what a statement is and is not.

use crate::clock::Millis;
use crate::core::lifecycle::RequestRow;
use crate::error::Result;
use crate::store::types::ListFilter;

/// A row holding a request id (accepted or rejected), as the accept reads it.
#[derive(Debug, Clone)]
pub struct IdRow {
    /// The stored status (`rejected` for a rejection).
    pub status: String,
    /// The row's context.
    pub context: String,
    /// The row's body (the canonical request of an accepted one).
    pub body: String,
}

/// A new `pending` request row.
#[derive(Debug, Clone)]
pub struct NewRequest<'a> {
    /// The `id` column.
    pub id: &'a str,
    /// The `context` column.
    pub context: &'a str,
    /// The `agent_id` column.
    pub agent_id: Option<&'a str>,
    /// The `agent_instance` column.
    pub agent_instance: Option<&'a str>,
    /// The `agent_lineage` column.
    pub agent_lineage: Option<&'a str>,
    /// The `body` column.
    pub body: &'a str,
    /// The `source` column.
    pub source: &'a str,
    /// The `require_provider` column.
    pub require_provider: bool,
    /// The `deadline_ms` column.
    pub deadline_ms: Option<Millis>,
    /// The `created_ms` column.
    pub created_ms: Millis,
    /// The `ladder` column: the resolved ladder as JSON.
    pub ladder: Option<&'a str>,
    /// The `ladder_due_ms` column: when its first rung falls due.
    pub ladder_due_ms: Option<Millis>,
    /// The `quorum` column: the quorum the request is held to, as JSON.
    pub quorum: Option<&'a str>,
}

/// A new row of `questions`, of the request at `request_seq`.
#[derive(Debug, Clone)]
pub struct NewQuestion<'a> {
    /// The `request_seq` column.
    pub request_seq: i64,
    /// The `idx` column.
    pub idx: i64,
    /// The `qid` column.
    pub qid: &'a str,
    /// The `question` column.
    pub question: &'a str,
    /// The `header` column.
    pub header: Option<&'a str>,
    /// The `detail` column.
    pub detail: Option<&'a str>,
    /// The `multi_select` column.
    pub multi_select: bool,
    /// The `intent_kind` column.
    pub intent_kind: Option<&'a str>,
    /// The `intent_approve` column.
    pub intent_approve: Option<&'a str>,
    /// The options, as JSON.
    pub options: &'a str,
}

/// A new `rejected` request row (created and finished at `now`).
#[derive(Debug, Clone)]
pub struct NewRejection<'a> {
    /// The `id` column.
    pub id: Option<&'a str>,
    /// The `context` column.
    pub context: &'a str,
    /// The `body` column.
    pub body: &'a str,
    /// The `source` column.
    pub source: &'a str,
    /// The `now` column.
    pub now: Millis,
    /// The `error_code` column.
    pub error_code: &'a str,
    /// The `error_message` column.
    pub error_message: &'a str,
    /// The `outbox_pending` column.
    pub outbox_pending: bool,
}

/// The statements this concern's queue rules need from a write transaction.
pub trait RequestStatements {
    /// Before the checks that precede a new request or lease row: wait for every other
    /// write that numbers rows to commit, and keep them waiting until this one does, so
    /// the checks (an id already used, a live lease in the context) see every row that
    /// could conflict and row numbers grow in commit order. A driver whose writers are
    /// alone anyway does nothing.
    fn lock_row_numbers(&mut self) -> Result<()>;

    /// Before a batch of asks with these ids: read their rows at once, so the lookups of
    /// each input ([`RequestStatements::rows_with_id`],
    /// [`RequestStatements::newest_rejection_since`]) need no round trip of their own. A
    /// driver whose statements cost no round trip does nothing. Changes nothing.
    fn preload_rows_of_ids(&mut self, ids: &[&str]) -> Result<()>;

    /// Every row (accepted or rejected) holding `id`.
    fn rows_with_id(&mut self, id: &str) -> Result<Vec<IdRow>>;

    /// Clear the outbox flag of the rejections of `id` that still have it.
    fn unset_outbox_of_rejections_of_id(&mut self, id: &str) -> Result<()>;

    /// Insert a `pending` request; its seq, or `None` when the id is taken (the unique
    /// index said no). A driver that holds its new rows and sends them later (PostgreSQL)
    /// numbers the row at once and lets the index refuse a taken id when it sends them,
    /// failing the whole write: the rules call this only after looking the id up under
    /// [`RequestStatements::lock_row_numbers`], so neither happens in a rule.
    fn insert_pending_request(&mut self, r: &NewRequest<'_>) -> Result<Option<i64>>;

    /// Insert one question of a request.
    fn insert_question(&mut self, q: &NewQuestion<'_>) -> Result<()>;

    /// Whether an accepted (not rejected) request holds `id`.
    fn accepted_request_exists(&mut self, id: &str) -> Result<bool>;

    /// Whether this very rejection (same id, source, body and code) is recorded already.
    fn rejection_exists(
        &mut self,
        id: Option<&str>,
        source: &str,
        body: &str,
        code: &str,
    ) -> Result<bool>;

    /// Insert a `rejected` request row; its seq.
    fn insert_rejected_request(&mut self, r: &NewRejection<'_>) -> Result<i64>;

    /// The code and message of the newest rejection of `id` from `source` with `body`,
    /// recorded at or after `since`.
    fn newest_rejection_since(
        &mut self,
        id: &str,
        source: &str,
        body: &str,
        since: Millis,
    ) -> Result<Option<(Option<String>, Option<String>)>>;
}

/// The reads of requests outside a write (`show`, `list`, `wait`).
pub trait RequestReads {
    /// The accepted request `id` (not a rejection).
    fn request(&mut self, id: &str) -> Result<Option<RequestRow>>;

    /// The request `id`, or else its newest rejection.
    fn request_or_rejection(&mut self, id: &str) -> Result<Option<RequestRow>>;

    /// Requests by filter.
    fn requests(&mut self, filter: &ListFilter) -> Result<Vec<RequestRow>>;
}

//! The statements of one concern. Claims, answers, cancels and aborts of requests, and the answer files.
//!
//! See [`super`] for what a statement is and is not.

use crate::clock::Millis;
use crate::core::lifecycle::{RequestRow, Status};
use crate::error::Result;
use crate::protocol::error::Code;

/// The lease a fenced update is made by: it matches no row unless this lease is live at
/// `now` (not ended, not expired) and still of this generation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fence {
    /// The lease's row id.
    pub lease_id: i64,
    /// Its generation in its context.
    pub generation: i64,
}

/// What an answer writes on the request row.
#[derive(Debug, Clone, Copy)]
pub struct AnsweredRow<'a> {
    /// The request's seq.
    pub seq: i64,
    /// The answer in question order, as JSON.
    pub answer_json: &'a str,
    /// The request's decision, if its questions make one.
    pub decision: Option<&'a str>,
    /// Who answered (the lease's provider name).
    pub provider: &'a str,
    /// The approvers of a request with a quorum (a JSON array); `None` for any other.
    pub approvers: Option<&'a str>,
    /// The edits the answer made (edit-then-approve), as the JSON of
    /// [`crate::protocol::types::Edits`]; `None` when it edited nothing.
    pub edits_json: Option<&'a str>,
    /// The away person the answer was made for by their delegate, if any.
    pub on_behalf_of: Option<&'a str>,
}

/// A reviewer's vote on a request with a quorum, for the `votes` table.
#[derive(Debug, Clone, Copy)]
pub struct NewVote<'a> {
    /// The request's seq.
    pub request_seq: i64,
    /// The identity that votes (`web:NAME`, `provider:NAME`, `mcp:CLIENT`, ...).
    pub voter: &'a str,
    /// The person it belongs to.
    pub person: &'a str,
    /// The answer voted for, in question order, as JSON.
    pub answer_json: &'a str,
    /// The request-level decision that answer makes, if any.
    pub decision: Option<&'a str>,
    /// The lease the vote was made through, if one (a vote needs none).
    pub lease_id: Option<i64>,
    /// The away person the vote was cast for by their delegate, if any.
    pub for_person: Option<&'a str>,
}

/// What an answer writes on one question row.
#[derive(Debug, Clone, Copy)]
pub struct AnsweredQuestion<'a> {
    /// The request's seq.
    pub request_seq: i64,
    /// The question's index in the request.
    pub idx: i64,
    /// The selected labels, as a JSON array.
    pub selected_json: &'a str,
    /// The free text, if any.
    pub custom: Option<&'a str>,
    /// The question's decision, if it makes one.
    pub decision: Option<&'a str>,
}

/// What an error end (a cancel, an abort, a deadline) writes on the request row.
#[derive(Debug, Clone, Copy)]
pub struct ErrorEnd<'a> {
    /// The request's seq.
    pub seq: i64,
    /// `cancelled`, `aborted`, ...
    pub status: Status,
    /// The error's code.
    pub code: Code,
    /// The error's message.
    pub message: &'a str,
    /// Who ended it on the provider side, if anyone.
    pub provider: Option<&'a str>,
    /// The lease recorded as the request's (kept as it was when `None`).
    pub lease_id: Option<i64>,
}

/// The reads of the answering rules that also run outside a write.
pub trait AnswerReads {
    /// The id of the first request of `context` after feed position `after` that lease
    /// `lease_id` may work on: pending, or claimed by it.
    fn first_open_for_lease_after(
        &mut self,
        context: &str,
        lease_id: i64,
        after: i64,
    ) -> Result<Option<String>>;
}

/// The statements this concern's queue rules need from a write transaction.
pub trait AnswerStatements {
    /// The accepted (not rejected) request `id`, whatever its status.
    fn answer_target(&mut self, id: &str) -> Result<Option<RequestRow>>;

    /// The id of the oldest pending request of `context` (PostgreSQL: skipping rows
    /// another transaction holds).
    fn oldest_pending_id(&mut self, context: &str) -> Result<Option<String>>;

    /// Mark request `seq` claimed by the fence's lease at `now`, if it is still pending
    /// and the lease is live; whether it did.
    fn set_claimed_if_pending_and_lease_live(
        &mut self,
        seq: i64,
        fence: Fence,
        now: Millis,
    ) -> Result<bool>;

    /// Mark the request answered by the fence's lease at `now` (claimed now if it was not
    /// yet, queued for the outbox), if it is still open, unclaimed or claimed by this
    /// lease, and the lease is live; whether it did.
    fn set_answered_if_open_claimed_by_and_lease_live(
        &mut self,
        row: AnsweredRow<'_>,
        fence: Fence,
        now: Millis,
    ) -> Result<bool>;

    /// Answer open request `row.seq` with the vote that met its quorum, cast without a
    /// lease (a vote takes none): guarded by the open states only, so of racing writers
    /// one finishes it. The row keeps no claiming lease (a claim reserved it for one
    /// provider; the quorum's voters decided it).
    fn set_answered_by_vote_if_open(&mut self, row: AnsweredRow<'_>, now: Millis) -> Result<bool>;

    /// Lock the row of request `seq` for a vote if it is still open (PostgreSQL: `FOR
    /// UPDATE`, so the votes of one request are counted one writer at a time and the
    /// writer that meets the quorum sees every vote before it; SQLite's one writer needs
    /// no lock); whether it is open.
    fn lock_request_if_open_for_vote(&mut self, seq: i64) -> Result<bool>;

    /// Insert `vote` at `now` unless this identity or this person already voted on the
    /// request (the unique keys on `(request_seq, voter)` and `(request_seq, person)`,
    /// `ON CONFLICT DO NOTHING`); whether it was inserted.
    fn insert_vote_if_voter_new(&mut self, vote: NewVote<'_>, now: Millis) -> Result<bool>;

    /// The votes of request `seq`, in the order they were cast (time, then voter).
    fn votes_of_request(&mut self, seq: i64) -> Result<Vec<crate::core::quorum::Vote>>;

    /// Record the answer of one question.
    fn set_question_answer(&mut self, q: AnsweredQuestion<'_>) -> Result<()>;

    /// Whether the fence's lease is live at `now` (not ended, not expired, this generation).
    fn is_fence_live(&mut self, fence: Fence, now: Millis) -> Result<bool>;

    /// End the request with an error at `now` (queued for the outbox), if it is still
    /// open; whether it did.
    fn set_error_end_if_open(&mut self, end: ErrorEnd<'_>, now: Millis) -> Result<bool>;

    /// Open the savepoint that one answer file is applied under.
    fn savepoint_answer_file(&mut self) -> Result<()>;

    /// Keep what was done since [`Self::savepoint_answer_file`].
    fn release_answer_file(&mut self) -> Result<()>;

    /// Undo what was done since [`Self::savepoint_answer_file`] (and the events it
    /// appended), and close the savepoint.
    fn rollback_answer_file(&mut self) -> Result<()>;
}

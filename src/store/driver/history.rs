//! The statements of one concern. The audit's reads: the request history with its filters,
//! and the figures of `stats` and of the open queue.
//!
//! See [`super`] for what a statement is and is not. What the rows become (times as RFC
//! 3339, waits, statuses and decisions parsed, the figures summed and grouped) is
//! [`crate::store::queue::history`]; a driver turns a [`HistoryFilter`] into its SQL and
//! maps the rows as stored.

use std::collections::BTreeMap;

use crate::clock::Millis;
use crate::error::Result;
use crate::store::types::HistoryFilter;

/// One request row of the history, as stored.
#[derive(Debug, Clone)]
pub struct HistoryRecord {
    /// Its position (`requests.seq`).
    pub seq: i64,
    /// Its id (none for a rejection without one).
    pub id: Option<String>,
    /// Its context.
    pub context: String,
    /// The asking agent.
    pub agent: Option<String>,
    /// The agent's lineage at acceptance.
    pub lineage: Option<String>,
    /// When it was accepted.
    pub created_ms: Millis,
    /// When it ended.
    pub finished_ms: Option<Millis>,
    /// Its status, as stored.
    pub status: String,
    /// Its error code.
    pub code: Option<String>,
    /// Its request-level decision, as stored.
    pub decision: Option<String>,
    /// The provider that answered or cancelled it.
    pub provider: Option<String>,
    /// For a request with a quorum, its votes as a JSON array of `{voter, person,
    /// decision}` in the order cast; `None` for any other.
    pub votes: Option<String>,
}

/// One question of a history row, as stored.
#[derive(Debug, Clone)]
pub struct HistoryQuestionRecord {
    /// The question's id.
    pub qid: String,
    /// Its text.
    pub question: String,
    /// Its intent's kind.
    pub intent: Option<String>,
    /// The selected labels, as stored (JSON text).
    pub selected: Option<String>,
    /// The custom text.
    pub custom: Option<String>,
    /// The decision, as stored.
    pub decision: Option<String>,
}

/// The reads of the history and the figures, on a read connection.
pub trait HistoryReads {
    /// The request rows matching `filter`, newest first (`created_ms`, then `seq`), at most
    /// `filter.limit` of them (a negative limit or none: all).
    fn history_rows(&mut self, filter: &HistoryFilter) -> Result<Vec<HistoryRecord>>;

    /// The questions of each request row `seqs` names, in question order, one list per
    /// seq in the order given.
    fn questions_of_rows(&mut self, seqs: &[i64]) -> Result<Vec<Vec<HistoryQuestionRecord>>>;

    /// How many requests created at or after `since` have each status.
    fn count_requests_by_status_since(&mut self, since: Millis) -> Result<BTreeMap<String, i64>>;

    /// How many rejections created at or after `since` carry each error code.
    fn count_rejections_by_code_since(&mut self, since: Millis) -> Result<BTreeMap<String, i64>>;

    /// How many questions of requests created at or after `since` were approved, and how
    /// many declined.
    fn count_decisions_since(&mut self, since: Millis) -> Result<(i64, i64)>;

    /// Call `visit` with the context, provider and wait (finished minus created, at least
    /// 0) of each answered request created at or after `since`, in no order.
    fn each_answered_wait_since(
        &mut self,
        since: Millis,
        visit: &mut dyn FnMut(String, Option<String>, Millis),
    ) -> Result<()>;

    /// How many requests are pending or claimed.
    fn count_open_requests(&mut self) -> Result<i64>;

    /// The oldest open request (by creation, then seq): its id and creation.
    fn oldest_open_request(&mut self) -> Result<Option<(String, Millis)>>;

    /// (status, context, count) of the open requests, by status then context.
    fn count_open_by_status_context(&mut self) -> Result<Vec<(String, String, i64)>>;

    /// When the oldest pending request was accepted.
    fn oldest_pending_created_ms(&mut self) -> Result<Option<Millis>>;
}

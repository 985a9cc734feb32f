//! The statements of one concern. The audit: the reads `audit verify` checks the record
//! with (the chain, the anchors, the rows against the log).
//!
//! See [`super`] for what a statement is and is not. The checks and their order are
//! [`crate::store::queue::audit`]; a driver reads, in one snapshot it opens itself.

use std::collections::HashMap;

use crate::core::lifecycle::RequestRow;
use crate::error::Result;
use crate::store::records::QuestionRow;
use crate::store::types::Event;

/// An event as stored: the parsed [`Event`] and its data text as stored (what the hash
/// covers; parsing and printing it again need not give the same text).
#[derive(Debug, Clone)]
pub struct StoredEvent {
    /// The event.
    pub event: Event,
    /// Its `data` column, as stored.
    pub data: String,
}

/// The reads `audit verify` needs, on a read snapshot the driver opened.
pub trait AuditReads {
    /// The database's own check of its storage, where it has one: `None` when it passes
    /// (or the database has none), else the sentence `verify` reports, naming the check.
    fn storage_check_failure(&mut self) -> Result<Option<String>>;

    /// How many `prune_guard` rows are committed (a prune removes its own before it
    /// commits).
    fn count_prune_guard_rows(&mut self) -> Result<i64>;

    /// The oldest event's seq (`None`: the log is empty).
    fn oldest_event_seq(&mut self) -> Result<Option<i64>>;

    /// The data of the newest `pruned` event (a checkpoint), if any: the JSON, or the
    /// stored text as a JSON string when it does not parse.
    fn newest_checkpoint_data(&mut self) -> Result<Option<serde_json::Value>>;

    /// Every event, oldest first, with its data text as stored.
    fn all_stored_events(&mut self) -> Result<Vec<StoredEvent>>;

    /// The hash of the event at `seq`, if the log holds it.
    fn event_hash_at(&mut self, seq: i64) -> Result<Option<String>>;

    /// The newest event's seq (0 for an empty log).
    fn newest_event_seq(&mut self) -> Result<i64>;

    /// Every request row, oldest first.
    fn all_requests_oldest_first(&mut self) -> Result<Vec<RequestRow>>;

    /// Every question as `(requests.seq, question)`, by request then question order.
    fn all_questions(&mut self) -> Result<Vec<(i64, QuestionRow)>>;

    /// Each request row's stored `require_provider` flag, by `requests.seq`.
    fn require_provider_by_row(&mut self) -> Result<HashMap<i64, bool>>;

    /// Every vote as `(requests.seq, vote)`, by request, then in the order cast.
    fn all_votes(&mut self) -> Result<Vec<(i64, crate::core::quorum::Vote)>>;
}

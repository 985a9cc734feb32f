//! The statements of one concern. Retention: what a prune removes, and the record it leaves.
//!
//! See [`super`] for what a statement is and is not. The rule (what is old enough, which
//! prefix goes, the checkpoint) is [`crate::store::queue::prune`].

use crate::clock::Millis;
use crate::error::Result;
use crate::store::calls::ExportSink;

/// One event of the log as the prune's walk reads it.
#[derive(Debug, Clone)]
pub struct WalkEvent {
    /// Its position in the log.
    pub seq: i64,
    /// When it was appended.
    pub at_ms: Millis,
    /// Its kind, as stored.
    pub kind: String,
    /// The request it concerns, if any.
    pub request_id: Option<String>,
    /// Its data, as stored (JSON text).
    pub data: String,
    /// Its hash.
    pub hash: String,
}

/// One request row as the prune's walk reads it.
#[derive(Debug, Clone)]
pub struct WalkRow {
    /// Its position (`requests.seq`).
    pub seq: i64,
    /// Its id (none for a rejection without one).
    pub id: Option<String>,
    /// Its status, as stored.
    pub status: String,
    /// When it became final.
    pub finished_ms: Option<Millis>,
    /// Whether its outcome file is still to be written.
    pub outbox_pending: bool,
}

/// The next request row of the walk, in `seq` order (`None` past the last).
pub type NextRow<'a> = &'a mut dyn FnMut() -> Result<Option<WalkRow>>;

/// What the walk does with one event: `Ok(true)` to read the next, `Ok(false)` to stop.
pub type WalkVisit<'a> = &'a mut dyn FnMut(WalkEvent, NextRow<'_>) -> Result<bool>;

/// The statements this concern's queue rules need from a write transaction.
pub trait PruneStatements {
    /// The largest request row `seq` (0 when there is none).
    fn newest_request_seq(&mut self) -> Result<i64>;

    /// The data of the newest `pruned` event (a checkpoint), if any: the JSON, or the
    /// stored text as a JSON string when it does not parse.
    fn newest_checkpoint_data(&mut self) -> Result<Option<serde_json::Value>>;

    /// The oldest event's seq (`None`: the log is empty).
    fn oldest_event_seq(&mut self) -> Result<Option<i64>>;

    /// Read the log in `seq` order, calling `visit` with each event and a reader of the
    /// request rows in `seq` order beside it (two reads side by side, each pulled as the
    /// visit wants), until the log ends or `visit` says stop.
    fn walk_events_with_request_rows(&mut self, visit: WalkVisit<'_>) -> Result<()>;

    /// Send the request rows with `seq <= upto` to `sink`, in the export's format and order.
    fn export_requests_upto(&mut self, upto: i64, sink: ExportSink<'_>) -> Result<()>;

    /// Send the questions of request rows `<= upto` to `sink`, in the export's format and
    /// order.
    fn export_questions_upto(&mut self, upto: i64, sink: ExportSink<'_>) -> Result<()>;

    /// Send the events with `seq <= upto` to `sink`, in the export's format and order.
    fn export_events_upto(&mut self, upto: i64, sink: ExportSink<'_>) -> Result<()>;

    /// How many request rows have `seq <= upto`.
    fn count_requests_upto(&mut self, upto: i64) -> Result<u64>;

    /// How many questions belong to request rows `<= upto`.
    fn count_questions_upto(&mut self, upto: i64) -> Result<u64>;

    /// How many events have `seq <= upto`.
    fn count_events_upto(&mut self, upto: i64) -> Result<u64>;

    /// Allow the deletions of this prune: events up to `events_upto`, final requests
    /// finished before `before_ms` (the database's triggers check the `prune_guard` row).
    fn insert_prune_guard(&mut self, events_upto: i64, before_ms: Millis) -> Result<()>;

    /// Delete the questions of request rows `<= upto`; how many.
    fn delete_questions_upto(&mut self, upto: i64) -> Result<u64>;

    /// Delete the votes of the request rows up to `upto`; how many.
    fn delete_votes_upto(&mut self, upto: i64) -> Result<u64>;

    /// Delete the delivered rows of the deliveries outbox whose request is among the
    /// request rows up to `upto`; how many. Undelivered rows stay, to be sent.
    fn delete_delivered_deliveries_upto(&mut self, upto: i64) -> Result<u64>;

    /// Delete the Slack messages recorded for the request rows up to `upto`
    /// whose request has no undelivered delivery left; how many.
    fn delete_slack_messages_upto(&mut self, upto: i64) -> Result<u64>;

    /// Delete the Telegram messages recorded for the request rows up to `upto` whose
    /// request has no undelivered delivery left; how many.
    fn delete_telegram_messages_upto(&mut self, upto: i64) -> Result<u64>;
    /// Delete the devices reached recorded for the request rows up to `upto` whose
    /// delivery is gone (delivered and deleted); how many.
    fn delete_push_reached_upto(&mut self, upto: i64) -> Result<u64>;

    /// Delete the used mail links of the request rows up to `upto`; how many.
    fn delete_link_uses_upto(&mut self, upto: i64) -> Result<u64>;

    /// Delete the request rows with `seq <= upto`; how many.
    fn delete_requests_upto(&mut self, upto: i64) -> Result<u64>;

    /// Delete the events with `seq <= upto`; how many.
    fn delete_events_upto(&mut self, upto: i64) -> Result<u64>;

    /// Remove the `prune_guard` row (before the commit).
    fn delete_prune_guard(&mut self) -> Result<()>;

    /// Whether any request row holds `id`.
    fn request_id_exists(&mut self, id: &str) -> Result<bool>;
}

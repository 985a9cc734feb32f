//! The audit: history, stats, the events of a request, verifying the record, exporting it.

use std::path::PathBuf;

use crate::clock::Millis;
use crate::error::{Error, Result};
use crate::protocol::error::Code;
use crate::store::{Anchor, Event, ExportSink, HistoryFilter, HistoryRow, Stats, Store, Verified};

/// Requests with their questions, by filter.
pub fn history(store: &mut dyn Store, filter: &HistoryFilter) -> Result<Vec<HistoryRow>> {
    store.history(filter)
}

/// Counts, waits, approval rates since a time.
pub fn stats(store: &mut dyn Store, since: Option<Millis>) -> Result<Stats> {
    store.stats(since)
}

/// The events of request `id`; `NOT_FOUND` when there is no such request at all.
pub fn events(store: &mut dyn Store, id: &str) -> Result<Vec<Event>> {
    let list = store.events(id)?;
    if list.is_empty() && store.get_any(id)?.is_none() {
        return Err(Error::NotFound(id.to_string()));
    }
    Ok(list)
}

/// Verify the record against `anchors`; a break is `AUDIT_BROKEN`.
pub fn verify(store: &mut dyn Store, anchors: &[(PathBuf, Anchor)]) -> Result<Verified> {
    let v = store.verify(anchors)?;
    match &v.broken {
        Some(problem) => Err(Error::question(Code::AuditBroken, problem.clone())),
        None => Ok(v),
    }
}

/// Every record, in one snapshot, to `sink` as (type, fields).
pub fn export(store: &mut dyn Store, sink: ExportSink<'_>) -> Result<()> {
    store.export(sink)
}

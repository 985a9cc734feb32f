//! Retention: remove final requests finished before a cut, with their questions and the
//! prefix of the event log that concerns them, after exporting them (`dshq prune`).
//!
//! The log is a chain, so only a *prefix* of it can go: the removed prefix is summarised
//! by a `pruned` event appended in the same transaction, carrying the prefix's head (seq,
//! hash), and `audit verify` walks the chain from there ([`crate::store::chain`]). The
//! walk below reads the log from its start and stops at the cut, or at the first event of
//! a request that must stay (pending, claimed, finished after the cut, its outcome file not
//! written yet, or the newest request row). Every request whose creation event lies in the prefix is final and
//! finished before the cut, so it goes whole with its row; the events it still has after
//! the prefix (accepted before the stop, answered after it) stay in the log and their ids
//! are named by the checkpoint ([`Checkpoint::open`]), until a later prune takes them.
//! Rows and their creation events pair in insertion order, so the rows removed are
//! exactly a prefix of the rows, and `check_records` pairs what is left as before.
//!
//! The database's triggers refuse every deletion unless a `prune_guard` row allows it
//! (migration 0006), and even then only events up to the guard's seq and final requests
//! finished before its cut; the row is removed before the commit.

use std::collections::HashSet;

use rusqlite::{params, OptionalExtension, Transaction};

use super::events::{self, NewEvent};
use crate::clock::Millis;
use crate::core::audit::{Actor, EventKind};
use crate::error::Result;
use crate::store::chain::Checkpoint;
use crate::store::types::Pruned;
use crate::store::PruneExport;

/// What can go: the log up to `upto_seq` (its hash `upto_hash`) and the request rows up to
/// `rows_upto`.
#[derive(Debug, Default)]
pub struct Plan {
    /// The newest event to remove (0: none).
    pub upto_seq: i64,
    /// Its hash.
    pub upto_hash: String,
    /// The newest request row to remove (0: none).
    pub rows_upto: i64,
    /// The ids of the removed rows.
    pub ids: Vec<String>,
    /// Why the prefix stopped before the cut, when it did.
    pub stopped_at: Option<String>,
    /// Removed requests with events after the prefix.
    pub open: Vec<String>,
}

fn is_final(status: &str) -> bool {
    matches!(status, "answered" | "cancelled" | "aborted" | "rejected")
}

/// Find the prefix that can go at cut `before` (a read inside the write transaction).
pub fn plan(tx: &Transaction, before: Millis, limit: Option<u64>) -> Result<Plan> {
    let limit = limit.unwrap_or(u64::MAX);
    let mut taken = 0u64;
    let mut ev_stmt =
        tx.prepare("SELECT seq, at_ms, kind, request_id, data, hash FROM events ORDER BY seq")?;
    let mut row_stmt = tx.prepare(
        "SELECT seq, id, status, finished_ms, outbox_pending FROM requests ORDER BY seq",
    )?;
    // The newest request row always stays: a row's seq is its position in the feeds
    // (`FeedPos`), and SQLite gives a new row the largest seq plus one, so an emptied
    // table would hand out positions a feed has already passed.
    let newest_row: i64 = tx.query_row("SELECT COALESCE(MAX(seq), 0) FROM requests", [], |r| {
        r.get(0)
    })?;
    let mut evs = ev_stmt.query([])?;
    let mut rows = row_stmt.query([])?;
    let mut plan = Plan::default();
    // Removed requests whose final event has not come yet: those an earlier prune left
    // (rowless, their ids in its checkpoint), and those taken in this walk.
    let mut open: HashSet<String> = events::newest_checkpoint_data(tx)?
        .as_ref()
        .and_then(Checkpoint::from_data)
        .map(|c| c.open.into_iter().collect())
        .unwrap_or_default();
    while let Some(e) = evs.next()? {
        let seq: i64 = e.get(0)?;
        let at_ms: Millis = e.get(1)?;
        let kind: String = e.get(2)?;
        let request_id: Option<String> = e.get(3)?;
        if at_ms >= before {
            break;
        }
        let stop = |why: String| Some(format!("event {seq} ({kind}): {why}"));
        let mut stopped = None;
        let mut took = None;
        match EventKind::parse(&kind) {
            Some(k @ (EventKind::Accepted | EventKind::Rejected)) => {
                let Some(r) = rows.next()? else {
                    plan.stopped_at = stop("has no request row".into());
                    break;
                };
                let row_seq: i64 = r.get(0)?;
                let id: Option<String> = r.get(1)?;
                let status: String = r.get(2)?;
                let finished: Option<Millis> = r.get(3)?;
                let unpublished: bool = r.get(4)?;
                let data: String = e.get(4)?;
                let recorded = serde_json::from_str::<serde_json::Value>(&data)
                    .ok()
                    .and_then(|d| d.get("rowSeq").and_then(|s| s.as_i64()));
                let who = id.as_deref().unwrap_or("(no id)");
                if recorded.is_some_and(|s| s != row_seq) || id != request_id {
                    stopped = stop(format!(
                        "does not pair with request row {row_seq} (run dshq audit verify)"
                    ));
                } else if taken >= limit {
                    stopped = stop(format!("the limit of {limit} requests per prune"));
                } else if row_seq == newest_row {
                    stopped = stop(format!(
                        "request {who} is the newest request, which stays (it keeps the \
                         feed positions growing)"
                    ));
                } else if !is_final(&status) {
                    stopped = stop(format!("request {who} is {status}"));
                } else if finished.is_none_or(|f| f >= before) {
                    stopped = stop(format!("request {who} finished after the cut"));
                } else if unpublished {
                    stopped = stop(format!(
                        "request {who}'s outcome file is not written yet (the daemon writes it)"
                    ));
                } else {
                    if let (Some(id), EventKind::Accepted) = (&id, k) {
                        // An earlier request's leftovers end at a new acceptance of its
                        // id (a rejection reserves nothing and has no lifecycle events).
                        open.insert(id.clone());
                    }
                    took = Some((row_seq, id));
                    taken += 1;
                }
            }
            Some(
                EventKind::Claimed
                | EventKind::Released
                | EventKind::Answered
                | EventKind::Cancelled
                | EventKind::Aborted,
            ) => {
                let id = request_id.unwrap_or_default();
                if !open.contains(&id) {
                    stopped = stop(format!("concerns request {id}, which stays"));
                } else if matches!(kind.as_str(), "answered" | "cancelled" | "aborted") {
                    open.remove(&id);
                }
            }
            // Leases, agents, earlier checkpoints: nothing stays that they concern.
            _ => {}
        }
        if stopped.is_some() {
            plan.stopped_at = stopped;
            break;
        }
        plan.upto_seq = seq;
        plan.upto_hash = e.get(5)?;
        if let Some((row_seq, id)) = took {
            plan.rows_upto = row_seq;
            plan.ids.extend(id);
        }
    }
    plan.open = open.into_iter().collect();
    plan.open.sort();
    Ok(plan)
}

/// Export and remove what [`plan`] found, and append the checkpoint (nothing is exported
/// or removed when nothing can go); returns the removed ids too. The caller commits.
pub fn prune(
    tx: &mut crate::store::sqlite::sql::Sql<'_, '_>,
    before: Millis,
    limit: Option<u64>,
    now: Millis,
    actor: &Actor,
    export: &mut dyn PruneExport,
) -> Result<(Pruned, Vec<String>)> {
    let plan = plan(tx, before, limit)?;
    let mut pruned = Pruned {
        stopped_at: plan.stopped_at.clone(),
        ..Default::default()
    };
    let first: Option<i64> = tx
        .query_row("SELECT MIN(seq) FROM events", [], |r| r.get(0))
        .optional()?
        .flatten();
    if plan.upto_seq == 0 || first.is_none_or(|f| plan.upto_seq < f) {
        return Ok((pruned, Vec::new()));
    }
    // What goes, in the export's format and order, before anything is removed.
    {
        let mut sink = |kind: &str, fields| export.record(kind, fields);
        super::store::dump_where(
            tx,
            "request",
            "SELECT * FROM requests WHERE seq <= ?1 ORDER BY seq",
            plan.rows_upto,
            &mut sink,
        )?;
        super::store::dump_where(
            tx,
            "question",
            "SELECT * FROM questions WHERE request_seq <= ?1 ORDER BY request_seq, idx",
            plan.rows_upto,
            &mut sink,
        )?;
        super::store::dump_where(
            tx,
            "event",
            "SELECT * FROM events WHERE seq <= ?1 ORDER BY seq",
            plan.upto_seq,
            &mut sink,
        )?;
    }
    export.sync()?;
    let count = |sql: &str, upto: i64| -> Result<u64> {
        Ok(tx.query_row(sql, [upto], |r| r.get::<_, i64>(0))? as u64)
    };
    let want = Pruned {
        requests: count(
            "SELECT COUNT(*) FROM requests WHERE seq <= ?1",
            plan.rows_upto,
        )?,
        questions: count(
            "SELECT COUNT(*) FROM questions WHERE request_seq <= ?1",
            plan.rows_upto,
        )?,
        events: count("SELECT COUNT(*) FROM events WHERE seq <= ?1", plan.upto_seq)?,
        ..Default::default()
    };
    // The checkpoint first: it takes the next seq after the head (which the prefix may be
    // all of) and chains from the head, as every append does.
    let checkpoint = Checkpoint {
        seq: plan.upto_seq,
        hash: plan.upto_hash.clone(),
        open: plan.open.clone(),
    };
    let mut data = checkpoint.to_data();
    data.insert("before".into(), crate::clock::rfc3339(before).into());
    data.insert("requests".into(), want.requests.into());
    data.insert("questions".into(), want.questions.into());
    data.insert("events".into(), want.events.into());
    let seq = crate::store::driver::EventStatements::append_event_now(
        tx,
        now,
        NewEvent {
            kind: EventKind::Pruned,
            request_id: None,
            lease_id: None,
            agent_id: None,
            actor: actor.clone(),
            data: serde_json::Value::Object(data),
        },
    )?;
    tx.execute(
        "INSERT INTO prune_guard (events_upto, before_ms) VALUES (?1, ?2)",
        params![plan.upto_seq, before],
    )?;
    pruned.questions = tx.execute(
        "DELETE FROM questions WHERE request_seq <= ?1",
        [plan.rows_upto],
    )? as u64;
    pruned.requests = tx.execute("DELETE FROM requests WHERE seq <= ?1", [plan.rows_upto])? as u64;
    pruned.events = tx.execute("DELETE FROM events WHERE seq <= ?1", [plan.upto_seq])? as u64;
    tx.execute("DELETE FROM prune_guard", [])?;
    if (pruned.requests, pruned.questions, pruned.events)
        != (want.requests, want.questions, want.events)
    {
        return Err(crate::Error::Invalid(
            "prune removed other counts than it exported; rolled back".into(),
        ));
    }
    pruned.upto_seq = plan.upto_seq;
    pruned.checkpoint = Some(seq);
    Ok((pruned, plan.ids))
}

impl crate::store::driver::PruneStatements for crate::store::sqlite::sql::Sql<'_, '_> {}

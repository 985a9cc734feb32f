//! Retention on PostgreSQL: remove final requests finished before a cut, with their
//! questions and the prefix of the event log that concerns them, after exporting them
//! (`dshq prune`). The SQLite backend's prune (`store::sqlite::prune`), step for step:
//! the same walk, the same stops, the same checkpoint, in one write transaction under
//! the write lock, at the database's clock.
//!
//! The walk below reads the log from its start and stops at the cut, or at the first
//! event of a request that must stay (pending, claimed, finished after the cut, its
//! outcome file not written yet, or the newest request row). Every request whose creation
//! event lies in the prefix is final and finished before the cut, so it goes whole with
//! its row; its events after the prefix stay and their ids are named by the checkpoint
//! ([`Checkpoint::open`]). Rows and their creation events pair in insertion order, so the
//! rows removed are exactly a prefix of the rows.
//!
//! The newest request row stays here too, although PostgreSQL's identity never hands out
//! a position twice: so that both backends remove the same requests from one history.
//!
//! The delete triggers refuse every deletion unless a `prune_guard` row allows it
//! (migration 0002), and even then only events up to the guard's seq and final requests
//! finished before its cut; the row is removed before the commit (a deferred trigger
//! refuses a commit that leaves it).

use std::collections::{HashSet, VecDeque};

use postgres::types::Type;
use postgres::{Portal, Row, Transaction};

use super::events;
use super::tx::Tx;
use crate::clock::Millis;
use crate::core::audit::{Actor, EventKind};
use crate::error::Result;
use crate::store::chain::{Checkpoint, NewEvent};
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

/// Rows read through a portal in batches (two walk side by side in one transaction).
struct Cursor {
    portal: Portal,
    buf: VecDeque<Row>,
    done: bool,
}

impl Cursor {
    fn open(tx: &mut Transaction<'_>, sql: &str) -> Result<Cursor> {
        let stmt = tx.prepare(sql)?;
        let portal = tx.bind(&stmt, &[])?;
        Ok(Cursor {
            portal,
            buf: VecDeque::new(),
            done: false,
        })
    }

    fn next(&mut self, tx: &mut Transaction<'_>) -> Result<Option<Row>> {
        if self.buf.is_empty() && !self.done {
            let rows = tx.query_portal(&self.portal, 500)?;
            self.done = rows.is_empty();
            self.buf.extend(rows);
        }
        Ok(self.buf.pop_front())
    }
}

/// Find the prefix that can go at cut `before` (a read inside the write transaction).
pub fn plan(tx: &mut Transaction<'_>, before: Millis, limit: Option<u64>) -> Result<Plan> {
    let limit = limit.unwrap_or(u64::MAX);
    let mut taken = 0u64;
    // The newest request row always stays (as on SQLite, see the module docs).
    let newest_row: i64 = tx
        .query_one("SELECT COALESCE(MAX(seq), 0)::bigint FROM requests", &[])?
        .try_get(0)?;
    let mut plan = Plan::default();
    // Removed requests whose final event has not come yet: those an earlier prune left
    // (rowless, their ids in its checkpoint), and those taken in this walk.
    let mut open: HashSet<String> = events::newest_checkpoint_data(tx)?
        .as_ref()
        .and_then(Checkpoint::from_data)
        .map(|c| c.open.into_iter().collect())
        .unwrap_or_default();
    let mut evs = Cursor::open(
        tx,
        "SELECT seq, at_ms, kind, request_id, data, hash FROM events ORDER BY seq",
    )?;
    let mut rows = Cursor::open(
        tx,
        "SELECT seq, id, status, finished_ms, outbox_pending FROM requests ORDER BY seq",
    )?;
    while let Some(e) = evs.next(tx)? {
        let seq: i64 = e.try_get(0)?;
        let at_ms: Millis = e.try_get(1)?;
        let kind: String = e.try_get(2)?;
        let request_id: Option<String> = e.try_get(3)?;
        if at_ms >= before {
            break;
        }
        let stop = |why: String| Some(format!("event {seq} ({kind}): {why}"));
        let mut stopped = None;
        let mut took = None;
        match EventKind::parse(&kind) {
            Some(k @ (EventKind::Accepted | EventKind::Rejected)) => {
                let Some(r) = rows.next(tx)? else {
                    plan.stopped_at = stop("has no request row".into());
                    break;
                };
                let row_seq: i64 = r.try_get(0)?;
                let id: Option<String> = r.try_get(1)?;
                let status: String = r.try_get(2)?;
                let finished: Option<Millis> = r.try_get(3)?;
                let unpublished: bool = r.try_get(4)?;
                let data: String = e.try_get(4)?;
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
        plan.upto_hash = e.try_get(5)?;
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
/// or removed when nothing can go); returns the removed ids too. The caller (a write
/// transaction under the lock) commits.
pub fn prune(
    t: &mut Tx<'_>,
    before: Millis,
    limit: Option<u64>,
    now: Millis,
    actor: &Actor,
    export: &mut dyn PruneExport,
) -> Result<(Pruned, Vec<String>)> {
    let plan = plan(&mut t.tx, before, limit)?;
    let mut pruned = Pruned {
        stopped_at: plan.stopped_at.clone(),
        ..Default::default()
    };
    let first: Option<i64> =
        t.tx.query_one("SELECT MIN(seq) FROM events", &[])?
            .try_get(0)?;
    if plan.upto_seq == 0 || first.is_none_or(|f| plan.upto_seq < f) {
        return Ok((pruned, Vec::new()));
    }
    // What goes, in the export's format and order, before anything is removed.
    {
        let mut sink = |kind: &str, fields| export.record(kind, fields);
        super::export::export_upto(&mut t.tx, "request", "seq", plan.rows_upto, &mut sink)?;
        super::export::export_upto(
            &mut t.tx,
            "question",
            "request_seq",
            plan.rows_upto,
            &mut sink,
        )?;
        super::export::export_upto(&mut t.tx, "event", "seq", plan.upto_seq, &mut sink)?;
    }
    export.sync()?;
    let mut count = |sql: &str, upto: i64| -> Result<u64> {
        Ok(t.tx.query_one(sql, &[&upto])?.try_get::<_, i64>(0)? as u64)
    };
    let want = Pruned {
        requests: count(
            "SELECT COUNT(*) FROM requests WHERE seq <= $1",
            plan.rows_upto,
        )?,
        questions: count(
            "SELECT COUNT(*) FROM questions WHERE request_seq <= $1",
            plan.rows_upto,
        )?,
        events: count("SELECT COUNT(*) FROM events WHERE seq <= $1", plan.upto_seq)?,
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
        t,
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
    let tx = &mut t.tx;
    tx.execute_typed(
        "INSERT INTO prune_guard (events_upto, before_ms) VALUES ($1, $2)",
        &[(&plan.upto_seq, Type::INT8), (&before, Type::INT8)],
    )?;
    pruned.questions = tx.execute(
        "DELETE FROM questions WHERE request_seq <= $1",
        &[&plan.rows_upto],
    )?;
    pruned.requests = tx.execute("DELETE FROM requests WHERE seq <= $1", &[&plan.rows_upto])?;
    pruned.events = tx.execute("DELETE FROM events WHERE seq <= $1", &[&plan.upto_seq])?;
    tx.execute("DELETE FROM prune_guard", &[])?;
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

impl crate::store::driver::PruneStatements for crate::store::postgres::tx::Tx<'_> {}

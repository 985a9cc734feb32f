//! Retention: remove final requests finished before a cut, with their questions and the
//! prefix of the event log that concerns them, after exporting them (`dshq prune`).
//! Written once over [`PruneStatements`]; both drivers run it in one write transaction.
//!
//! The log is a chain, so only a *prefix* of it can go: the removed prefix is summarised
//! by a `pruned` event appended in the same transaction, carrying the prefix's head (seq,
//! hash), and `audit verify` walks the chain from there ([`crate::store::chain`]). The
//! walk ([`plan`]) reads the log from its start and stops at the cut, or at the first
//! event of a request that must stay (pending, claimed, finished after the cut, its
//! outcome file not written yet, or the newest request row). Every request whose creation
//! event lies in the prefix is final and finished before the cut, so it goes whole with
//! its row; the events it still has after the prefix (accepted before the stop, answered
//! after it) stay in the log and their ids are named by the checkpoint
//! ([`Checkpoint::open`]), until a later prune takes them. Rows and their creation events
//! pair in insertion order, so the rows removed are exactly a prefix of the rows, and
//! `check_records` pairs what is left as before.
//!
//! The newest request row always stays: a row's seq is its position in the feeds
//! (`FeedPos`), and SQLite gives a new row the largest seq plus one, so an emptied table
//! would hand out positions a feed has already passed (PostgreSQL's identity never hands
//! out a position twice, but both drivers remove the same requests from one history).
//!
//! The database's triggers refuse every deletion unless a `prune_guard` row allows it,
//! and even then only events up to the guard's seq and final requests finished before
//! its cut; the row is removed before the commit.

use std::collections::HashSet;

use crate::clock::Millis;
use crate::core::audit::{Actor, EventKind};
use crate::error::{Error, Result};
use crate::store::calls::PruneExport;
use crate::store::chain::{Checkpoint, NewEvent};
use crate::store::driver::prune::{NextRow, WalkEvent};
use crate::store::driver::{PruneStatements, Statements};
use crate::store::types::Pruned;

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

/// The walk's state between two events.
struct Walk {
    before: Millis,
    limit: u64,
    taken: u64,
    newest_row: i64,
    /// Removed requests whose final event has not come yet: those an earlier prune left
    /// (rowless, their ids in its checkpoint), and those taken in this walk.
    open: HashSet<String>,
    plan: Plan,
}

impl Walk {
    /// Take event `e` into the prefix, or stop (`false`) before it.
    fn event(&mut self, e: WalkEvent, rows: NextRow<'_>) -> Result<bool> {
        let WalkEvent {
            seq,
            at_ms,
            kind,
            request_id,
            data,
            hash,
        } = e;
        if at_ms >= self.before {
            return Ok(false);
        }
        let stop = |why: String| Some(format!("event {seq} ({kind}): {why}"));
        let mut stopped = None;
        let mut took = None;
        match EventKind::parse(&kind) {
            Some(k @ (EventKind::Accepted | EventKind::Rejected)) => {
                let Some(r) = rows()? else {
                    self.plan.stopped_at = stop("has no request row".into());
                    return Ok(false);
                };
                let recorded = serde_json::from_str::<serde_json::Value>(&data)
                    .ok()
                    .and_then(|d| d.get("rowSeq").and_then(|s| s.as_i64()));
                let who = r.id.as_deref().unwrap_or("(no id)");
                let limit = self.limit;
                if recorded.is_some_and(|s| s != r.seq) || r.id != request_id {
                    stopped = stop(format!(
                        "does not pair with request row {} (run dshq audit verify)",
                        r.seq
                    ));
                } else if self.taken >= limit {
                    stopped = stop(format!("the limit of {limit} requests per prune"));
                } else if r.seq == self.newest_row {
                    stopped = stop(format!(
                        "request {who} is the newest request, which stays (it keeps the \
                         feed positions growing)"
                    ));
                } else if !is_final(&r.status) {
                    stopped = stop(format!("request {who} is {}", r.status));
                } else if r.finished_ms.is_none_or(|f| f >= self.before) {
                    stopped = stop(format!("request {who} finished after the cut"));
                } else if r.outbox_pending {
                    stopped = stop(format!(
                        "request {who}'s outcome file is not written yet (the daemon writes it)"
                    ));
                } else {
                    if let (Some(id), EventKind::Accepted) = (&r.id, k) {
                        // An earlier request's leftovers end at a new acceptance of its
                        // id (a rejection reserves nothing and has no lifecycle events).
                        self.open.insert(id.clone());
                    }
                    took = Some((r.seq, r.id));
                    self.taken += 1;
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
                if !self.open.contains(&id) {
                    stopped = stop(format!("concerns request {id}, which stays"));
                } else if matches!(kind.as_str(), "answered" | "cancelled" | "aborted") {
                    self.open.remove(&id);
                }
            }
            // Leases, agents, earlier checkpoints: nothing stays that they concern.
            _ => {}
        }
        if stopped.is_some() {
            self.plan.stopped_at = stopped;
            return Ok(false);
        }
        self.plan.upto_seq = seq;
        self.plan.upto_hash = hash;
        if let Some((row_seq, id)) = took {
            self.plan.rows_upto = row_seq;
            self.plan.ids.extend(id);
        }
        Ok(true)
    }
}

/// Find the prefix that can go at cut `before` (a read inside the write transaction).
pub fn plan(
    db: &mut (impl PruneStatements + ?Sized),
    before: Millis,
    limit: Option<u64>,
) -> Result<Plan> {
    let newest_row = db.newest_request_seq()?;
    let open: HashSet<String> = db
        .newest_checkpoint_data()?
        .as_ref()
        .and_then(Checkpoint::from_data)
        .map(|c| c.open.into_iter().collect())
        .unwrap_or_default();
    let mut walk = Walk {
        before,
        limit: limit.unwrap_or(u64::MAX),
        taken: 0,
        newest_row,
        open,
        plan: Plan::default(),
    };
    db.walk_events_with_request_rows(&mut |e, rows| walk.event(e, rows))?;
    let mut plan = walk.plan;
    plan.open = walk.open.into_iter().collect();
    plan.open.sort();
    Ok(plan)
}

/// Export and remove what [`plan`] found, and append the checkpoint (nothing is exported
/// or removed when nothing can go); returns the removed ids too. The caller (a write
/// transaction holding the store exclusively) commits.
pub fn prune(
    db: &mut dyn Statements,
    now: Millis,
    before: Millis,
    limit: Option<u64>,
    actor: &Actor,
    export: &mut dyn PruneExport,
) -> Result<(Pruned, Vec<String>)> {
    let plan = plan(db, before, limit)?;
    let mut pruned = Pruned {
        stopped_at: plan.stopped_at.clone(),
        ..Default::default()
    };
    let first = db.oldest_event_seq()?;
    if plan.upto_seq == 0 || first.is_none_or(|f| plan.upto_seq < f) {
        return Ok((pruned, Vec::new()));
    }
    // What goes, in the export's format and order, before anything is removed.
    {
        let mut sink = |kind: &str, fields| export.record(kind, fields);
        db.export_requests_upto(plan.rows_upto, &mut sink)?;
        db.export_questions_upto(plan.rows_upto, &mut sink)?;
        db.export_events_upto(plan.upto_seq, &mut sink)?;
    }
    export.sync()?;
    let want = Pruned {
        requests: db.count_requests_upto(plan.rows_upto)?,
        questions: db.count_questions_upto(plan.rows_upto)?,
        events: db.count_events_upto(plan.upto_seq)?,
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
    let seq = db.append_event_now(
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
    db.insert_prune_guard(plan.upto_seq, before)?;
    pruned.questions = db.delete_questions_upto(plan.rows_upto)?;
    // A vote goes with its request; the votes are in the export's events.
    db.delete_votes_upto(plan.rows_upto)?;
    // A delivered notification goes with its request: it is transport state,
    // not the record. One not yet delivered stays, to be sent (its body says it all).
    db.delete_delivered_deliveries_upto(plan.rows_upto)?;
    // So do its channels' records: its Slack messages (once nothing is left to update
    // them), the devices its push deliveries reached (once those deliveries are gone) and
    // its mail links' uses (a link of a pruned request opens nothing: a request
    // asked later under its id is not the link's, `mail_link::opens`).
    db.delete_slack_messages_upto(plan.rows_upto)?;
    db.delete_telegram_messages_upto(plan.rows_upto)?;
    db.delete_push_reached_upto(plan.rows_upto)?;
    db.delete_link_uses_upto(plan.rows_upto)?;
    pruned.requests = db.delete_requests_upto(plan.rows_upto)?;
    pruned.events = db.delete_events_upto(plan.upto_seq)?;
    db.delete_prune_guard()?;
    if (pruned.requests, pruned.questions, pruned.events)
        != (want.requests, want.questions, want.events)
    {
        return Err(Error::Invalid(
            "prune removed other counts than it exported; rolled back".into(),
        ));
    }
    pruned.upto_seq = plan.upto_seq;
    pruned.checkpoint = Some(seq);
    Ok((pruned, plan.ids))
}

/// After the prune's commit, in a write of its own: the removed `ids` no request row holds
/// any more (each once) become `pruned.freed_ids`, and `export` removes their outcome
/// files (under the write lock, so a request asking such an id again cannot have its
/// fresh outcome removed).
pub fn free_outcomes(
    db: &mut dyn Statements,
    ids: Vec<String>,
    pruned: &mut Pruned,
    export: &mut dyn PruneExport,
) -> Result<()> {
    // An ask of one of these ids numbers a new row: held off until this commits, so its
    // fresh outcome file is never the one removed.
    db.lock_row_numbers()?;
    let mut seen = HashSet::new();
    for id in ids {
        if seen.insert(id.clone()) && !db.request_id_exists(&id)? {
            pruned.freed_ids.push(id);
        }
    }
    export.committed(&pruned.freed_ids)?;
    Ok(())
}

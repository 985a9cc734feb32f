//! `audit verify`, written once over [`AuditReads`]: what is checked, in which order, and
//! what is reported, the same on both drivers, so that a store copied from one backend to
//! the other verifies (or breaks) the same way.
//!
//! The event log is the record. In order, the first problem found is the answer:
//! the database's own check of its storage (SQLite's `PRAGMA integrity_check`; PostgreSQL
//! has no built-in equivalent, so its driver reports none); a `prune_guard` row left
//! committed (rows may have been deleted by hand); where the walk starts (the newest
//! checkpoint, when the log was pruned: [`chain::walk_start`]); the chain itself, under
//! the root's key ([`ChainWalk`]); each head anchor given ([`chain::anchor_in_pruned`] for
//! one inside a pruned prefix, else [`crate::store::anchor::anchor_break`]); and every
//! request row and its questions against the log ([`check_rows`], whose docs say what is
//! compared). The counts are as far as the checks got.
//!
//! A driver opens one read snapshot for all of it (SQLite's read transaction, PostgreSQL's
//! `REPEATABLE READ READ ONLY`) and hands its reads here; what the rules decide is only
//! here.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use crate::error::Result;
use crate::store::anchor::{anchor_break, Anchor};
use crate::store::calls::Verified;
use crate::store::chain::{self, ChainWalk, HashInput, KEY_FILE};
use crate::store::driver::audit::{AuditReads, StoredEvent};
use crate::store::records::{check_rows, QuestionRow, RecordBreak};
use crate::store::types::{ChainBreak, Event};

fn hash_input(e: &StoredEvent) -> HashInput<'_> {
    let ev = &e.event;
    HashInput {
        prev_hash: &ev.prev_hash,
        seq: ev.seq,
        at_ms: ev.at_ms,
        kind: &ev.kind,
        request_id: ev.request_id.as_deref(),
        lease_id: ev.lease_id,
        agent_id: ev.agent_id.as_deref(),
        actor: &ev.actor,
        data: &e.data,
    }
}

/// Where the chain's walk starts: the newest checkpoint (none when the log was never
/// pruned), or why the log cannot be walked at all.
fn walk_start(
    db: &mut dyn AuditReads,
) -> Result<std::result::Result<Option<chain::Checkpoint>, ChainBreak>> {
    let first = db.oldest_event_seq()?;
    let newest = db.newest_checkpoint_data()?;
    Ok(chain::walk_start(first, newest.as_ref()))
}

/// Whether the log still holds `anchor`: `None` when it does, else what is wrong. An
/// anchor inside a pruned prefix is checked against the checkpoint, which keeps only the
/// prefix's head.
pub fn check_anchor(db: &mut dyn AuditReads, anchor: &Anchor) -> Result<Option<ChainBreak>> {
    if let Ok(checkpoint) = walk_start(db)? {
        if let Some(r) = chain::anchor_in_pruned(anchor.seq, &anchor.hash, checkpoint.as_ref()) {
            return Ok(r.err());
        }
    }
    let found = db.event_hash_at(anchor.seq)?;
    let last = db.newest_event_seq()?;
    Ok(anchor_break(anchor, found.as_deref(), last))
}

/// Compare every request row and its questions with the log (`all`: every event, oldest
/// first). Returns the number of rows checked and the first disagreement.
pub fn check_records(db: &mut dyn AuditReads, all: &[Event]) -> Result<(i64, Option<RecordBreak>)> {
    let rows = db.all_requests_oldest_first()?;
    let mut questions: HashMap<i64, Vec<QuestionRow>> = HashMap::new();
    for (seq, q) in db.all_questions()? {
        questions.entry(seq).or_default().push(q);
    }
    // `require_provider` is not in `RequestRow` (nothing but export reads it), yet it is
    // part of what was asked: it must be what the body the digest pins says.
    let require_provider = db.require_provider_by_row()?;
    let mut votes: HashMap<i64, Vec<crate::core::quorum::Vote>> = HashMap::new();
    for (seq, v) in db.all_votes()? {
        votes.entry(seq).or_default().push(v);
    }
    Ok(check_rows(&rows, all, questions, &require_provider, votes))
}

/// Verify the record read through `db` (one snapshot): the checks of the module docs, the
/// chain keyed with the key in `root` (none: a plain chain; a root without its key file
/// says so when the chain does not verify), and the `anchors` given.
pub fn verify(
    db: &mut dyn AuditReads,
    root: Option<&Path>,
    anchors: &[(PathBuf, Anchor)],
) -> Result<Verified> {
    let key = match root {
        Some(dir) => chain::load_key(dir)?,
        None => None,
    };
    let mut v = Verified {
        events: 0,
        requests: 0,
        head: None,
        keyed_since: key.as_ref().map(|k| k.since),
        broken: None,
    };
    if let Some(problem) = db.storage_check_failure()? {
        v.broken = Some(problem);
        return Ok(v);
    }
    if db.count_prune_guard_rows()? > 0 {
        v.broken = Some(
            "the prune guard is set outside a prune (prune_guard holds a committed row): \
             rows may have been deleted by hand"
                .into(),
        );
        return Ok(v);
    }
    let checkpoint = match walk_start(db)? {
        Ok(c) => c,
        Err(b) => {
            v.broken = Some(format!("event {} does not verify: {}", b.seq, b.problem));
            return Ok(v);
        }
    };
    let events = db.all_stored_events()?;
    let mut walk = ChainWalk::from(key.as_ref(), checkpoint.as_ref());
    for e in &events {
        if let Some(mut b) = walk.step(&hash_input(e), &e.event.hash) {
            if key.is_none() && root.is_some() && b.problem.contains("does not match its hash") {
                b.problem.push_str(&format!(
                    "; the root has no {KEY_FILE}, so a keyed chain cannot verify (restore the key file)"
                ));
            }
            v.events = walk.count;
            v.broken = Some(format!("event {} does not verify: {}", b.seq, b.problem));
            return Ok(v);
        }
    }
    v.events = walk.count;
    for (path, a) in anchors {
        if let Some(b) = check_anchor(db, a)? {
            v.broken = Some(format!(
                "the anchor {} does not verify: {}",
                crate::text::path_for_log(path),
                b.problem
            ));
            return Ok(v);
        }
    }
    let events: Vec<Event> = events.into_iter().map(|e| e.event).collect();
    let (checked, brk) = check_records(db, &events)?;
    v.requests = checked;
    if let Some(b) = brk {
        v.broken = Some(format!("{b}"));
        return Ok(v);
    }
    v.head = events.last().map(|e| (e.seq, e.hash.clone()));
    Ok(v)
}

//! `audit verify` for PostgreSQL: the event chain, the head anchors, and every request
//! row and its questions checked against the log — the SQLite backend's checks
//! (`store::sqlite::audit`), in one snapshot.
//!
//! The event log is the record: every request row and its questions must be what the log
//! says happened to it. The `requests` and `questions` tables are what `show`, `history`
//! and the outbox read, and nothing but this check protects them: a row edited in place
//! (an answer, a provider, a decision, a question's text) or inserted without events would
//! otherwise be presented as real. [`check_records`] reads them, and
//! [`crate::store::records::check_rows`] replays each request's events against them.
//!
//! The chain is walked with [`crate::store::chain::ChainWalk`] under the root's key
//! (`audit.key` in the root given at connect; every host of one PostgreSQL store holds the
//! same key), exactly as SQLite's is, so a chain copied from one backend verifies on the
//! other unchanged.
//!
//! What differs from SQLite: there is no `PRAGMA integrity_check` to run first. PostgreSQL
//! has no built-in equivalent (`amcheck` is an extension a dshq user may not be allowed
//! to install, and it checks indexes, not the record), so that step is simply left out:
//! the chain and the record checks are what the audit relies on, on either backend.
//!
//! [`verify`] runs in the caller's transaction, which must be `REPEATABLE READ READ ONLY`
//! so that every check sees one snapshot while other hosts write ([`verify_snapshot`]
//! opens such a transaction on a client).
//!
//! The record checks themselves are [`crate::store::records`], shared with SQLite: this
//! module only reads the rows, questions and events into its structs.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use postgres::{Client, GenericClient, IsolationLevel, Transaction};
use serde_json::Value;

use crate::error::Result;
use crate::store::anchor::Anchor;
use crate::store::chain::{self, ChainWalk, HashInput, KEY_FILE};
pub use crate::store::records::RecordBreak;
use crate::store::records::{check_rows, QuestionRow};
use crate::store::types::{ChainBreak, Event};
use crate::store::Verified;

/// An event as stored: the parsed [`Event`] and its data text (what the hash covers).
struct StoredEvent {
    event: Event,
    data: String,
}

impl StoredEvent {
    fn input(&self) -> HashInput<'_> {
        let e = &self.event;
        HashInput {
            prev_hash: &e.prev_hash,
            seq: e.seq,
            at_ms: e.at_ms,
            kind: &e.kind,
            request_id: e.request_id.as_deref(),
            lease_id: e.lease_id,
            agent_id: e.agent_id.as_deref(),
            actor: &e.actor,
            data: &self.data,
        }
    }
}

fn all_events(c: &mut impl GenericClient) -> Result<Vec<StoredEvent>> {
    c.query(
        "SELECT seq, at_ms, kind, request_id, lease_id, agent_id, actor, data, prev_hash, hash
         FROM events ORDER BY seq",
        &[],
    )?
    .iter()
    .map(|r| {
        let data: String = r.try_get(7)?;
        Ok(StoredEvent {
            event: Event {
                seq: r.try_get(0)?,
                at_ms: r.try_get(1)?,
                kind: r.try_get(2)?,
                request_id: r.try_get(3)?,
                lease_id: r.try_get(4)?,
                agent_id: r.try_get(5)?,
                actor: r.try_get(6)?,
                data: serde_json::from_str(&data).unwrap_or(Value::String(data.clone())),
                prev_hash: r.try_get(8)?,
                hash: r.try_get(9)?,
            },
            data,
        })
    })
    .collect()
}

fn all_questions(c: &mut impl GenericClient) -> Result<HashMap<i64, Vec<QuestionRow>>> {
    let mut questions: HashMap<i64, Vec<QuestionRow>> = HashMap::new();
    for r in c.query(
        "SELECT request_seq, idx, qid, question, header, detail, multi_select, intent_kind,
                intent_approve, options, selected, custom, decision
         FROM questions ORDER BY request_seq, idx",
        &[],
    )? {
        questions
            .entry(r.try_get(0)?)
            .or_default()
            .push(QuestionRow {
                idx: r.try_get(1)?,
                qid: r.try_get(2)?,
                question: r.try_get(3)?,
                header: r.try_get(4)?,
                detail: r.try_get(5)?,
                multi_select: r.try_get(6)?,
                intent_kind: r.try_get(7)?,
                intent_approve: r.try_get(8)?,
                options: r.try_get(9)?,
                selected: r.try_get(10)?,
                custom: r.try_get(11)?,
                decision: r.try_get(12)?,
            });
    }
    Ok(questions)
}

/// Whether the log still contains `anchor`: `None` when it does, else what is wrong.
fn check_anchor(c: &mut impl GenericClient, anchor: &Anchor) -> Result<Option<ChainBreak>> {
    if let Some(r) = pruned_anchor(c, anchor)? {
        return Ok(r);
    }
    let found: Option<String> = c
        .query_opt("SELECT hash FROM events WHERE seq = $1", &[&anchor.seq])?
        .map(|r| r.try_get(0))
        .transpose()?;
    let last: i64 = c
        .query_one("SELECT COALESCE(MAX(seq), 0) FROM events", &[])?
        .try_get(0)?;
    Ok(crate::store::anchor::anchor_break(
        anchor,
        found.as_deref(),
        last,
    ))
}

// ---- retention (`dshq prune`): where the walk starts, what it skips ---------------------
// The logic is backend-neutral (`store::chain`); these only read what it needs.

/// Where the walk starts (the newest checkpoint, when the log was pruned), or the
/// problem `verify` reports: the log's start not accounted for, or a prune guard row
/// left committed (as SQLite's verify reports it).
fn pruned_walk_start(
    c: &mut impl GenericClient,
) -> Result<std::result::Result<Option<chain::Checkpoint>, String>> {
    let guard: i64 = c
        .query_one("SELECT COUNT(*) FROM prune_guard", &[])?
        .try_get(0)?;
    if guard > 0 {
        return Ok(Err(
            "the prune guard is set outside a prune (prune_guard holds a committed row): \
             rows may have been deleted by hand"
                .into(),
        ));
    }
    Ok(super::events::walk_start(c)?
        .map_err(|b| format!("event {} does not verify: {}", b.seq, b.problem)))
}

/// An anchor inside the pruned prefix, checked against the checkpoint
/// ([`chain::anchor_in_pruned`]); `None`: check it against the log.
fn pruned_anchor(
    c: &mut impl GenericClient,
    anchor: &Anchor,
) -> Result<Option<Option<ChainBreak>>> {
    let Ok(checkpoint) = super::events::walk_start(c)? else {
        return Ok(None);
    };
    Ok(chain::anchor_in_pruned(anchor.seq, &anchor.hash, checkpoint.as_ref()).map(|r| r.err()))
}

/// Open a `REPEATABLE READ READ ONLY` transaction on `client` and [`verify`] in it.
pub fn verify_snapshot(
    client: &mut Client,
    root: Option<&Path>,
    anchors: &[(PathBuf, Anchor)],
) -> Result<Verified> {
    let mut tx = client
        .build_transaction()
        .isolation_level(IsolationLevel::RepeatableRead)
        .read_only(true)
        .start()?;
    let v = verify(&mut tx, root, anchors)?;
    tx.commit()?;
    Ok(v)
}

/// Verify the record in the caller's transaction (`REPEATABLE READ READ ONLY`, for one
/// snapshot): the event chain under the key of `root` (none: a plain chain), the
/// `anchors` given, and every request row against its events. The first problem found
/// is `broken`; the counts are as far as the checks got.
pub fn verify(
    tx: &mut Transaction<'_>,
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
    // (No integrity check of the store itself: see the module docs.)
    let checkpoint = match pruned_walk_start(tx)? {
        Ok(c) => c,
        Err(problem) => {
            v.broken = Some(problem);
            return Ok(v);
        }
    };
    let events = all_events(tx)?;
    let mut walk = ChainWalk::from(key.as_ref(), checkpoint.as_ref());
    for e in &events {
        if let Some(mut b) = walk.step(&e.input(), &e.event.hash) {
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
        if let Some(b) = check_anchor(tx, a)? {
            v.broken = Some(format!(
                "the anchor {} does not verify: {}",
                crate::text::path_for_log(path),
                b.problem
            ));
            return Ok(v);
        }
    }
    let events: Vec<Event> = events.into_iter().map(|e| e.event).collect();
    let (checked, brk) = check_records(tx, &events)?;
    v.requests = checked;
    if let Some(b) = brk {
        v.broken = Some(format!("{b}"));
        return Ok(v);
    }
    v.head = events.last().map(|e| (e.seq, e.hash.clone()));
    Ok(v)
}

/// Compare every request row and its questions with the log (`all`: every event, oldest
/// first). Returns the number of rows checked and the first disagreement.
pub fn check_records(
    c: &mut impl GenericClient,
    all: &[Event],
) -> Result<(i64, Option<RecordBreak>)> {
    let rows = super::requests::all_oldest_first(c)?;
    let questions = all_questions(c)?;
    // `require_provider` is not in `RequestRow` (nothing but export reads it), yet it is
    // part of what was asked: it must be what the body the digest pins says.
    let mut require_provider: HashMap<i64, bool> = HashMap::new();
    for r in c.query("SELECT seq, require_provider FROM requests", &[])? {
        require_provider.insert(r.try_get(0)?, r.try_get(1)?);
    }
    Ok(check_rows(&rows, all, questions, &require_provider))
}

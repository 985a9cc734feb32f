//! `audit verify` for PostgreSQL: the event chain, the head anchors, and every request
//! row and its questions checked against the log — the SQLite backend's checks
//! (`store::sqlite::audit`), in one snapshot.
//!
//! The event log is the record: every request row and its questions must be what the log
//! says happened to it. The `requests` and `questions` tables are what `show`, `history`
//! and the outbox read, and nothing but this check protects them: a row edited in place
//! (an answer, a provider, a decision, a question's text) or inserted without events would
//! otherwise be presented as real. [`check_records`] replays each request's events
//! (accepted or rejected, then claimed, released, answered, cancelled, aborted) and
//! compares the state they imply with the row.
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
//! The record checks below [`check_records`]'s reads are the SQLite backend's, line for
//! line (they are pure: rows and events in, the first disagreement out); they belong in a
//! backend-neutral module both backends call, which the SQLite side's owner can move them
//! to.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use postgres::{Client, GenericClient, IsolationLevel, Row, Transaction};
use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::core::audit::EventKind;
use crate::core::lifecycle::{RequestRow, Status};
use crate::error::Result;
use crate::protocol::answer::{check_answer, request_decision};
use crate::protocol::digest::request_digest;
use crate::protocol::types::{Answer, Decision, Request};
use crate::store::anchor::Anchor;
use crate::store::chain::{self, ChainWalk, HashInput, KEY_FILE};
use crate::store::types::{ChainBreak, Event};
use crate::store::Verified;

/// The first disagreement between the tables and the log.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordBreak {
    /// The request id, when the row or event has one.
    pub request: Option<String>,
    /// The row (`requests.seq`), when one is concerned.
    pub row: Option<i64>,
    /// The event concerned, when one is.
    pub event: Option<i64>,
    /// What disagrees.
    pub problem: String,
}

impl std::fmt::Display for RecordBreak {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.request, self.row) {
            (Some(id), Some(row)) => write!(f, "request {id} (row {row})")?,
            (Some(id), None) => write!(f, "request {id}")?,
            (None, Some(row)) => write!(f, "row {row} (no id)")?,
            (None, None) => write!(f, "the log")?,
        }
        if let Some(e) = self.event {
            write!(f, ", event {e}")?;
        }
        write!(f, ": {}", self.problem)
    }
}

/// A `questions` row.
#[derive(Debug, Clone)]
struct QuestionRow {
    idx: i64,
    qid: String,
    question: String,
    header: Option<String>,
    detail: Option<String>,
    multi_select: bool,
    intent_kind: Option<String>,
    intent_approve: Option<String>,
    options: String,
    selected: Option<String>,
    custom: Option<String>,
    decision: Option<String>,
}

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

/// Every request row, oldest first, as the lists read it (the claiming lease's name
/// joined in).
fn all_requests(c: &mut impl GenericClient) -> Result<Vec<RequestRow>> {
    c.query(
        "SELECT r.seq, r.id, r.context, r.status, r.agent_id, r.agent_instance, r.agent_lineage,
                r.body, r.source, r.deadline_ms, r.created_ms, r.claimed_lease, l.name,
                r.claimed_ms, r.finished_ms, r.answer, r.decision, r.provider, r.error_code,
                r.error_message
         FROM requests r LEFT JOIN leases l ON l.lease_id = r.claimed_lease
         ORDER BY r.seq",
        &[],
    )?
    .iter()
    .map(request_row)
    .collect()
}

fn request_row(r: &Row) -> Result<RequestRow> {
    let status: String = r.try_get(3)?;
    let decision: Option<String> = r.try_get(16)?;
    Ok(RequestRow {
        seq: r.try_get(0)?,
        id: r.try_get(1)?,
        context: r.try_get(2)?,
        // A status the CHECK constraint refuses cannot be stored; an unknown one reads
        // as rejected, as SQLite's row mapping does, and then fails the record check.
        status: Status::parse(&status).unwrap_or(Status::Rejected),
        agent_id: r.try_get(4)?,
        agent_instance: r.try_get(5)?,
        agent_lineage: r.try_get(6)?,
        body: r.try_get(7)?,
        source: r.try_get(8)?,
        deadline_ms: r.try_get(9)?,
        created_ms: r.try_get(10)?,
        claimed_lease: r.try_get(11)?,
        claimed_by: r.try_get(12)?,
        claimed_ms: r.try_get(13)?,
        finished_ms: r.try_get(14)?,
        answer: r.try_get(15)?,
        decision: decision.as_deref().and_then(Decision::parse),
        provider: r.try_get(17)?,
        error_code: r.try_get(18)?,
        error_message: r.try_get(19)?,
    })
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
    Ok(match found {
        None => Some(ChainBreak {
            seq: anchor.seq,
            problem: format!(
                "the anchor names event {} but the log ends at {last}: its newest events were removed",
                anchor.seq
            ),
        }),
        Some(h) if h != anchor.hash => Some(ChainBreak {
            seq: anchor.seq,
            problem: format!(
                "event {}'s hash is not the anchor's: the log was rewritten from there",
                anchor.seq
            ),
        }),
        Some(_) => None,
    })
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

/// The events of requests a prune removed while they still had events to come: rowless
/// by design, named by the newest checkpoint ([`chain::Checkpoint::rowless`]).
fn pruned_rowless(all: &[Event]) -> std::collections::HashSet<i64> {
    all.iter()
        .rev()
        .find(|e| e.event_kind() == Some(EventKind::Pruned))
        .and_then(|e| chain::Checkpoint::from_data(&e.data))
        .map(|c| {
            c.rowless(
                all.iter()
                    .map(|e| (e.seq, e.kind.as_str(), e.request_id.as_deref())),
            )
        })
        .unwrap_or_default()
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
    let rows = all_requests(c)?;
    let questions = all_questions(c)?;
    // `require_provider` is not in `RequestRow` (nothing but export reads it), yet it is
    // part of what was asked: it must be what the body the digest pins says.
    let mut require_provider: HashMap<i64, bool> = HashMap::new();
    for r in c.query("SELECT seq, require_provider FROM requests", &[])? {
        require_provider.insert(r.try_get(0)?, r.try_get(1)?);
    }
    Ok(check_rows(&rows, all, questions, &require_provider))
}

/// The record check proper, on rows and events already read: the SQLite backend's
/// `check_records` after its reads.
fn check_rows(
    rows: &[RequestRow],
    all: &[Event],
    mut questions: HashMap<i64, Vec<QuestionRow>>,
    require_provider: &HashMap<i64, bool>,
) -> (i64, Option<RecordBreak>) {
    let creations: Vec<&Event> = all
        .iter()
        .filter(|e| {
            matches!(
                e.event_kind(),
                Some(EventKind::Accepted | EventKind::Rejected)
            )
        })
        .collect();
    let rowless = pruned_rowless(all);
    let mut lifecycle: HashMap<&str, Vec<&Event>> = HashMap::new();
    for e in all.iter().filter(|e| !rowless.contains(&e.seq)) {
        if matches!(
            e.event_kind(),
            Some(
                EventKind::Claimed
                    | EventKind::Released
                    | EventKind::Answered
                    | EventKind::Cancelled
                    | EventKind::Aborted
            )
        ) {
            match e.request_id.as_deref() {
                Some(id) => lifecycle.entry(id).or_default().push(e),
                None => {
                    return (
                        0,
                        Some(RecordBreak {
                            request: None,
                            row: None,
                            event: Some(e.seq),
                            problem: format!("a {} event names no request", e.kind),
                        }),
                    )
                }
            }
        }
    }

    let mut checked = 0;
    for (i, row) in rows.iter().enumerate() {
        let brk = |event: Option<i64>, problem: String| RecordBreak {
            request: row.id.clone(),
            row: Some(row.seq),
            event,
            problem,
        };
        let Some(ev) = creations.get(i) else {
            return (
                checked,
                Some(brk(
                    None,
                    "has no accepted or rejected event: the row was inserted outside dshq".into(),
                )),
            );
        };
        let mut problem = if let Some(s) = ev.data.get("rowSeq").and_then(Value::as_i64) {
            (s != row.seq).then(|| format!("the event records row {s}"))
        } else {
            None
        };
        if problem.is_none() && ev.request_id != row.id {
            problem = Some(format!(
                "the event concerns request {}: rows and events do not pair (a row was inserted or removed)",
                ev.request_id.as_deref().unwrap_or("(none)")
            ));
        }
        if problem.is_none() {
            let q = questions.remove(&row.seq).unwrap_or_default();
            problem = if ev.event_kind() == Some(EventKind::Rejected) {
                check_rejected(row, ev, &q)
            } else {
                let id = row.id.as_deref().unwrap_or_default();
                let evs = lifecycle.remove(id).unwrap_or_default();
                match check_accepted(row, ev, &evs, &q) {
                    Some((seq, p)) => {
                        return (checked, Some(brk(Some(seq), p)));
                    }
                    None => None,
                }
            };
        }
        if problem.is_none() {
            // The body parsed and matched its digest in `check_accepted`; a rejection
            // asks for nothing.
            let asked = ev.kind != "rejected"
                && serde_json::from_str::<Request>(&row.body).is_ok_and(|r| r.requires_provider());
            let stored = require_provider.get(&row.seq).copied().unwrap_or(false);
            if stored != asked {
                problem = Some(format!(
                    "requireProvider is {stored} in the row but {asked} in the request the log recorded"
                ));
            }
        }
        if let Some(p) = problem {
            return (checked, Some(brk(Some(ev.seq), p)));
        }
        checked += 1;
    }
    if let Some(ev) = creations.get(rows.len()) {
        return (
            checked,
            Some(RecordBreak {
                request: ev.request_id.clone(),
                row: None,
                event: Some(ev.seq),
                problem: format!("the {} event has no request row: it was removed", ev.kind),
            }),
        );
    }
    if let Some(e) = lifecycle.values().flatten().min_by_key(|e| e.seq) {
        return (
            checked,
            Some(RecordBreak {
                request: e.request_id.clone(),
                row: None,
                event: Some(e.seq),
                problem: format!("the {} event has no accepted request row", e.kind),
            }),
        );
    }
    if let Some(seq) = questions.keys().min() {
        return (
            checked,
            Some(RecordBreak {
                request: None,
                row: Some(*seq),
                event: None,
                problem: "questions rows belong to no request".into(),
            }),
        );
    }
    (checked, None)
}

fn str_field<'a>(ev: &'a Event, name: &str) -> Option<&'a str> {
    ev.data.get(name).and_then(Value::as_str)
}

/// `"x"` or `null`, for messages.
fn show<T: std::fmt::Debug>(v: &Option<T>) -> String {
    match v {
        Some(v) => format!("{v:?}"),
        None => "null".into(),
    }
}

fn differs<T: PartialEq + std::fmt::Debug>(
    what: &str,
    row: &Option<T>,
    log: &Option<T>,
) -> Option<String> {
    (row != log).then(|| {
        format!(
            "{what} is {} in the row but {} in the log",
            show(row),
            show(log)
        )
    })
}

fn check_rejected(row: &RequestRow, ev: &Event, q: &[QuestionRow]) -> Option<String> {
    if row.status != Status::Rejected {
        return Some(format!(
            "status is {:?} in the row but the log says rejected",
            row.status.as_str()
        ));
    }
    differs("createdAt", &Some(row.created_ms), &Some(ev.at_ms))
        .or_else(|| differs("finishedAt", &row.finished_ms, &Some(ev.at_ms)))
        .or_else(|| {
            differs(
                "error code",
                &row.error_code.as_deref(),
                &str_field(ev, "code"),
            )
        })
        .or_else(|| {
            differs(
                "error message",
                &row.error_message.as_deref(),
                &str_field(ev, "message"),
            )
        })
        .or_else(|| {
            differs(
                "source",
                &Some(row.source.as_str()),
                &str_field(ev, "source"),
            )
        })
        .or_else(|| {
            // Recorded since the second pass; older rejected events carry no context.
            let c = str_field(ev, "context")?;
            differs("context", &Some(row.context.as_str()), &Some(c))
        })
        .or_else(|| {
            // A rejection is filed under no agent, deadline or claim: those columns stay
            // empty (the list shows them).
            let set = [
                (
                    "agent",
                    row.agent_id.is_some() || row.agent_instance.is_some(),
                ),
                ("lineage", row.agent_lineage.is_some()),
                ("deadline", row.deadline_ms.is_some()),
                (
                    "claim",
                    row.claimed_lease.is_some() || row.claimed_ms.is_some(),
                ),
            ];
            set.iter()
                .find(|(_, on)| *on)
                .map(|(what, _)| format!("a rejected row carries a {what}"))
        })
        .or_else(|| {
            let want = str_field(ev, "bodySha256")?;
            let got = chain::hex(&Sha256::digest(row.body.as_bytes()));
            (got != want).then(|| "the rejected input does not match its digest in the log".into())
        })
        .or_else(|| {
            (row.answer.is_some() || row.decision.is_some() || row.provider.is_some())
                .then(|| "a rejected row carries an answer or a provider".into())
        })
        .or_else(|| (!q.is_empty()).then(|| "a rejected row has question rows".into()))
}

/// The state the log implies for an accepted request.
#[derive(Debug, Default)]
struct Replayed<'a> {
    status: Option<Status>,
    claimed_lease: Option<i64>,
    claimed_ms: Option<i64>,
    finished_ms: Option<i64>,
    last: Option<&'a Event>,
}

/// Compare an accepted request's row with its events; the first problem and the event it
/// concerns.
fn check_accepted(
    row: &RequestRow,
    accepted: &Event,
    evs: &[&Event],
    q: &[QuestionRow],
) -> Option<(i64, String)> {
    let at = |p: Option<String>| p.map(|p| (accepted.seq, p));
    if row.status == Status::Rejected {
        return Some((
            accepted.seq,
            "status is \"rejected\" in the row but the log says accepted".into(),
        ));
    }
    let p = differs("createdAt", &Some(row.created_ms), &Some(accepted.at_ms))
        .or_else(|| {
            differs(
                "context",
                &Some(row.context.as_str()),
                &str_field(accepted, "context"),
            )
        })
        .or_else(|| {
            differs(
                "source",
                &Some(row.source.as_str()),
                &str_field(accepted, "source"),
            )
        })
        .or_else(|| {
            differs(
                "agent",
                &row.agent_id.as_deref(),
                &accepted.agent_id.as_deref(),
            )
        })
        .or_else(|| {
            let d = accepted.data.get("deadlineMs")?;
            differs("deadline", &row.deadline_ms, &d.as_i64())
        })
        .or_else(|| {
            let l = accepted.data.get("lineage")?;
            differs("lineage", &row.agent_lineage.as_deref(), &l.as_str())
        });
    if p.is_some() {
        return at(p);
    }
    let request: Request = match serde_json::from_str(&row.body) {
        Ok(r) => r,
        Err(e) => return at(Some(format!("its request body does not parse ({e})"))),
    };
    if let Some(want) = str_field(accepted, "digest") {
        if request_digest(&request) != want {
            return at(Some(
                "its request content does not match the digest the log recorded (the request was rewritten)"
                    .into(),
            ));
        }
    }
    let p = differs(
        "the agent instance",
        &row.agent_instance.as_deref(),
        &request.agent.as_ref().map(|a| a.instance.as_str()),
    )
    .or_else(|| {
        differs(
            "the agent",
            &row.agent_id.as_deref(),
            &request.agent.as_ref().map(|a| a.id.as_str()),
        )
    })
    .or_else(|| check_question_rows(&request, q));
    if p.is_some() {
        return at(p);
    }

    // Replay the lifecycle.
    let mut st = Replayed {
        status: Some(Status::Pending),
        ..Default::default()
    };
    for e in evs {
        if e.seq < accepted.seq {
            return Some((e.seq, format!("a {} event precedes the acceptance", e.kind)));
        }
        if st.status.is_some_and(Status::is_final) {
            return Some((e.seq, format!("a {} event follows the final state", e.kind)));
        }
        match e.event_kind() {
            Some(EventKind::Claimed) => {
                if st.status != Some(Status::Pending) {
                    return Some((e.seq, "claimed while not pending".into()));
                }
                st.status = Some(Status::Claimed);
                st.claimed_lease = e.lease_id;
                st.claimed_ms = Some(e.at_ms);
            }
            Some(EventKind::Released) => {
                if st.status != Some(Status::Claimed) {
                    return Some((e.seq, "released while not claimed".into()));
                }
                st.status = Some(Status::Pending);
                st.claimed_lease = None;
                st.claimed_ms = None;
            }
            Some(EventKind::Answered) => {
                st.status = Some(Status::Answered);
                st.claimed_lease = e.lease_id;
                st.claimed_ms = st.claimed_ms.or(Some(e.at_ms));
                st.finished_ms = Some(e.at_ms);
            }
            Some(kind @ (EventKind::Cancelled | EventKind::Aborted)) => {
                st.status = Some(if kind == EventKind::Cancelled {
                    Status::Cancelled
                } else {
                    Status::Aborted
                });
                st.claimed_lease = e.lease_id.or(st.claimed_lease);
                st.finished_ms = Some(e.at_ms);
            }
            _ => unreachable!("only lifecycle kinds are collected"),
        }
        st.last = Some(e);
    }
    let last_seq = st.last.map_or(accepted.seq, |e| e.seq);
    let here = |p: Option<String>| p.map(|p| (last_seq, p));
    let p = differs(
        "status",
        &Some(row.status.as_str()),
        &st.status.map(Status::as_str),
    )
    .or_else(|| differs("the claiming lease", &row.claimed_lease, &st.claimed_lease))
    .or_else(|| differs("claimedAt", &row.claimed_ms, &st.claimed_ms))
    .or_else(|| differs("finishedAt", &row.finished_ms, &st.finished_ms));
    if p.is_some() {
        return here(p);
    }
    let p = match (row.status, st.last) {
        (Status::Answered, Some(e)) => check_answered(row, e, &request, q),
        (Status::Cancelled | Status::Aborted, Some(e)) => {
            let provider = match e.data.get("provider") {
                Some(p) => p.as_str(),
                None if e.event_kind() == Some(EventKind::Cancelled) => {
                    e.actor.strip_prefix("provider:")
                }
                None => None,
            };
            differs("provider", &row.provider.as_deref(), &provider)
                .or_else(|| {
                    differs(
                        "error code",
                        &row.error_code.as_deref(),
                        &str_field(e, "code"),
                    )
                })
                .or_else(|| {
                    differs(
                        "error message",
                        &row.error_message.as_deref(),
                        &str_field(e, "message"),
                    )
                })
                .or_else(|| unanswered(row, q))
        }
        _ => differs("provider", &row.provider.as_deref(), &None)
            .or_else(|| differs("error code", &row.error_code.as_deref(), &None))
            .or_else(|| unanswered(row, q)),
    };
    here(p)
}

/// The row and its questions carry no answer.
fn unanswered(row: &RequestRow, q: &[QuestionRow]) -> Option<String> {
    differs("answer", &row.answer.as_deref(), &None)
        .or_else(|| differs("decision", &row.decision.map(Decision::as_str), &None))
        .or_else(|| {
            q.iter()
                .find(|q| q.selected.is_some() || q.custom.is_some() || q.decision.is_some())
                .map(|q| {
                    format!(
                        "question {:?} carries an answer the log does not have",
                        q.qid
                    )
                })
        })
}

fn check_answered(
    row: &RequestRow,
    e: &Event,
    request: &Request,
    q: &[QuestionRow],
) -> Option<String> {
    let provider = match e.data.get("provider") {
        Some(p) => p.as_str(),
        None => e.actor.strip_prefix("provider:"),
    };
    let p = differs("provider", &row.provider.as_deref(), &provider)
        .or_else(|| {
            differs(
                "decision",
                &row.decision.map(Decision::as_str),
                &str_field(e, "decision"),
            )
        })
        .or_else(|| differs("error code", &row.error_code.as_deref(), &None));
    if p.is_some() {
        return p;
    }
    let stored: Option<Answer> = row
        .answer
        .as_deref()
        .and_then(|a| serde_json::from_str(a).ok());
    let Some(stored) = stored else {
        return Some("the row's answer is missing or does not parse".into());
    };
    // The answer of record: the event's when it carries one, else (older events) the row's.
    let answer = match e.data.get("answer") {
        Some(a) => match serde_json::from_value::<Answer>(a.clone()) {
            Ok(a) => a,
            Err(err) => return Some(format!("the log's answer does not parse ({err})")),
        },
        None => stored.clone(),
    };
    if stored != answer {
        return Some("the answer in the row is not the answer in the log".into());
    }
    let decisions = match check_answer(&request.questions, &answer) {
        Ok(d) => d,
        Err(err) => {
            return Some(format!(
                "the answer does not answer the request ({})",
                err.message
            ))
        }
    };
    if let Some(logged) = e.data.get("decisions").and_then(Value::as_object) {
        for (question, d) in request.questions.iter().zip(&decisions) {
            let l = logged.get(&question.id).and_then(Value::as_str);
            if l != d.map(Decision::as_str) {
                return Some(format!(
                    "the decision of question {:?} is {} by the answer but {} in the log",
                    question.id,
                    show(&d.map(Decision::as_str)),
                    show(&l)
                ));
            }
        }
    }
    if row.decision != request_decision(&decisions) {
        return Some(format!(
            "decision is {} in the row but the answer makes it {}",
            show(&row.decision.map(Decision::as_str)),
            show(&request_decision(&decisions).map(Decision::as_str))
        ));
    }
    for (qr, (question, d)) in q.iter().zip(request.questions.iter().zip(&decisions)) {
        let item = answer.answers.iter().find(|a| a.id == question.id)?;
        let selected: Option<Vec<String>> = qr
            .selected
            .as_deref()
            .and_then(|s| serde_json::from_str(s).ok());
        let p = differs(
            &format!("question {:?}'s selected labels", qr.qid),
            &selected,
            &Some(item.selected.clone()),
        )
        .or_else(|| {
            differs(
                &format!("question {:?}'s custom text", qr.qid),
                &qr.custom,
                &item.custom,
            )
        })
        .or_else(|| {
            differs(
                &format!("question {:?}'s decision", qr.qid),
                &qr.decision.as_deref(),
                &d.map(Decision::as_str),
            )
        });
        if p.is_some() {
            return p;
        }
    }
    None
}

/// The question rows are the request's questions.
fn check_question_rows(request: &Request, q: &[QuestionRow]) -> Option<String> {
    if q.len() != request.questions.len() {
        return Some(format!(
            "it has {} question rows but the request has {} questions",
            q.len(),
            request.questions.len()
        ));
    }
    for (i, (qr, question)) in q.iter().zip(&request.questions).enumerate() {
        let name = format!("question {:?}", question.id);
        let options = serde_json::to_value(question.options()).ok();
        let stored: Option<Value> = serde_json::from_str(&qr.options).ok();
        let p = differs("question position", &Some(qr.idx), &Some(i as i64))
            .or_else(|| differs(&format!("{name}'s id"), &Some(&qr.qid), &Some(&question.id)))
            .or_else(|| {
                differs(
                    &format!("{name}'s question text"),
                    &Some(&qr.question),
                    &Some(&question.question),
                )
            })
            .or_else(|| differs(&format!("{name}'s header"), &qr.header, &question.header))
            .or_else(|| differs(&format!("{name}'s detail"), &qr.detail, &question.detail))
            .or_else(|| {
                differs(
                    &format!("{name}'s multi-select"),
                    &Some(qr.multi_select),
                    &Some(question.is_multi()),
                )
            })
            .or_else(|| {
                differs(
                    &format!("{name}'s intent"),
                    &qr.intent_kind.as_deref(),
                    &question.intent.as_ref().map(|i| i.kind.as_str()),
                )
            })
            .or_else(|| {
                differs(
                    &format!("{name}'s approving option"),
                    &qr.intent_approve.as_deref(),
                    &question.intent.as_ref().map(|i| i.approve.as_str()),
                )
            })
            .or_else(|| differs(&format!("{name}'s options"), &stored, &options));
        if p.is_some() {
            return p;
        }
    }
    None
}

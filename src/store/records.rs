//! The record check proper: every request row and its questions against the event log,
//! backend-neutral.
//!
//! The event log is the record: every request row and its questions must be what the log
//! says happened to it. The `requests` and `questions` tables are what `show`, `history`
//! and the outbox read, and nothing but this check protects them: a row edited in place
//! (an answer, a provider, a decision, a question's text) or inserted without events would
//! otherwise be presented as real. [`check_rows`] replays each request's events (accepted
//! or rejected, then claimed, released, answered, cancelled, aborted) and compares the
//! state they imply with the row: status, times, lease, provider, answer, decisions,
//! error, and the request content through the digest the `accepted` event carries.
//!
//! Why here and not in a backend: the check is pure (rows and events in, the first
//! disagreement out), and it must judge a store the same way on SQLite and PostgreSQL (a
//! copy verifies on the other backend unchanged). `queue::audit::check_records` reads the
//! tables into [`RequestRow`], [`QuestionRow`] and [`Event`] through each driver's
//! `AuditReads` and calls [`check_rows`]; no SQL and no driver type is in this module.
//!
//! An answer that edited a proposal (edit-then-approve) carries its edits on the row and
//! in the `answered` event: the two must be equal, and each edit must be the request's
//! proposal and the answer's approved text.
//!
//! Rows and their creation events pair in insertion order (one `accepted` or `rejected`
//! event is appended in the transaction that inserts each row); events written since the
//! log carried the record also name their row (`rowSeq`). Events written before that carry
//! less (no digest, no answer document): for those rows only what the event carries is
//! checked (status, times, lease, provider, decision, error), and the answer must still
//! satisfy the request and agree with the question rows.

use std::collections::HashMap;

use serde_json::Value;
use sha2::{Digest, Sha256};

use crate::core::audit::EventKind;
use crate::core::lifecycle::{RequestRow, Status};
use crate::core::quorum::Vote;
use crate::protocol::answer::{check_answer, request_decision};
use crate::protocol::digest::{hex, request_digest};
use crate::protocol::types::{Answer, Decision, Edits, Request};
use crate::store::types::Event;

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

/// A `questions` row, as a backend reads it.
#[derive(Debug, Clone)]
pub struct QuestionRow {
    /// Its position in the request (0-based).
    pub idx: i64,
    /// The question's id.
    pub qid: String,
    /// The question text.
    pub question: String,
    /// Its short header.
    pub header: Option<String>,
    /// Its detail text.
    pub detail: Option<String>,
    /// Whether several options may be selected.
    pub multi_select: bool,
    /// The intent's kind, when it has one.
    pub intent_kind: Option<String>,
    /// The intent's approving option.
    pub intent_approve: Option<String>,
    /// The options, as JSON text.
    pub options: String,
    /// The selected labels (JSON text), once answered.
    pub selected: Option<String>,
    /// The custom text, once answered.
    pub custom: Option<String>,
    /// The decision the answer made, once answered.
    pub decision: Option<String>,
}

/// Compare every request row (`rows`, oldest first) and its questions (by
/// `requests.seq`, in question order) with the log (`all`: every event, oldest first);
/// `require_provider` is each row's stored flag (not in [`RequestRow`]: nothing but
/// export reads it). Returns the number of rows checked and the first disagreement.
pub fn check_rows(
    rows: &[RequestRow],
    all: &[Event],
    mut questions: HashMap<i64, Vec<QuestionRow>>,
    require_provider: &HashMap<i64, bool>,
    mut votes: HashMap<i64, Vec<Vote>>,
) -> (i64, Option<RecordBreak>) {
    let (creations, mut lifecycle) = match index_events(all) {
        Ok(indexed) => indexed,
        Err(brk) => return (0, Some(brk)),
    };
    let mut checked = 0;
    for (i, row) in rows.iter().enumerate() {
        let Some(ev) = creations.get(i) else {
            return (
                checked,
                Some(row_break(
                    row,
                    None,
                    "has no accepted or rejected event: the row was inserted outside dshq".into(),
                )),
            );
        };
        let q = questions.remove(&row.seq).unwrap_or_default();
        let v = votes.remove(&row.seq).unwrap_or_default();
        let stored = require_provider.get(&row.seq).copied().unwrap_or(false);
        if let Some(brk) = check_row(row, ev, &mut lifecycle, &q, &v, stored) {
            return (checked, Some(brk));
        }
        checked += 1;
    }
    (
        checked,
        left_over(
            &creations[rows.len().min(creations.len())..],
            &lifecycle,
            &questions,
            &votes,
        ),
    )
}

/// Lifecycle events by the id of the request they concern, oldest first.
type ByRequest<'a> = HashMap<&'a str, Vec<&'a Event>>;

/// The log's creation events (`accepted`, `rejected`), oldest first, and each request's
/// lifecycle events by its id, leaving out those of requests a prune removed while they
/// still had events to come (rowless by design, named by the newest checkpoint:
/// `store::chain::Checkpoint::rowless`). A lifecycle event that names no request breaks.
fn index_events(all: &[Event]) -> Result<(Vec<&Event>, ByRequest<'_>), RecordBreak> {
    let creations: Vec<&Event> = all
        .iter()
        .filter(|e| {
            matches!(
                e.event_kind(),
                Some(EventKind::Accepted | EventKind::Rejected)
            )
        })
        .collect();
    let rowless = all
        .iter()
        .rev()
        .find(|e| e.event_kind() == Some(EventKind::Pruned))
        .and_then(|e| crate::store::chain::Checkpoint::from_data(&e.data))
        .map(|c| {
            c.rowless(
                all.iter()
                    .map(|e| (e.seq, e.kind.as_str(), e.request_id.as_deref())),
            )
        })
        .unwrap_or_default();
    let mut lifecycle = ByRequest::new();
    for e in all.iter().filter(|e| !rowless.contains(&e.seq)) {
        if matches!(
            e.event_kind(),
            Some(
                EventKind::Claimed
                    | EventKind::Released
                    | EventKind::Answered
                    | EventKind::Voted
                    | EventKind::Cancelled
                    | EventKind::Aborted
                    | EventKind::Reminded
                    | EventKind::Escalated
                    | EventKind::Expired
            )
        ) {
            match e.request_id.as_deref() {
                Some(id) => lifecycle.entry(id).or_default().push(e),
                None => {
                    return Err(RecordBreak {
                        request: None,
                        row: None,
                        event: Some(e.seq),
                        problem: format!("a {} event names no request", e.kind),
                    })
                }
            }
        }
    }
    Ok((creations, lifecycle))
}

/// A break at `row` (and the event concerned, if one is).
fn row_break(row: &RequestRow, event: Option<i64>, problem: String) -> RecordBreak {
    RecordBreak {
        request: row.id.clone(),
        row: Some(row.seq),
        event,
        problem,
    }
}

/// One request row against its creation event `ev` (they pair), its lifecycle events
/// (taken out of `lifecycle`), its questions and votes rows and its stored
/// `requireProvider` flag: the first disagreement.
fn check_row(
    row: &RequestRow,
    ev: &Event,
    lifecycle: &mut ByRequest<'_>,
    q: &[QuestionRow],
    v: &[Vote],
    require_provider: bool,
) -> Option<RecordBreak> {
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
        problem = if ev.event_kind() == Some(EventKind::Rejected) {
            check_rejected(row, ev, q)
                .or_else(|| (!v.is_empty()).then(|| "a rejected input has votes rows".to_string()))
        } else {
            let id = row.id.as_deref().unwrap_or_default();
            let evs = lifecycle.remove(id).unwrap_or_default();
            if let Some((seq, p)) = check_accepted(row, ev, &evs, q, v) {
                return Some(row_break(row, Some(seq), p));
            }
            None
        };
    }
    if problem.is_none() {
        // The body parsed and matched its digest in `check_accepted`; a rejection
        // asks for nothing.
        let asked = ev.kind != "rejected"
            && serde_json::from_str::<Request>(&row.body).is_ok_and(|r| r.requires_provider());
        if require_provider != asked {
            problem = Some(format!(
                "requireProvider is {require_provider} in the row but {asked} in the request the log recorded"
            ));
        }
    }
    problem.map(|p| row_break(row, Some(ev.seq), p))
}

/// What the rows left unpaired once every row was checked: a creation event with no row
/// (`unpaired`, those past the last row), a lifecycle event of no accepted row, questions
/// or votes rows of no request.
fn left_over(
    unpaired: &[&Event],
    lifecycle: &ByRequest<'_>,
    questions: &HashMap<i64, Vec<QuestionRow>>,
    votes: &HashMap<i64, Vec<Vote>>,
) -> Option<RecordBreak> {
    if let Some(ev) = unpaired.first() {
        return Some(RecordBreak {
            request: ev.request_id.clone(),
            row: None,
            event: Some(ev.seq),
            problem: format!("the {} event has no request row: it was removed", ev.kind),
        });
    }
    if let Some(e) = lifecycle.values().flatten().min_by_key(|e| e.seq) {
        return Some(RecordBreak {
            request: e.request_id.clone(),
            row: None,
            event: Some(e.seq),
            problem: format!("the {} event has no accepted request row", e.kind),
        });
    }
    let rowless = |seq: Option<&i64>, problem: &str| {
        seq.map(|seq| RecordBreak {
            request: None,
            row: Some(*seq),
            event: None,
            problem: problem.into(),
        })
    };
    rowless(
        questions.keys().min(),
        "questions rows belong to no request",
    )
    .or_else(|| rowless(votes.keys().min(), "votes rows belong to no request"))
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

/// [`differs`] for a JSON column and the value its event logged, compared as JSON (a
/// column that does not parse is compared as the string it holds, and so differs).
fn differs_json(what: &str, row: Option<&str>, log: Option<&Value>) -> Option<String> {
    let row = row.map(|c| serde_json::from_str::<Value>(c).unwrap_or(Value::String(c.into())));
    differs(
        what,
        &row.as_ref().map(Value::to_string),
        &log.map(Value::to_string),
    )
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
                ("ladder", row.ladder.is_some() || row.ladder_done != 0),
                ("decidedBy", row.decided_by.is_some()),
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
            let got = hex(&Sha256::digest(row.body.as_bytes()));
            (got != want).then(|| "the rejected input does not match its digest in the log".into())
        })
        .or_else(|| {
            (row.answer.is_some()
                || row.decision.is_some()
                || row.provider.is_some()
                || row.edits.is_some())
            .then(|| "a rejected row carries an answer or a provider".into())
        })
        .or_else(|| (!q.is_empty()).then(|| "a rejected row has question rows".into()))
}

/// The state the log implies for an accepted request.
#[derive(Debug, Default)]
struct Replayed<'a> {
    status: Option<Status>,
    /// The context: the accepted one, moved by each escalation with `to`.
    context: Option<&'a str>,
    /// The ladder's rungs that ran.
    rungs: i64,
    /// `policy` when the expiry answered with the asker's default.
    decided_by: Option<&'a str>,
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
    votes: &[Vote],
) -> Option<(i64, String)> {
    let at = |p: String| (accepted.seq, p);
    if let Some(p) = check_acceptance(row, accepted) {
        return Some(at(p));
    }
    let request = match accepted_request(row, accepted, q) {
        Ok(r) => r,
        Err(p) => return Some(at(p)),
    };
    let (st, voted) = match replay(accepted, evs) {
        Ok(replayed) => replayed,
        Err(brk) => return Some(brk),
    };
    if let Some(p) = check_votes(row, &voted, votes) {
        return Some(p);
    }
    let last_seq = st.last.map_or(accepted.seq, |e| e.seq);
    check_replayed(row, &st)
        .or_else(|| check_ending(row, st.last, &request, q))
        .map(|p| (last_seq, p))
}

/// The columns the acceptance wrote are the `accepted` event's: the time, the ladder, the
/// source, the agent, the deadline, the lineage, the quorum.
fn check_acceptance(row: &RequestRow, accepted: &Event) -> Option<String> {
    if row.status == Status::Rejected {
        return Some("status is \"rejected\" in the row but the log says accepted".into());
    }
    differs("createdAt", &Some(row.created_ms), &Some(accepted.at_ms))
        .or_else(|| check_ladder_column(row, accepted))
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
        })
        // The quorum the request is held to: the row's is the log's.
        .or_else(|| differs_json("quorum", row.quorum.as_deref(), accepted.data.get("quorum")))
}

/// The row's request body, once it parses, matches the digest the `accepted` event
/// recorded, and agrees with the row's agent columns and its question rows.
fn accepted_request(
    row: &RequestRow,
    accepted: &Event,
    q: &[QuestionRow],
) -> Result<Request, String> {
    let request: Request = serde_json::from_str(&row.body)
        .map_err(|e| format!("its request body does not parse ({e})"))?;
    if let Some(want) = str_field(accepted, "digest") {
        if request_digest(&request) != want {
            return Err(
                "its request content does not match the digest the log recorded (the request was rewritten)"
                    .into(),
            );
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
    match p {
        Some(p) => Err(p),
        None => Ok(request),
    }
}

/// Replay an accepted request's lifecycle events: the state they imply and its `voted`
/// events, or the first event that could not have happened then (and why).
fn replay<'a>(
    accepted: &'a Event,
    evs: &[&'a Event],
) -> Result<(Replayed<'a>, Vec<&'a Event>), (i64, String)> {
    let mut st = Replayed {
        status: Some(Status::Pending),
        context: str_field(accepted, "context"),
        ..Default::default()
    };
    let mut voted: Vec<&Event> = Vec::new();
    for &e in evs {
        if e.seq < accepted.seq {
            return Err((e.seq, format!("a {} event precedes the acceptance", e.kind)));
        }
        if st.status.is_some_and(Status::is_final) {
            return Err((e.seq, format!("a {} event follows the final state", e.kind)));
        }
        if e.event_kind() == Some(EventKind::Voted) {
            // A vote changes no state; it is cast while the request is open.
            voted.push(e);
            continue;
        }
        st.step(e).map_err(|p| (e.seq, p.into()))?;
        st.last = Some(e);
    }
    Ok((st, voted))
}

impl<'a> Replayed<'a> {
    /// The state after lifecycle event `e` (not a vote), or why it could not happen now.
    fn step(&mut self, e: &'a Event) -> Result<(), &'static str> {
        match e.event_kind() {
            Some(EventKind::Claimed) => {
                if self.status != Some(Status::Pending) {
                    return Err("claimed while not pending");
                }
                self.status = Some(Status::Claimed);
                self.claimed_lease = e.lease_id;
                self.claimed_ms = Some(e.at_ms);
            }
            Some(EventKind::Released) => {
                if self.status != Some(Status::Claimed) {
                    return Err("released while not claimed");
                }
                self.status = Some(Status::Pending);
                self.claimed_lease = None;
                self.claimed_ms = None;
            }
            Some(EventKind::Answered) => {
                self.status = Some(Status::Answered);
                self.claimed_lease = e.lease_id;
                self.claimed_ms = self.claimed_ms.or(Some(e.at_ms));
                self.finished_ms = Some(e.at_ms);
            }
            Some(kind @ (EventKind::Cancelled | EventKind::Aborted)) => {
                self.status = Some(if kind == EventKind::Cancelled {
                    Status::Cancelled
                } else {
                    Status::Aborted
                });
                self.claimed_lease = e.lease_id.or(self.claimed_lease);
                self.finished_ms = Some(e.at_ms);
            }
            // The ladder: every rung counts; an escalation with `to` moves the
            // request, as pending; the expiry ends it, answered by policy or expired.
            Some(EventKind::Reminded) => self.rungs += 1,
            Some(EventKind::Escalated) => {
                self.rungs += 1;
                if let Some(to) = str_field(e, "to") {
                    self.context = Some(to);
                    self.status = Some(Status::Pending);
                    self.claimed_lease = None;
                    self.claimed_ms = None;
                }
            }
            Some(EventKind::Expired) => {
                self.rungs += 1;
                if str_field(e, "decidedBy") == Some("policy") {
                    self.status = Some(Status::Answered);
                    self.decided_by = Some("policy");
                } else {
                    self.status = Some(Status::Expired);
                }
                self.finished_ms = Some(e.at_ms);
            }
            _ => unreachable!("only lifecycle kinds are collected"),
        }
        Ok(())
    }
}

/// The row's state columns are the replayed state's.
fn check_replayed(row: &RequestRow, st: &Replayed) -> Option<String> {
    differs(
        "status",
        &Some(row.status.as_str()),
        &st.status.map(Status::as_str),
    )
    .or_else(|| differs("context", &Some(row.context.as_str()), &st.context))
    .or_else(|| {
        differs(
            "the ladder's rungs run",
            &Some(row.ladder_done),
            &Some(st.rungs),
        )
    })
    .or_else(|| differs("decidedBy", &row.decided_by.as_deref(), &st.decided_by))
    .or_else(|| differs("the claiming lease", &row.claimed_lease, &st.claimed_lease))
    .or_else(|| differs("claimedAt", &row.claimed_ms, &st.claimed_ms))
    .or_else(|| differs("finishedAt", &row.finished_ms, &st.finished_ms))
}

/// The row's provider, error and answer columns are what its last event (`last`) says of
/// how it ended: answered, ended without an answer, or (still open) none of them.
fn check_ending(
    row: &RequestRow,
    last: Option<&Event>,
    request: &Request,
    q: &[QuestionRow],
) -> Option<String> {
    match (row.status, last) {
        (Status::Answered, Some(e)) => check_answered(row, e, request, q),
        (Status::Cancelled | Status::Aborted | Status::Expired, Some(e)) => {
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
    }
}

/// The row's resolved ladder is the one the `accepted` event recorded, and
/// none when it recorded none.
fn check_ladder_column(row: &RequestRow, accepted: &Event) -> Option<String> {
    use crate::protocol::ladder::Rungs;
    let logged = match accepted.data.get("ladder") {
        None | Some(Value::Null) => None,
        Some(v) => match serde_json::from_value::<Rungs>(v.clone()) {
            Ok(r) => Some(r),
            Err(e) => return Some(format!("the log's ladder does not parse ({e})")),
        },
    };
    let stored = match row.ladder.as_deref() {
        None => None,
        Some(s) => match Rungs::parse(s) {
            Some(r) => Some(r),
            None => return Some("the row's ladder does not parse".into()),
        },
    };
    (stored != logged).then(|| "the row's ladder is not the ladder the log recorded".into())
}

/// The votes rows of a request are its `voted` events: the same voters, each
/// with the answer, decision and person its event recorded, and votes only under a quorum.
fn check_votes(row: &RequestRow, voted: &[&Event], votes: &[Vote]) -> Option<(i64, String)> {
    let at_last = voted.last().map_or(0, |e| e.seq);
    if row.quorum.is_none() && (!voted.is_empty() || !votes.is_empty()) {
        return Some((at_last, "the request has no quorum but has votes".into()));
    }
    let mut by_voter: HashMap<&str, &Vote> = votes.iter().map(|v| (v.voter.as_str(), v)).collect();
    for e in voted {
        let voter = str_field(e, "voter").unwrap_or_default();
        let Some(v) = by_voter.remove(voter) else {
            return Some((
                e.seq,
                format!("the vote of {voter:?} in the log has no votes row"),
            ));
        };
        let row_answer = serde_json::from_str::<Value>(&v.answer).ok();
        let p = differs(
            &format!("the answer of {voter:?}'s vote"),
            &row_answer.as_ref().map(Value::to_string),
            &e.data.get("answer").map(Value::to_string),
        )
        .or_else(|| {
            differs(
                &format!("the decision of {voter:?}'s vote"),
                &v.decision.map(Decision::as_str),
                &str_field(e, "decision"),
            )
        })
        .or_else(|| {
            differs(
                &format!("the time of {voter:?}'s vote"),
                &Some(v.at_ms),
                &Some(e.at_ms),
            )
        })
        // The person the vote counted for (none on a vote recorded before persons).
        .or_else(|| {
            differs(
                &format!("the person of {voter:?}'s vote"),
                &v.person.as_deref(),
                &str_field(e, "person"),
            )
        })
        // The away person a delegate's vote was cast for.
        .or_else(|| {
            differs(
                &format!("the person {voter:?}'s vote was cast for"),
                &v.for_person.as_deref(),
                &str_field(e, "for"),
            )
        });
        if let Some(p) = p {
            return Some((e.seq, p));
        }
    }
    if let Some(voter) = by_voter.keys().min() {
        return Some((
            at_last,
            format!("the votes row of {voter:?} has no voted event: it was inserted outside dshq"),
        ));
    }
    None
}

/// The row and its questions carry no answer.
fn unanswered(row: &RequestRow, q: &[QuestionRow]) -> Option<String> {
    differs("answer", &row.answer.as_deref(), &None)
        .or_else(|| differs("approvers", &row.approvers.as_deref(), &None))
        .or_else(|| differs("edits", &row.edits.as_deref(), &None))
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
        .or_else(|| differs("error code", &row.error_code.as_deref(), &None))
        // A delegate's answer: the person it was made for is the log's.
        .or_else(|| {
            differs(
                "onBehalfOf",
                &row.on_behalf_of.as_deref(),
                &str_field(e, "for"),
            )
        })
        // The approvers of a request with a quorum: the row's are the log's.
        .or_else(|| {
            differs_json(
                "approvers",
                row.approvers.as_deref(),
                e.data.get("approvers"),
            )
        });
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
    check_edits(row, e, request, &answer).or_else(|| check_decisions(row, e, request, &answer, q))
}

/// The decisions the answer makes are the log's (each question's, when the event lists
/// them) and the row's: the request's decision on the row, each question's selected
/// labels, custom text and decision on its question row.
fn check_decisions(
    row: &RequestRow,
    e: &Event,
    request: &Request,
    answer: &Answer,
    q: &[QuestionRow],
) -> Option<String> {
    let decisions = match check_answer(&request.questions, answer) {
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

/// Edit-then-approve: the row's edits are the log's (the `answered` event's `edits`, absent
/// when nothing was edited), and each logged edit is the one the answer made: the
/// question's proposal as asked and the answer item's `edited` as approved. The diff is
/// compared as recorded, not recomputed, so a store stays verifiable whatever diff a
/// later dshq would print; the chain's hash holds the logged one.
fn check_edits(row: &RequestRow, e: &Event, request: &Request, answer: &Answer) -> Option<String> {
    let stored: Option<Value> = match row.edits.as_deref().map(serde_json::from_str) {
        None => None,
        Some(Ok(v)) => Some(v),
        Some(Err(err)) => return Some(format!("the row's edits do not parse ({err})")),
    };
    let logged = e.data.get("edits");
    if stored.as_ref() != logged {
        let which = match (&stored, logged) {
            (Some(_), None) => "the row carries edits the log does not have",
            (None, Some(_)) => "the log records edits the row does not carry",
            _ => "the edits in the row (proposal, approved text or diff) are not the edits in the log",
        };
        return Some(which.into());
    }
    let edits: Edits = match logged.map(|v| serde_json::from_value(v.clone())) {
        None => Edits::new(),
        Some(Ok(e)) => e,
        Some(Err(err)) => return Some(format!("the log's edits do not parse ({err})")),
    };
    if let Some(qid) = edits
        .keys()
        .find(|k| !request.questions.iter().any(|q| &q.id == *k))
    {
        return Some(format!(
            "the log records an edit of question {qid:?}, which the request does not have"
        ));
    }
    for q in &request.questions {
        let approved = answer
            .answers
            .iter()
            .find(|a| a.id == q.id)
            .and_then(|a| a.edited.as_deref());
        let edit = edits.get(&q.id);
        let p = differs(
            &format!("question {:?}'s approved text", q.id),
            &edit.map(|e| e.approved.as_str()),
            &approved,
        )
        .or_else(|| {
            let e = edit?;
            differs(
                &format!("question {:?}'s proposal", q.id),
                &Some(e.proposed.as_str()),
                &Some(q.detail.as_deref().unwrap_or_default()),
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

//! Requests: accept, reject, claim, answer, cancel, abort, and the reads behind `list`,
//! `show`, `wait` and the outbox.
//!
//! The lifecycle (spec §5) is enforced here with conditional updates: every transition
//! names the states it leaves (`WHERE status IN ('pending', 'claimed')`) and the lease that
//! may make it, so a final state never changes and of two concurrent answers exactly one
//! matches a row.

use rusqlite::{params, Connection, OptionalExtension, Transaction};
use serde::Serialize;

use super::events::{self, NewEvent};
use super::leases::Lease;
use super::{agents, leases};
use crate::clock::{rfc3339, Millis};
use crate::error::{Error, Result};
use crate::protocol::answer::{check_answer, in_question_order, request_decision};
use crate::protocol::check::{check_ask, check_structure, AskEnv, CallerStatus};
use crate::protocol::error::{Code, UserQuestionError};
use crate::protocol::types::{
    AgentRef, Answer, AnsweredOutcome, Decision, ErrorOutcome, Outcome, Request,
};

/// A request's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, strum::VariantArray)]
#[serde(rename_all = "lowercase")]
pub enum Status {
    /// Waiting for a provider.
    Pending,
    /// Reserved by a live lease.
    Claimed,
    /// Final: answered.
    Answered,
    /// Final: cancelled by the provider side (`ASK_CANCELLED`).
    Cancelled,
    /// Final: aborted by the asker or its deadline (`ASK_ABORTED`).
    Aborted,
    /// Final: rejected at ingestion, with its code.
    Rejected,
}

impl Status {
    /// The status as stored and shown.
    pub fn as_str(self) -> &'static str {
        match self {
            Status::Pending => "pending",
            Status::Claimed => "claimed",
            Status::Answered => "answered",
            Status::Cancelled => "cancelled",
            Status::Aborted => "aborted",
            Status::Rejected => "rejected",
        }
    }

    /// Parse a stored status.
    pub fn parse(s: &str) -> Option<Status> {
        Some(match s {
            "pending" => Status::Pending,
            "claimed" => Status::Claimed,
            "answered" => Status::Answered,
            "cancelled" => Status::Cancelled,
            "aborted" => Status::Aborted,
            "rejected" => Status::Rejected,
            _ => return None,
        })
    }

    /// Whether the state is final (never changes again).
    pub fn is_final(self) -> bool {
        !matches!(self, Status::Pending | Status::Claimed)
    }
}

/// A request row (with the claiming provider's name).
#[derive(Debug, Clone, PartialEq)]
pub struct RequestRow {
    /// Row handle.
    pub seq: i64,
    /// Request id (None only for a rejected input without a usable id).
    pub id: Option<String>,
    /// Context.
    pub context: String,
    /// State.
    pub status: Status,
    /// Asking agent.
    pub agent_id: Option<String>,
    /// Asking agent's instance.
    pub agent_instance: Option<String>,
    /// Lineage recorded at acceptance.
    pub agent_lineage: Option<String>,
    /// The request JSON as accepted (raw input for a rejection).
    pub body: String,
    /// `cli` or `inbox:FILE`.
    pub source: String,
    /// Absolute deadline.
    pub deadline_ms: Option<Millis>,
    /// Accepted (or rejected) at.
    pub created_ms: Millis,
    /// The lease that claimed (or answered) it.
    pub claimed_lease: Option<i64>,
    /// The name of that lease's provider.
    pub claimed_by: Option<String>,
    /// Claimed at.
    pub claimed_ms: Option<Millis>,
    /// Final at.
    pub finished_ms: Option<Millis>,
    /// The Answer JSON.
    pub answer: Option<String>,
    /// The plan-review decision of the request.
    pub decision: Option<Decision>,
    /// Provider that answered or cancelled.
    pub provider: Option<String>,
    /// Error code of a cancelled, aborted or rejected request.
    pub error_code: Option<String>,
    /// Its message.
    pub error_message: Option<String>,
}

impl RequestRow {
    /// The request as accepted (None for a rejection, whose body may not parse).
    pub fn request(&self) -> Option<Request> {
        if self.status == Status::Rejected {
            return None;
        }
        serde_json::from_str(&self.body).ok()
    }

    /// The stored answer.
    pub fn parsed_answer(&self) -> Option<Answer> {
        self.answer
            .as_deref()
            .and_then(|a| serde_json::from_str(a).ok())
    }

    /// The digest of the request this row holds ([`crate::protocol::digest`]): of the
    /// accepted request, or of a rejected input when it parses as a request.
    pub fn request_digest(&self) -> Option<String> {
        let request = match self.status {
            Status::Rejected => crate::protocol::check::parse_request(self.body.as_bytes()).ok(),
            _ => self.request(),
        };
        request
            .as_ref()
            .map(crate::protocol::digest::request_digest)
    }

    /// The outcome document, once final.
    pub fn outcome(&self) -> Option<Outcome> {
        let id = self.id.clone()?;
        let finished = self.finished_ms?;
        match self.status {
            Status::Pending | Status::Claimed => None,
            Status::Answered => Some(Outcome::Answered(AnsweredOutcome {
                id,
                status: "answered".into(),
                request_digest: self.request_digest(),
                answer: self.parsed_answer()?,
                decision: self.decision,
                provider: self.provider.clone(),
                created_at: rfc3339(self.created_ms),
                finished_at: rfc3339(finished),
            })),
            Status::Cancelled | Status::Aborted | Status::Rejected => {
                let code =
                    self.error_code
                        .as_deref()
                        .and_then(Code::parse)
                        .unwrap_or(match self.status {
                            Status::Cancelled => Code::AskCancelled,
                            _ => Code::AskAborted,
                        });
                Some(Outcome::Error(ErrorOutcome {
                    id,
                    status: "error".into(),
                    request_digest: self.request_digest(),
                    error: UserQuestionError::new(
                        code,
                        self.error_message.clone().unwrap_or_default(),
                    ),
                    provider: self.provider.clone(),
                    created_at: rfc3339(self.created_ms),
                    finished_at: rfc3339(finished),
                }))
            }
        }
    }
}

/// The fencing condition of a lease-holder's update: `?1` is the lease id, `?2` now and
/// `?4` the generation. A stale holder (ended, expired, or another generation) matches
/// no row.
const LEASE_LIVE: &str = "EXISTS (SELECT 1 FROM leases WHERE lease_id = ?1 AND generation = ?4
                          AND ended_ms IS NULL AND expires_ms >= ?2)";

const COLUMNS: &str = "r.seq, r.id, r.context, r.status, r.agent_id, r.agent_instance, r.agent_lineage, r.body,
    r.source, r.deadline_ms, r.created_ms, r.claimed_lease, l.name, r.claimed_ms, r.finished_ms, r.answer,
    r.decision, r.provider, r.error_code, r.error_message";
const FROM: &str = "requests r LEFT JOIN leases l ON l.lease_id = r.claimed_lease";

fn row(r: &rusqlite::Row<'_>) -> rusqlite::Result<RequestRow> {
    let status: String = r.get(3)?;
    let decision: Option<String> = r.get(16)?;
    Ok(RequestRow {
        seq: r.get(0)?,
        id: r.get(1)?,
        context: r.get(2)?,
        status: Status::parse(&status).unwrap_or(Status::Rejected),
        agent_id: r.get(4)?,
        agent_instance: r.get(5)?,
        agent_lineage: r.get(6)?,
        body: r.get(7)?,
        source: r.get(8)?,
        deadline_ms: r.get(9)?,
        created_ms: r.get(10)?,
        claimed_lease: r.get(11)?,
        claimed_by: r.get(12)?,
        claimed_ms: r.get(13)?,
        finished_ms: r.get(14)?,
        answer: r.get(15)?,
        decision: decision.as_deref().and_then(Decision::parse),
        provider: r.get(17)?,
        error_code: r.get(18)?,
        error_message: r.get(19)?,
    })
}

/// The accepted request with `id` (not a rejection), if any.
pub fn get(conn: &Connection, id: &str) -> Result<Option<RequestRow>> {
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM {FROM} WHERE r.id = ?1 AND r.status <> 'rejected'"
        ))?
        .query_row([id], row)
        .optional()?)
}

/// The request with `id`, or else its newest rejection.
pub fn get_any(conn: &Connection, id: &str) -> Result<Option<RequestRow>> {
    if let Some(r) = get(conn, id)? {
        return Ok(Some(r));
    }
    Ok(conn
        .prepare_cached(&format!(
            "SELECT {COLUMNS} FROM {FROM} WHERE r.id = ?1 ORDER BY r.seq DESC LIMIT 1"
        ))?
        .query_row([id], row)
        .optional()?)
}

/// Filters for [`list`].
#[derive(Debug, Clone, Default)]
pub struct ListFilter {
    /// Only this status.
    pub status: Option<Status>,
    /// Only this context.
    pub context: Option<String>,
    /// At most this many rows.
    pub limit: Option<i64>,
    /// Oldest first instead of newest first.
    pub oldest_first: bool,
}

/// Requests, newest first (or oldest first).
pub fn list(conn: &Connection, f: &ListFilter) -> Result<Vec<RequestRow>> {
    let order = if f.oldest_first { "ASC" } else { "DESC" };
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM {FROM}
         WHERE (?1 IS NULL OR r.status = ?1) AND (?2 IS NULL OR r.context = ?2)
         ORDER BY r.seq {order} LIMIT ?3"
    ))?;
    let rows = stmt.query_map(
        params![
            f.status.map(Status::as_str),
            f.context,
            f.limit.unwrap_or(-1)
        ],
        row,
    )?;
    Ok(rows.collect::<rusqlite::Result<_>>()?)
}

struct TxEnv<'a> {
    tx: &'a Transaction<'a>,
    now: Millis,
    lineage: std::cell::RefCell<Option<String>>,
    failure: std::cell::RefCell<Option<Error>>,
}

impl AskEnv for TxEnv<'_> {
    fn caller(&self, agent: &AgentRef) -> CallerStatus {
        match agents::caller_status(self.tx, agent, self.now) {
            Ok((status, lineage)) => {
                *self.lineage.borrow_mut() = lineage;
                status
            }
            Err(e) => {
                *self.failure.borrow_mut() = Some(e);
                CallerStatus::NotLive {
                    why: "the registry could not be read".into(),
                }
            }
        }
    }

    fn provider_live(&self, context: &str) -> bool {
        match leases::live_in(self.tx, context, self.now) {
            Ok(live) => live,
            Err(e) => {
                *self.failure.borrow_mut() = Some(e);
                false
            }
        }
    }
}

/// The result of accepting a request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Accepted {
    /// The request id.
    pub id: String,
    /// The context.
    pub context: String,
    /// False when this was an idempotent re-delivery of an existing request.
    pub new: bool,
    /// The request's state now.
    pub status: Status,
    /// An earlier input with this id was rejected: its error outcome file, if any, is
    /// stale and must go.
    #[serde(skip)]
    pub replaced_rejection: bool,
}

/// Check and accept a parsed request (spec §3). `fallback_id` is the file name for inbox
/// files; `source` is recorded. A rejection is an `Err(Error::Question)` and writes nothing
/// (call [`record_rejection`] to keep it for the audit).
pub fn accept(
    tx: &Transaction,
    request: Request,
    fallback_id: Option<&str>,
    source: &str,
    now: Millis,
) -> Result<Accepted> {
    let n = check_structure(request, fallback_id, crate::clock::to_timestamp(now))?;
    // Re-delivery of the same request is accepted once; other content under the same id is not.
    // One index lookup finds both the accepted request owning the id (if any) and whether
    // an earlier input with this id was rejected.
    let mut existing: Option<(String, String, Status)> = None;
    let mut replaced_rejection = false;
    {
        let mut stmt = tx.prepare_cached(
            "SELECT status, context, body FROM requests INDEXED BY requests_id_any WHERE id = ?1",
        )?;
        let mut rows = stmt.query([&n.id])?;
        while let Some(r) = rows.next()? {
            let status: String = r.get(0)?;
            match Status::parse(&status) {
                Some(Status::Rejected) | None => replaced_rejection = true,
                Some(st) => existing = Some((r.get(1)?, r.get(2)?, st)),
            }
        }
    }
    if let Some((context, body, status)) = existing {
        let same = serde_json::from_str::<Request>(&body).is_ok_and(|r| r == n.request);
        if same {
            return Ok(Accepted {
                id: n.id,
                context,
                new: false,
                status,
                replaced_rejection: false,
            });
        }
        return Err(Error::question(
            Code::DuplicateId,
            format!(
                "request id {:?} is already used by a request with different content; choose a new id",
                n.id
            ),
        ));
    }
    let env = TxEnv {
        tx,
        now,
        lineage: Default::default(),
        failure: Default::default(),
    };
    let checked = check_ask(&n, crate::clock::to_timestamp(now), &env);
    if let Some(e) = env.failure.into_inner() {
        return Err(e);
    }
    checked?;
    let lineage = env.lineage.into_inner();
    if replaced_rejection {
        // An earlier rejection of this id must not publish its error outcome over this
        // request's (the file, if already written, is removed after the commit).
        tx.prepare_cached(
            "UPDATE requests SET outbox_pending = 0 WHERE id = ?1 AND status = 'rejected' AND outbox_pending = 1",
        )?
        .execute([&n.id])?;
    }
    let body = n.request.to_json();
    let deadline = n.deadline.map(crate::clock::from_timestamp);
    tx.prepare_cached(
        "INSERT INTO requests (id, context, status, agent_id, agent_instance, agent_lineage, body, source,
                               require_provider, deadline_ms, created_ms)
         VALUES (?1, ?2, 'pending', ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
    )?
    .execute(params![
        n.id,
        n.context,
        n.request.agent.as_ref().map(|a| &a.id),
        n.request.agent.as_ref().map(|a| &a.instance),
        lineage,
        body,
        source,
        n.request.requires_provider(),
        deadline,
        now
    ])?;
    let seq = tx.last_insert_rowid();
    {
        let mut q_stmt = tx.prepare_cached(
            "INSERT INTO questions (request_seq, idx, qid, question, header, detail, multi_select,
                                    intent_kind, intent_approve, options)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10)",
        )?;
        for (idx, q) in n.request.questions.iter().enumerate() {
            q_stmt.execute(params![
                seq,
                idx as i64,
                q.id,
                q.question,
                q.header,
                q.detail,
                q.is_multi(),
                q.intent.as_ref().map(|i| &i.kind),
                q.intent.as_ref().map(|i| &i.approve),
                serde_json::to_string(q.options()).expect("options serialize"),
            ])?;
        }
    }
    let actor = match &n.request.agent {
        Some(a) => format!("agent:{}", a.id),
        None => "asker".to_string(),
    };
    events::append(
        tx,
        now,
        NewEvent {
            kind: "accepted",
            request_id: Some(&n.id),
            agent_id: n.request.agent.as_ref().map(|a| a.id.as_str()),
            actor: &actor,
            // What was asked: the digest of the canonical request (the row's body must
            // hash to it) and what the row keeps beside the body.
            data: serde_json::json!({
                "context": n.context,
                "source": source,
                "questions": n.request.questions.len(),
                "rowSeq": seq,
                "digest": crate::protocol::digest::request_digest(&n.request),
                "deadlineMs": deadline,
                "lineage": lineage,
            }),
            ..Default::default()
        },
    )?;
    Ok(Accepted {
        id: n.id,
        context: n.context,
        new: true,
        status: Status::Pending,
        replaced_rejection,
    })
}

/// What is known of an input that was rejected.
#[derive(Debug, Clone, Default)]
pub struct Rejection<'a> {
    /// The request id, when one could be read (JSON `id`, else the file name).
    pub id: Option<&'a str>,
    /// The context, when it could be read.
    pub context: Option<&'a str>,
    /// The raw input (lossy UTF-8, possibly truncated by the caller).
    pub body: &'a str,
    /// `cli` or `inbox:FILE`.
    pub source: &'a str,
}

/// Record a rejected input as a `rejected` request for the audit. Returns whether an error
/// outcome will be written to the outbox: only when the id is known and no accepted request
/// owns it. Recording the same input twice (a crash between commit and moving the file) is
/// a no-op.
pub fn record_rejection(
    tx: &Transaction,
    rej: &Rejection<'_>,
    error: &UserQuestionError,
    now: Millis,
) -> Result<bool> {
    let id = rej.id.filter(|i| crate::protocol::check::is_valid_id(i));
    let owned = match id {
        Some(i) => get(tx, i)?.is_some(),
        None => false,
    };
    let code = error.code.as_str();
    let already: bool = tx
        .prepare_cached(
            // By id: left to itself the planner walks every rejected row (the status
            // index), which made each rejection in a flood slower than the last.
            "SELECT 1 FROM requests INDEXED BY requests_id_any WHERE id IS ?1 AND status = 'rejected' AND source = ?2 AND body = ?3 AND error_code = ?4",
        )?
        .exists(params![id, rej.source, rej.body, code])?;
    if already {
        return Ok(false);
    }
    let outbox = id.is_some() && !owned;
    let context = rej
        .context
        .filter(|c| crate::protocol::check::is_valid_id(c))
        .unwrap_or(crate::protocol::DEFAULT_CONTEXT);
    tx.prepare_cached(
        "INSERT INTO requests (id, context, status, body, source, created_ms, finished_ms, error_code, error_message, outbox_pending)
         VALUES (?1, ?2, 'rejected', ?3, ?4, ?5, ?5, ?6, ?7, ?8)",
    )?
    .execute(params![id, context, rej.body, rej.source, now, code, error.message, outbox])?;
    events::append(
        tx,
        now,
        NewEvent {
            kind: "rejected",
            request_id: id,
            actor: "daemon",
            data: serde_json::json!({
                "source": rej.source,
                "context": context,
                "code": code,
                "message": error.message,
                "rowSeq": tx.last_insert_rowid(),
                "bodySha256": events::hex(&<sha2::Sha256 as sha2::Digest>::digest(rej.body.as_bytes())),
            }),
            ..Default::default()
        },
    )?;
    Ok(outbox)
}

/// The verdict of an earlier rejection of this very input: same id, same source file
/// name, same content, and recorded no earlier than the file's modification time.
pub fn earlier_rejection(
    tx: &Transaction,
    id: &str,
    source: &str,
    body: &str,
    file_mtime_ms: Millis,
) -> Result<Option<UserQuestionError>> {
    Ok(tx
        .prepare_cached(
            "SELECT error_code, error_message FROM requests INDEXED BY requests_id_any
             WHERE id = ?1 AND status = 'rejected' AND source = ?2 AND body = ?3 AND created_ms >= ?4
             ORDER BY seq DESC LIMIT 1",
        )?
        .query_row(params![id, source, body, file_mtime_ms], |r| {
            Ok((r.get::<_, Option<String>>(0)?, r.get::<_, Option<String>>(1)?))
        })
        .optional()?
        .map(|(code, message)| {
            UserQuestionError::new(
                code.as_deref().and_then(Code::parse).unwrap_or(Code::BadRequest),
                message.unwrap_or_default(),
            )
        }))
}

fn load_open(tx: &Transaction, lease: &Lease, id: &str) -> Result<RequestRow> {
    let r = get(tx, id)?.ok_or_else(|| Error::NotFound(id.to_string()))?;
    if r.context != lease.context {
        return Err(Error::WrongContext {
            id: id.into(),
            request_context: r.context,
            lease_context: lease.context.clone(),
        });
    }
    if r.status.is_final() {
        return Err(Error::RequestFinal {
            id: id.into(),
            status: r.status.as_str().into(),
        });
    }
    if r.status == Status::Claimed && r.claimed_lease != Some(lease.lease_id) {
        return Err(Error::ClaimedElsewhere { id: id.into() });
    }
    Ok(r)
}

/// Reserve a pending request for the live lease (idempotent for its own claims).
pub fn claim(tx: &Transaction, lease: &Lease, id: &str, now: Millis) -> Result<RequestRow> {
    let r = load_open(tx, lease, id)?;
    if r.status == Status::Claimed {
        return Ok(r);
    }
    let n = tx.execute(
        &format!(
            "UPDATE requests SET status = 'claimed', claimed_lease = ?1, claimed_ms = ?2
             WHERE seq = ?3 AND status = 'pending' AND {LEASE_LIVE}"
        ),
        params![lease.lease_id, now, r.seq, lease.generation],
    )?;
    if n != 1 {
        return Err(Error::ClaimedElsewhere { id: id.into() });
    }
    events::append(
        tx,
        now,
        NewEvent {
            kind: "claimed",
            request_id: Some(id),
            lease_id: Some(lease.lease_id),
            actor: &format!("provider:{}", lease.name),
            ..Default::default()
        },
    )?;
    Ok(get(tx, id)?.expect("the claimed request exists"))
}

/// Claim the oldest pending request of the lease's context.
pub fn claim_next(tx: &Transaction, lease: &Lease, now: Millis) -> Result<RequestRow> {
    let id: Option<String> = tx
        .prepare_cached(
            "SELECT id FROM requests INDEXED BY requests_open
             WHERE context = ?1 AND status IN ('pending', 'claimed') AND status = 'pending' ORDER BY seq LIMIT 1",
        )?
        .query_row([&lease.context], |r| r.get(0))
        .optional()?;
    let id = id.ok_or_else(|| Error::NothingPending(lease.context.clone()))?;
    claim(tx, lease, &id, now)
}

/// Answer with the lease `token`, accepting once more an identical answer that the same
/// lease already gave (live or not: it may have been released since). This is how an
/// answer file processed again after a crash, between the commit and the file's removal,
/// is applied exactly once. Returns the outcome and whether it was such a replay.
pub fn answer_replayable(
    tx: &Transaction,
    token: &str,
    id: &str,
    answer: &Answer,
    now: Millis,
) -> Result<(Outcome, bool)> {
    if let Ok(lease_id) = leases::identify(tx, token) {
        if let Some(o) = replayed_answer(tx, id, lease_id, answer)? {
            return Ok((o, true));
        }
    }
    let lease = leases::authenticate(tx, token, now)?;
    Ok((self::answer(tx, &lease, id, answer, now)?, false))
}

/// The outcome when request `id` is already answered with exactly `answer` by lease
/// `lease_id` (live or not: a provider may release its lease right after answering).
fn replayed_answer(
    tx: &Transaction,
    id: &str,
    lease_id: i64,
    answer: &Answer,
) -> Result<Option<Outcome>> {
    Ok(get(tx, id)?
        .filter(|r| {
            r.status == Status::Answered
                && r.claimed_lease == Some(lease_id)
                && r.request().is_some_and(|req| {
                    r.answer.as_deref()
                        == Some(in_question_order(&req.questions, answer).to_json().as_str())
                })
        })
        .and_then(|r| r.outcome()))
}

/// The outcome when request `id` is already cancelled by lease `lease_id`.
fn replayed_cancel(tx: &Transaction, id: &str, lease_id: i64) -> Result<Option<Outcome>> {
    Ok(get(tx, id)?
        .filter(|r| r.status == Status::Cancelled && r.claimed_lease == Some(lease_id))
        .and_then(|r| r.outcome()))
}

/// Answer a request with the live lease (claiming it implicitly when pending). An answer
/// that breaks a rule is `BAD_ANSWER` and nothing changes; a final request is
/// `REQUEST_FINAL`, so of several racing answers exactly one wins.
pub fn answer(
    tx: &Transaction,
    lease: &Lease,
    id: &str,
    answer: &Answer,
    now: Millis,
) -> Result<Outcome> {
    let r = load_open(tx, lease, id)?;
    let request = r.request().ok_or_else(|| Error::NotFound(id.into()))?;
    let decisions = check_answer(&request.questions, answer)?;
    // Stored (and published) in question order, whatever order the items came in.
    let answer = &in_question_order(&request.questions, answer);
    let answer_json = answer.to_json();
    let decision = request_decision(&decisions);
    let n = tx.execute(
        "UPDATE requests SET status = 'answered', claimed_lease = ?1, claimed_ms = COALESCE(claimed_ms, ?2),
                finished_ms = ?2, answer = ?3, decision = ?4, provider = ?5, outbox_pending = 1
         WHERE seq = ?6 AND status IN ('pending', 'claimed') AND (claimed_lease IS NULL OR claimed_lease = ?1)
           AND EXISTS (SELECT 1 FROM leases WHERE lease_id = ?1 AND generation = ?7
                       AND ended_ms IS NULL AND expires_ms >= ?2)",
        params![
            lease.lease_id,
            now,
            answer_json,
            decision.map(Decision::as_str),
            lease.name,
            r.seq,
            lease.generation
        ],
    )?;
    if n != 1 {
        return Err(Error::RequestFinal {
            id: id.into(),
            status: "changed".into(),
        });
    }
    {
        let mut stmt = tx.prepare_cached(
            "UPDATE questions SET selected = ?1, custom = ?2, decision = ?3 WHERE request_seq = ?4 AND idx = ?5",
        )?;
        for (idx, q) in request.questions.iter().enumerate() {
            let item = answer
                .answers
                .iter()
                .find(|a| a.id == q.id)
                .expect("check_answer saw every question answered");
            stmt.execute(params![
                serde_json::to_string(&item.selected).expect("labels serialize"),
                item.custom,
                decisions[idx].map(Decision::as_str),
                r.seq,
                idx as i64
            ])?;
        }
    }
    events::append(
        tx,
        now,
        NewEvent {
            kind: "answered",
            request_id: Some(id),
            lease_id: Some(lease.lease_id),
            actor: &format!("provider:{}", lease.name),
            data: serde_json::json!({
                "implicitClaim": r.status == Status::Pending,
                "decision": decision.map(Decision::as_str),
                "decisions": request.questions.iter().zip(&decisions)
                    .filter_map(|(q, d)| d.map(|d| (q.id.clone(), serde_json::Value::from(d.as_str()))))
                    .collect::<serde_json::Map<_, _>>(),
                // What was answered, and by whom: the row must agree with these.
                "answer": serde_json::to_value(answer).expect("an Answer serializes"),
                "provider": lease.name,
            }),
            ..Default::default()
        },
    )?;
    Ok(get(tx, id)?
        .and_then(|r| r.outcome())
        .expect("the answered request has an outcome"))
}

/// Cancel with the lease `token`, accepting once more a cancel that the same lease
/// already made (the cancel-file counterpart of [`answer_replayable`]).
pub fn cancel_replayable(
    tx: &Transaction,
    token: &str,
    id: &str,
    reason: Option<&str>,
    now: Millis,
) -> Result<Outcome> {
    if let Ok(lease_id) = leases::identify(tx, token) {
        if let Some(o) = replayed_cancel(tx, id, lease_id)? {
            return Ok(o);
        }
    }
    let lease = leases::authenticate(tx, token, now)?;
    cancel(tx, &lease, id, reason, now)
}

/// The provider side cancels a request (`ASK_CANCELLED`); the cancelling lease is
/// recorded as the request's lease.
pub fn cancel(
    tx: &Transaction,
    lease: &Lease,
    id: &str,
    reason: Option<&str>,
    now: Millis,
) -> Result<Outcome> {
    let r = load_open(tx, lease, id)?;
    let live = tx
        .prepare_cached(&format!("SELECT 1 WHERE {LEASE_LIVE}"))?
        .exists(params![
            lease.lease_id,
            now,
            rusqlite::types::Null,
            lease.generation
        ])?;
    if !live {
        return Err(Error::LeaseExpired("it is no longer live".into()));
    }
    let message = match reason {
        Some(reason) => format!("cancelled by provider {:?}: {reason}", lease.name),
        None => format!("cancelled by provider {:?}", lease.name),
    };
    finish_error(
        tx,
        &r,
        "cancelled",
        Code::AskCancelled,
        &message,
        Some(&lease.name),
        Some(lease.lease_id),
        &format!("provider:{}", lease.name),
        now,
    )
}

/// The asker aborts a request (`ASK_ABORTED`). Needs no lease.
pub fn abort(
    tx: &Transaction,
    id: &str,
    reason: Option<&str>,
    actor: &str,
    now: Millis,
) -> Result<Outcome> {
    let r = get(tx, id)?.ok_or_else(|| Error::NotFound(id.to_string()))?;
    if r.status.is_final() {
        return Err(Error::RequestFinal {
            id: id.into(),
            status: r.status.as_str().into(),
        });
    }
    let message = match reason {
        Some(reason) => format!("aborted by the asker: {reason}"),
        None => "aborted by the asker".to_string(),
    };
    finish_error(
        tx,
        &r,
        "aborted",
        Code::AskAborted,
        &message,
        None,
        None,
        actor,
        now,
    )
}

#[allow(clippy::too_many_arguments)]
fn finish_error(
    tx: &Transaction,
    r: &RequestRow,
    status: &str,
    code: Code,
    message: &str,
    provider: Option<&str>,
    lease_id: Option<i64>,
    actor: &str,
    now: Millis,
) -> Result<Outcome> {
    let id = r.id.as_deref().expect("accepted requests have ids");
    let n = tx.execute(
        "UPDATE requests SET status = ?1, finished_ms = ?2, error_code = ?3, error_message = ?4,
                provider = ?5, outbox_pending = 1, claimed_lease = COALESCE(?7, claimed_lease)
         WHERE seq = ?6 AND status IN ('pending', 'claimed')",
        params![
            status,
            now,
            code.as_str(),
            message,
            provider,
            r.seq,
            lease_id
        ],
    )?;
    if n != 1 {
        return Err(Error::RequestFinal {
            id: id.into(),
            status: "changed".into(),
        });
    }
    events::append(
        tx,
        now,
        NewEvent {
            kind: status,
            request_id: Some(id),
            lease_id,
            actor,
            data: serde_json::json!({"code": code.as_str(), "message": message, "provider": provider}),
            ..Default::default()
        },
    )?;
    Ok(get(tx, id)?
        .and_then(|r| r.outcome())
        .expect("a final request has an outcome"))
}

/// Return every request claimed by `lease_id` to `pending` (its lease ended).
pub fn unclaim_all(
    tx: &Transaction,
    lease_id: i64,
    reason: &str,
    actor: &str,
    now: Millis,
) -> Result<Vec<String>> {
    let ids: Vec<String> = {
        let mut stmt = tx.prepare_cached(
            "SELECT id FROM requests INDEXED BY requests_claimed WHERE status = 'claimed' AND claimed_lease = ?1 ORDER BY seq",
        )?;
        let rows = stmt.query_map([lease_id], |r| r.get(0))?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    tx.execute(
        "UPDATE requests SET status = 'pending', claimed_lease = NULL, claimed_ms = NULL
         WHERE seq IN (SELECT seq FROM requests INDEXED BY requests_claimed WHERE status = 'claimed' AND claimed_lease = ?1)",
        [lease_id],
    )?;
    for id in &ids {
        events::append(
            tx,
            now,
            NewEvent {
                kind: "released",
                request_id: Some(id),
                lease_id: Some(lease_id),
                actor,
                data: serde_json::json!({"reason": format!("lease {reason}")}),
                ..Default::default()
            },
        )?;
    }
    Ok(ids)
}

/// Abort every open request whose deadline has passed at `now`.
pub fn abort_overdue(tx: &Transaction, now: Millis) -> Result<Vec<String>> {
    let due: Vec<RequestRow> = {
        let mut stmt = tx.prepare_cached(&format!(
            "SELECT {COLUMNS} FROM {FROM}
             WHERE r.seq IN (SELECT seq FROM requests INDEXED BY requests_deadline
                             WHERE status IN ('pending', 'claimed') AND deadline_ms IS NOT NULL AND deadline_ms < ?1)"
        ))?;
        let rows = stmt.query_map([now], row)?;
        rows.collect::<rusqlite::Result<_>>()?
    };
    let mut ids = Vec::with_capacity(due.len());
    for r in due {
        let deadline = r.deadline_ms.map(rfc3339).unwrap_or_default();
        finish_error(
            tx,
            &r,
            "aborted",
            Code::AskAborted,
            &format!("the deadline {deadline} passed before an answer"),
            None,
            None,
            "daemon",
            now,
        )?;
        ids.extend(r.id);
    }
    Ok(ids)
}

/// Final requests whose outcome file is not written yet, oldest first.
pub fn outbox_pending(conn: &Connection, limit: i64) -> Result<Vec<(i64, Outcome)>> {
    let mut stmt = conn.prepare_cached(&format!(
        "SELECT {COLUMNS} FROM {FROM} WHERE r.outbox_pending = 1
           AND NOT (r.status = 'rejected' AND EXISTS (
                    SELECT 1 FROM requests o WHERE o.id = r.id AND o.status <> 'rejected'))
         ORDER BY r.seq LIMIT ?1"
    ))?;
    let rows = stmt.query_map([limit], row)?;
    let mut out = Vec::new();
    for r in rows {
        let r = r?;
        if let Some(o) = r.outcome() {
            out.push((r.seq, o));
        }
    }
    Ok(out)
}

/// Mark outcome files as written.
pub fn mark_outbox_written(tx: &Transaction, seqs: &[i64]) -> Result<()> {
    let mut stmt = tx.prepare_cached(
        "UPDATE requests SET outbox_pending = 0 WHERE seq = ?1 AND outbox_pending = 1",
    )?;
    for s in seqs {
        stmt.execute([s])?;
    }
    Ok(())
}

/// The earliest future time something falls due (a lease expiry, a deadline, an agent
/// ttl), so the daemon can sleep exactly until then.
pub fn next_due(conn: &Connection) -> Result<Option<Millis>> {
    Ok(conn.prepare_cached(
        "SELECT MIN(t) FROM (
             SELECT MIN(expires_ms) AS t FROM leases WHERE ended_ms IS NULL
             UNION ALL SELECT MIN(deadline_ms) FROM requests INDEXED BY requests_deadline WHERE status IN ('pending', 'claimed') AND deadline_ms IS NOT NULL
             UNION ALL SELECT MIN(expires_ms) FROM agents WHERE ended_ms IS NULL AND expires_ms IS NOT NULL)",
    )?
    .query_row([], |r| r.get(0))?)
}

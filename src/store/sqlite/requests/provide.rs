//! Provider transitions (claim, answer, cancel) and the asker's abort, with the replay
//! rules of answer files: every transition names the states it leaves and the lease that
//! may make it, so a final state never changes and of two racing answers one wins.

use rusqlite::{params, OptionalExtension, Transaction};

use super::reads::get;
use super::row::LEASE_LIVE;
use crate::clock::Millis;
use crate::core::audit::{Actor, EventKind};
use crate::core::lifecycle::{RequestRow, Status};
use crate::error::{Error, Result};
use crate::protocol::answer::{check_answer, in_question_order, request_decision};
use crate::protocol::error::Code;
use crate::protocol::types::{Answer, Decision, Outcome};
use crate::store::sqlite::events::{self, NewEvent};
use crate::store::types::Lease;

pub(super) fn load_open(tx: &Transaction, lease: &Lease, id: &str) -> Result<RequestRow> {
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
            kind: EventKind::Claimed,
            request_id: Some(id),
            lease_id: Some(lease.lease_id),
            actor: lease.actor(),
            agent_id: None,
            data: serde_json::Value::Null,
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
    if let Ok(lease_id) =
        crate::store::queue::leases::identify(&mut crate::store::sqlite::sql::SqlRead(tx), token)
    {
        if let Some(o) = replayed_answer(tx, id, lease_id, answer)? {
            return Ok((o, true));
        }
    }
    let lease = crate::store::queue::leases::authenticate(
        &mut crate::store::sqlite::sql::SqlRead(tx),
        token,
        now,
    )?;
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
            lease.provider_name(),
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
            kind: EventKind::Answered,
            request_id: Some(id),
            lease_id: Some(lease.lease_id),
            actor: lease.actor(),
            data: serde_json::json!({
                "implicitClaim": r.status == Status::Pending,
                "decision": decision.map(Decision::as_str),
                "decisions": request.questions.iter().zip(&decisions)
                    .filter_map(|(q, d)| d.map(|d| (q.id.clone(), serde_json::Value::from(d.as_str()))))
                    .collect::<serde_json::Map<_, _>>(),
                // What was answered, and by whom: the row must agree with these.
                "answer": serde_json::to_value(answer).expect("an Answer serializes"),
                "provider": lease.provider_name(),
            }),
            agent_id: None,
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
    if let Ok(lease_id) =
        crate::store::queue::leases::identify(&mut crate::store::sqlite::sql::SqlRead(tx), token)
    {
        if let Some(o) = replayed_cancel(tx, id, lease_id)? {
            return Ok(o);
        }
    }
    let lease = crate::store::queue::leases::authenticate(
        &mut crate::store::sqlite::sql::SqlRead(tx),
        token,
        now,
    )?;
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
        Some(reason) => format!(
            "cancelled by provider {:?}: {reason}",
            lease.provider_name()
        ),
        None => format!("cancelled by provider {:?}", lease.provider_name()),
    };
    finish_error(
        tx,
        &r,
        Status::Cancelled,
        Code::AskCancelled,
        &message,
        Some(&lease.provider_name()),
        Some(lease.lease_id),
        &lease.actor(),
        now,
    )
}

/// The asker aborts a request (`ASK_ABORTED`). Needs no lease.
pub fn abort(
    tx: &Transaction,
    id: &str,
    reason: Option<&str>,
    actor: &Actor,
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
        Status::Aborted,
        Code::AskAborted,
        &message,
        None,
        None,
        actor,
        now,
    )
}

#[allow(clippy::too_many_arguments)]
pub(super) fn finish_error(
    tx: &Transaction,
    r: &RequestRow,
    status: Status,
    code: Code,
    message: &str,
    provider: Option<&str>,
    lease_id: Option<i64>,
    actor: &Actor,
    now: Millis,
) -> Result<Outcome> {
    let kind = match status {
        Status::Cancelled => EventKind::Cancelled,
        Status::Aborted => EventKind::Aborted,
        other => unreachable!("{other} is not an error end"),
    };
    let id = r.id.as_deref().expect("accepted requests have ids");
    let n = tx.execute(
        "UPDATE requests SET status = ?1, finished_ms = ?2, error_code = ?3, error_message = ?4,
                provider = ?5, outbox_pending = 1, claimed_lease = COALESCE(?7, claimed_lease)
         WHERE seq = ?6 AND status IN ('pending', 'claimed')",
        params![
            status.as_str(),
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
            kind,
            request_id: Some(id),
            lease_id,
            actor: actor.clone(),
            data: serde_json::json!({"code": code.as_str(), "message": message, "provider": provider}),
            agent_id: None,
        },
    )?;
    Ok(get(tx, id)?
        .and_then(|r| r.outcome())
        .expect("a final request has an outcome"))
}

impl crate::store::driver::AnswerStatements for crate::store::sqlite::sql::Sql<'_, '_> {}

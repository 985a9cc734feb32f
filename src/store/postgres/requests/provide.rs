//! Provider transitions (claim, answer, cancel) and the asker's abort, with the replay
//! rules of answer files: every transition names the states it leaves and the lease that
//! may make it, so a final state never changes and of two racing answers one wins.
//!
//! `claim --next` picks its row with `FOR UPDATE SKIP LOCKED`: under the write lock no
//! other writer holds a row lock, so it changes nothing today, but it gives the claim the
//! queue semantics the issue asks for (two reviewers never get the same request) even if
//! claims ever run outside the lock.

use postgres::types::Type;

use super::reads::get;
use crate::clock::Millis;
use crate::core::audit::{Actor, EventKind};
use crate::core::lifecycle::{RequestRow, Status};
use crate::error::{Error, Result};
use crate::protocol::answer::{check_answer, in_question_order, request_decision};
use crate::protocol::error::Code;
use crate::protocol::types::{Answer, Decision, Outcome};
use crate::store::chain::NewEvent;
use crate::store::postgres::events;
use crate::store::postgres::tx::Tx;
use crate::store::types::Lease;

/// The fencing condition of a lease-holder's update on `$1` (lease id), `$2` (now) and
/// `$4` (generation): a stale holder (ended, expired, another generation) matches no row.
const LEASE_LIVE: &str = "EXISTS (SELECT 1 FROM leases WHERE lease_id = $1 AND generation = $4
                          AND ended_ms IS NULL AND expires_ms >= $2)";

fn changed(id: &str) -> Error {
    Error::RequestFinal {
        id: id.into(),
        status: "changed".into(),
    }
}

fn reread(t: &mut Tx<'_>, id: &str) -> Result<RequestRow> {
    get(&mut t.tx, id)?.ok_or_else(|| Error::NotFound(id.to_string()))
}

fn outcome_of(t: &mut Tx<'_>, id: &str) -> Result<Outcome> {
    reread(t, id)?.outcome().ok_or_else(|| changed(id))
}

pub(super) fn load_open(t: &mut Tx<'_>, lease: &Lease, id: &str) -> Result<RequestRow> {
    let r = reread(t, id)?;
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
pub fn claim(t: &mut Tx<'_>, lease: &Lease, id: &str, now: Millis) -> Result<RequestRow> {
    let r = load_open(t, lease, id)?;
    if r.status == Status::Claimed {
        return Ok(r);
    }
    let n = t.tx.execute_typed(
        &format!(
            "UPDATE requests SET status = 'claimed', claimed_lease = $1, claimed_ms = $2
             WHERE seq = $3 AND status = 'pending' AND {LEASE_LIVE}"
        ),
        &[
            (&lease.lease_id, Type::INT8),
            (&now, Type::INT8),
            (&r.seq, Type::INT8),
            (&lease.generation, Type::INT8),
        ],
    )?;
    if n != 1 {
        return Err(Error::ClaimedElsewhere { id: id.into() });
    }
    events::append(
        t,
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
    reread(t, id)
}

/// Claim the oldest pending request of the lease's context (`FOR UPDATE SKIP LOCKED`).
pub fn claim_next(t: &mut Tx<'_>, lease: &Lease, now: Millis) -> Result<RequestRow> {
    let id: Option<String> = match t.tx.query_opt(
        "SELECT id FROM requests WHERE context = $1 AND status = 'pending'
         ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED",
        &[&lease.context],
    )? {
        Some(r) => r.try_get(0)?,
        None => None,
    };
    let id = id.ok_or_else(|| Error::NothingPending(lease.context.clone()))?;
    claim(t, lease, &id, now)
}

/// Answer with the lease `token`, accepting once more an identical answer that the same
/// lease already gave (live or not). Returns the outcome and whether it was a replay.
pub fn answer_replayable(
    t: &mut Tx<'_>,
    token: &str,
    id: &str,
    answer: &Answer,
    now: Millis,
) -> Result<(Outcome, bool)> {
    if let Ok(lease_id) = crate::store::queue::leases::identify(t, token) {
        if let Some(o) = replayed_answer(t, id, lease_id, answer)? {
            return Ok((o, true));
        }
    }
    let lease = crate::store::queue::leases::authenticate(t, token, now)?;
    Ok((self::answer(t, &lease, id, answer, now)?, false))
}

fn replayed_answer(
    t: &mut Tx<'_>,
    id: &str,
    lease_id: i64,
    answer: &Answer,
) -> Result<Option<Outcome>> {
    Ok(get(&mut t.tx, id)?
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

fn replayed_cancel(t: &mut Tx<'_>, id: &str, lease_id: i64) -> Result<Option<Outcome>> {
    Ok(get(&mut t.tx, id)?
        .filter(|r| r.status == Status::Cancelled && r.claimed_lease == Some(lease_id))
        .and_then(|r| r.outcome()))
}

/// Answer a request with the live lease (claiming it implicitly when pending).
pub fn answer(
    t: &mut Tx<'_>,
    lease: &Lease,
    id: &str,
    answer: &Answer,
    now: Millis,
) -> Result<Outcome> {
    let r = load_open(t, lease, id)?;
    let request = r.request().ok_or_else(|| Error::NotFound(id.into()))?;
    let decisions = check_answer(&request.questions, answer)?;
    let answer = &in_question_order(&request.questions, answer);
    let answer_json = answer.to_json();
    let decision = request_decision(&decisions).map(Decision::as_str);
    let provider = lease.provider_name();
    let n = t.tx.execute_typed(
        "UPDATE requests SET status = 'answered', claimed_lease = $1, claimed_ms = COALESCE(claimed_ms, $2),
                finished_ms = $2, answer = $3, decision = $4, provider = $5, outbox_pending = TRUE
         WHERE seq = $6 AND status IN ('pending', 'claimed') AND (claimed_lease IS NULL OR claimed_lease = $1)
           AND EXISTS (SELECT 1 FROM leases WHERE lease_id = $1 AND generation = $7
                       AND ended_ms IS NULL AND expires_ms >= $2)",
        &[
            (&lease.lease_id, Type::INT8),
            (&now, Type::INT8),
            (&answer_json, Type::TEXT),
            (&decision, Type::TEXT),
            (&provider, Type::TEXT),
            (&r.seq, Type::INT8),
            (&lease.generation, Type::INT8),
        ],
    )?;
    if n != 1 {
        return Err(changed(id));
    }
    for (idx, q) in request.questions.iter().enumerate() {
        let item = answer
            .answers
            .iter()
            .find(|a| a.id == q.id)
            .ok_or_else(|| Error::Invalid(format!("question {:?} has no answer", q.id)))?;
        let selected = serde_json::to_string(&item.selected)
            .map_err(|e| Error::Invalid(format!("the labels do not serialize: {e}")))?;
        let d = decisions.get(idx).copied().flatten().map(Decision::as_str);
        t.tx.execute_typed(
            "UPDATE questions SET selected = $1, custom = $2, decision = $3 WHERE request_seq = $4 AND idx = $5",
            &[
                (&selected, Type::TEXT),
                (&item.custom, Type::TEXT),
                (&d, Type::TEXT),
                (&r.seq, Type::INT8),
                (&(idx as i64), Type::INT8),
            ],
        )?;
    }
    let answer_value = serde_json::to_value(answer)
        .map_err(|e| Error::Invalid(format!("the answer does not serialize: {e}")))?;
    events::append(
        t,
        now,
        NewEvent {
            kind: EventKind::Answered,
            request_id: Some(id),
            lease_id: Some(lease.lease_id),
            actor: lease.actor(),
            data: serde_json::json!({
                "implicitClaim": r.status == Status::Pending,
                "decision": decision,
                "decisions": request.questions.iter().zip(&decisions)
                    .filter_map(|(q, d)| d.map(|d| (q.id.clone(), serde_json::Value::from(d.as_str()))))
                    .collect::<serde_json::Map<_, _>>(),
                "answer": answer_value,
                "provider": provider,
            }),
            agent_id: None,
        },
    )?;
    outcome_of(t, id)
}

/// Cancel with the lease `token`, accepting once more a cancel the same lease already made.
pub fn cancel_replayable(
    t: &mut Tx<'_>,
    token: &str,
    id: &str,
    reason: Option<&str>,
    now: Millis,
) -> Result<Outcome> {
    if let Ok(lease_id) = crate::store::queue::leases::identify(t, token) {
        if let Some(o) = replayed_cancel(t, id, lease_id)? {
            return Ok(o);
        }
    }
    let lease = crate::store::queue::leases::authenticate(t, token, now)?;
    cancel(t, &lease, id, reason, now)
}

/// The provider side cancels a request (`ASK_CANCELLED`).
pub fn cancel(
    t: &mut Tx<'_>,
    lease: &Lease,
    id: &str,
    reason: Option<&str>,
    now: Millis,
) -> Result<Outcome> {
    let r = load_open(t, lease, id)?;
    let live =
        t.tx.query_opt(
            "SELECT 1 FROM leases WHERE lease_id = $1 AND generation = $3
               AND ended_ms IS NULL AND expires_ms >= $2",
            &[&lease.lease_id, &now, &lease.generation],
        )?
        .is_some();
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
        t,
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
    t: &mut Tx<'_>,
    id: &str,
    reason: Option<&str>,
    actor: &Actor,
    now: Millis,
) -> Result<Outcome> {
    let r = reread(t, id)?;
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
        t,
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
    t: &mut Tx<'_>,
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
        other => return Err(Error::Invalid(format!("{other} is not an error end"))),
    };
    let id =
        r.id.as_deref()
            .ok_or_else(|| Error::Invalid("an accepted request has an id".into()))?;
    let n = t.tx.execute_typed(
        "UPDATE requests SET status = $1, finished_ms = $2, error_code = $3, error_message = $4,
                provider = $5, outbox_pending = TRUE, claimed_lease = COALESCE($7, claimed_lease)
         WHERE seq = $6 AND status IN ('pending', 'claimed')",
        &[
            (&status.as_str(), Type::TEXT),
            (&now, Type::INT8),
            (&code.as_str(), Type::TEXT),
            (&message, Type::TEXT),
            (&provider, Type::TEXT),
            (&r.seq, Type::INT8),
            (&lease_id, Type::INT8),
        ],
    )?;
    if n != 1 {
        return Err(changed(id));
    }
    events::append(
        t,
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
    outcome_of(t, id)
}

impl crate::store::driver::AnswerStatements for crate::store::postgres::tx::Tx<'_> {}

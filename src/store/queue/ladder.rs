//! The deadline ladder's rule, over [`crate::store::driver::LadderStatements`]:
//! run, in the sweep, every rung that fell due strictly before the write's `now`, each
//! with its event in the chain.
//!
//! A rung is `reminded` (an event: the request is still unanswered), `escalated` (an event,
//! and with `escalateTo` a move of the open request to that context, as `pending`: a claim
//! by a lease of the old context can no longer answer it), or `expired`: the request ends
//! with `ASK_EXPIRED` ("nobody answered"), or, only when the asker declared
//! `onExpire: "default"`, is answered with the declared default, decided by policy
//! (`decidedBy: "policy"`, no provider). Rungs run in order and each at most once: the row
//! counts the rungs that ran (`ladder_done`) and keeps when the next falls due
//! (`ladder_due_ms`, which `next_due` reads so the daemon wakes for it). The deadline
//! (`ASK_ABORTED`) stays the asker's hard end; acceptance refuses a rung at or after it, so
//! the sweep never has to choose between the two.

use crate::clock::Millis;
use crate::core::audit::{Actor, EventKind};
use crate::core::lifecycle::{RequestRow, Status};
use crate::error::{Error, Result};
use crate::protocol::answer::{check_answer, in_question_order, request_decision};
use crate::protocol::error::Code;
use crate::protocol::ladder::{OnExpire, Rung, Rungs};
use crate::protocol::types::Decision;
use crate::store::chain::NewEvent;
use crate::store::driver::answers::ErrorEnd;
use crate::store::driver::Statements;
use crate::store::queue::{answers, deliveries};

/// What a climb did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Climbed {
    /// Requests whose ladder ran a rung that left them open (reminded, escalated).
    pub stepped: Vec<String>,
    /// Requests the ladder ended (expired, or answered by their default).
    pub ended: Vec<String>,
}

/// Run every rung due before `now` (the sweep).
pub fn climb_due(db: &mut dyn Statements, now: Millis) -> Result<Climbed> {
    let mut out = Climbed::default();
    for mut r in db.open_requests_with_rung_due_before(now)? {
        let id =
            r.id.clone()
                .ok_or_else(|| Error::Invalid("an accepted request has an id".into()))?;
        let rungs =
            r.ladder.as_deref().and_then(Rungs::parse).ok_or_else(|| {
                Error::Invalid(format!("request {id:?}: its ladder does not parse"))
            })?;
        let mut done = r.ladder_done;
        let mut ended = false;
        while let Some((rung, due)) = rungs.next(done as usize) {
            if due >= now {
                break;
            }
            done += 1;
            match rung {
                Rung::Remind => remind(db, now, &r, &id, done)?,
                Rung::Escalate => {
                    escalate(db, now, &r, &id, &rungs, done)?;
                    // What the rungs after it see: the row as the move left it.
                    if let Some(to) = &rungs.escalate_to {
                        r.context = to.clone();
                        r.status = Status::Pending;
                        r.claimed_lease = None;
                        r.claimed_ms = None;
                    }
                }
                Rung::Expire => {
                    expire(db, now, &r, &id, &rungs, done)?;
                    ended = true;
                    break;
                }
            }
        }
        if ended {
            out.ended.push(id);
        } else {
            let next = rungs.next(done as usize).map(|(_, t)| t);
            if !db.set_ladder_step_if_open(r.seq, done, next)? {
                return Err(Error::RequestFinal {
                    id,
                    status: "changed".into(),
                });
            }
            out.stepped.push(id);
        }
    }
    Ok(out)
}

fn event(kind: EventKind, id: &str, data: serde_json::Value) -> NewEvent<'_> {
    NewEvent {
        kind,
        request_id: Some(id),
        agent_id: None,
        actor: Actor::Daemon,
        data,
        lease_id: None,
    }
}

fn questions(r: &RequestRow) -> Vec<String> {
    r.request()
        .map(|q| q.questions.into_iter().map(|q| q.question).collect())
        .unwrap_or_default()
}

fn remind(db: &mut dyn Statements, now: Millis, r: &RequestRow, id: &str, rung: i64) -> Result<()> {
    db.append_event(
        now,
        event(EventKind::Reminded, id, serde_json::json!({ "rung": rung })),
    )?;
    deliveries::notify(
        db,
        now,
        EventKind::Reminded,
        id,
        &r.context,
        || serde_json::json!({ "rung": rung, "questions": questions(r) }),
    )
}

fn escalate(
    db: &mut dyn Statements,
    now: Millis,
    r: &RequestRow,
    id: &str,
    rungs: &Rungs,
    rung: i64,
) -> Result<()> {
    let to = rungs.escalate_to.as_deref();
    let released = to.is_some() && r.status == Status::Claimed;
    if let Some(to) = to {
        if !db.set_context_pending_if_open(r.seq, to)? {
            return Err(Error::RequestFinal {
                id: id.into(),
                status: "changed".into(),
            });
        }
    }
    db.append_event(
        now,
        event(
            EventKind::Escalated,
            id,
            serde_json::json!({
                "rung": rung,
                "from": r.context,
                "to": to,
                // The claim of a lease of the old context, dropped by the move.
                "releasedLease": if released { r.claimed_lease } else { None },
            }),
        ),
    )?;
    // Notified to the context it now belongs to (its own, without `escalateTo`).
    deliveries::notify(
        db,
        now,
        EventKind::Escalated,
        id,
        to.unwrap_or(&r.context),
        || serde_json::json!({ "rung": rung, "from": r.context, "questions": questions(r) }),
    )
}

fn expire(
    db: &mut dyn Statements,
    now: Millis,
    r: &RequestRow,
    id: &str,
    rungs: &Rungs,
    rung: i64,
) -> Result<()> {
    // The row keeps the count of rungs that ran, the expiry's included, before it is
    // final (a final row's count never changes).
    if !db.set_ladder_step_if_open(r.seq, rung, None)? {
        return Err(Error::RequestFinal {
            id: id.into(),
            status: "changed".into(),
        });
    }
    match (rungs.on_expire, &rungs.default) {
        (OnExpire::Default, Some(default)) => answer_by_policy(db, now, r, id, default, rung),
        _ => {
            let message = "nobody answered before the request's ladder expired it".to_string();
            let end = ErrorEnd {
                seq: r.seq,
                status: Status::Expired,
                code: Code::AskExpired,
                message: &message,
                provider: None,
                lease_id: None,
            };
            // `finish_error` appends the `expired` event (with the code and message).
            answers::finish_error(db, now, r, end, &Actor::Daemon).map(|_| ())
        }
    }
}

fn answer_by_policy(
    db: &mut dyn Statements,
    now: Millis,
    r: &RequestRow,
    id: &str,
    default: &crate::protocol::types::Answer,
    rung: i64,
) -> Result<()> {
    let request = r.request().ok_or_else(|| Error::NotFound(id.into()))?;
    // Checked at acceptance; checked again, since the rule must hold whatever the row says.
    let decisions = check_answer(&request.questions, default)?;
    let answer = in_question_order(&request.questions, default);
    let answer_json = answer.to_json();
    let decision = request_decision(&decisions).map(Decision::as_str);
    if !db.set_answered_by_policy_if_open(r.seq, &answer_json, decision, now)? {
        return Err(Error::RequestFinal {
            id: id.into(),
            status: "changed".into(),
        });
    }
    answers::set_question_answers(db, r.seq, &request.questions, &answer, &decisions)?;
    let answer_value = serde_json::to_value(&answer)
        .map_err(|e| Error::Invalid(format!("the answer does not serialize: {e}")))?;
    db.append_event(
        now,
        event(
            EventKind::Expired,
            id,
            serde_json::json!({
                "rung": rung,
                "code": Code::AskExpired.as_str(),
                "decidedBy": "policy",
                "decision": decision,
                "decisions": request.questions.iter().zip(&decisions)
                    .filter_map(|(q, d)| d.map(|d| (q.id.clone(), serde_json::Value::from(d.as_str()))))
                    .collect::<serde_json::Map<_, _>>(),
                "answer": answer_value,
                "provider": serde_json::Value::Null,
            }),
        ),
    )?;
    deliveries::notify(
        db,
        now,
        EventKind::Expired,
        id,
        &r.context,
        || serde_json::json!({ "code": Code::AskExpired.as_str(), "decidedBy": "policy", "decision": decision }),
    )
}

//! Building a receipt from the store's record of one final request: its row and its
//! events. Pure (rows and events in, an unsigned receipt out).
//!
//! A receipt is rebuilt whenever it is asked for, never stored: it is a function of the
//! row, the events and the key, and Ed25519 is deterministic, so the same request gives
//! the same bytes every time (and on every host that holds the same key).
//!
//! What the row says is signed only once the keyed event log agrees with it
//! ([`attest`]): the row's creation and final events are found by the row they name, and
//! the row's digest, answer, decision, provider, error and times must be what those
//! events recorded. The events are hash-chained under the root's `audit.key`, which a
//! database writer does not have; so a row edited in the database (a changed answer) is
//! refused (`AUDIT_BROKEN`) instead of being signed as the host's word. The chain itself
//! (an event forged by someone holding the audit key, or removed) is `dshq audit
//! verify`'s to check, over the whole log.

use serde_json::Value;

use crate::clock::rfc3339;
use crate::core::audit::EventKind;
use crate::core::lifecycle::{RequestRow, Status};
use crate::protocol::receipt::{ChainPosition, Policy, Receipt, Shown, Times};
use crate::store::types::Event;

/// The row and its events disagree (or the events are gone): no receipt is signed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Unattested(pub String);

/// The creation and final events of `row` among `events` (the events of its id, oldest
/// first), checked against the row.
pub fn attest<'e>(
    row: &RequestRow,
    events: &'e [Event],
) -> Result<(&'e Event, &'e Event), Unattested> {
    let creation = creation_event(row, events)?;
    let fin = final_event(row, events, creation)?;
    match check_times(row, creation, fin).or_else(|| check_recorded(row, creation, fin)) {
        Some(p) => Err(Unattested(p)),
        None => Ok((creation, fin)),
    }
}

/// The `accepted` (or `rejected`) event of `row` among `events`: the one that names its
/// row, or in a log from before events named their row, the newest one of its id.
fn creation_event<'e>(row: &RequestRow, events: &'e [Event]) -> Result<&'e Event, Unattested> {
    let id = row.id.as_deref().unwrap_or_default();
    let creation_kind = if row.status == Status::Rejected {
        EventKind::Rejected
    } else {
        EventKind::Accepted
    };
    let row_seq_of = |e: &Event| e.data.get("rowSeq").and_then(Value::as_i64);
    let creations: Vec<&Event> = events
        .iter()
        .filter(|e| e.event_kind() == Some(creation_kind) && e.request_id.as_deref() == Some(id))
        .collect();
    match creations.iter().find(|e| row_seq_of(e) == Some(row.seq)) {
        Some(e) => Ok(*e),
        // A log from before events named their row: the newest one of the id.
        None if creations.iter().all(|e| row_seq_of(e).is_none()) => match creations.last() {
            Some(e) => Ok(*e),
            None => Err(Unattested(format!(
                "the log holds no {creation_kind} event of it"
            ))),
        },
        None => Err(Unattested(format!(
            "no {creation_kind} event of the log names its row"
        ))),
    }
}

/// The event that ended `row` (its creation, for a rejection), after its `creation`.
fn final_event<'e>(
    row: &RequestRow,
    events: &'e [Event],
    creation: &'e Event,
) -> Result<&'e Event, Unattested> {
    let id = row.id.as_deref().unwrap_or_default();
    if row.status == Status::Rejected {
        return Ok(creation);
    }
    // A request its ladder answered with the asker's default ends with its `expired`
    // event, not an `answered` one: nobody answered it.
    let final_kind = if row.status == Status::Answered && row.decided_by.is_some() {
        Status::Expired.as_str()
    } else {
        row.status.as_str()
    };
    match events.iter().find(|e| {
        e.seq > creation.seq && e.request_id.as_deref() == Some(id) && e.kind == final_kind
    }) {
        Some(e) => Ok(e),
        None => Err(Unattested(format!(
            "the log holds no {} event of it",
            row.status
        ))),
    }
}

/// The row's creation and finishing times are its events'.
fn check_times(row: &RequestRow, creation: &Event, fin: &Event) -> Option<String> {
    if creation.at_ms != row.created_ms {
        return Some(format!(
            "its row says it was created at {}, its {} event at {}",
            rfc3339(row.created_ms),
            creation.kind,
            rfc3339(creation.at_ms)
        ));
    }
    if row.finished_ms != Some(fin.at_ms) {
        return Some(format!(
            "its row says it finished at {}, its {} event at {}",
            row.finished_ms
                .map(rfc3339)
                .unwrap_or_else(|| "(never)".into()),
            fin.kind,
            rfc3339(fin.at_ms)
        ));
    }
    None
}

/// What the row says is what its events recorded: the request's digest, and by how it
/// ended, the answer, decision and provider, or the error (and the rejected input).
fn check_recorded(row: &RequestRow, creation: &Event, fin: &Event) -> Option<String> {
    let differs = |what: &str, recorded: Option<&Value>, row_says: Value| -> Option<String> {
        match recorded {
            Some(v) if *v != row_says => Some(format!(
                "its row's {what} is not what its {} event recorded",
                fin.kind
            )),
            _ => None,
        }
    };
    let str_value = |s: &Option<String>| s.clone().map(Value::from).unwrap_or(Value::Null);
    let mut problem = None;
    if let Some(digest) = creation.data.get("digest") {
        if row.status != Status::Rejected
            && Some(digest.as_str().unwrap_or_default().to_string()) != row.request_digest()
        {
            problem = Some(
                "its row's request does not hash to the digest its accepted event recorded"
                    .to_string(),
            );
        }
    }
    let d = &fin.data;
    match row.status {
        Status::Answered => {
            let answer = row
                .answer
                .as_deref()
                .and_then(|a| serde_json::from_str::<Value>(a).ok())
                .unwrap_or(Value::Null);
            problem = problem
                .or_else(|| differs("answer", d.get("answer"), answer))
                .or_else(|| differs("provider", d.get("provider"), str_value(&row.provider)))
                .or_else(|| {
                    differs(
                        "decision",
                        d.get("decision"),
                        row.decision
                            .map(|x| Value::from(x.as_str()))
                            .unwrap_or(Value::Null),
                    )
                });
        }
        Status::Cancelled | Status::Aborted | Status::Rejected | Status::Expired => {
            problem = problem
                .or_else(|| differs("error code", d.get("code"), str_value(&row.error_code)))
                .or_else(|| {
                    differs(
                        "error message",
                        d.get("message"),
                        str_value(&row.error_message),
                    )
                });
            if row.status == Status::Rejected {
                let body = crate::protocol::digest::hex(&<sha2::Sha256 as sha2::Digest>::digest(
                    row.body.as_bytes(),
                ));
                problem = problem.or_else(|| differs("input", d.get("bodySha256"), body.into()));
            } else {
                problem = problem
                    .or_else(|| differs("provider", d.get("provider"), str_value(&row.provider)));
            }
        }
        Status::Pending | Status::Claimed => {
            problem = Some(format!("it is {}, not final", row.status));
        }
    }
    problem
}

/// The unsigned receipt of the final request `row` (its `signer` and `signature` are
/// empty: [`crate::receipt::seal::seal`] sets them). `events`: the events of its id.
pub fn unsigned(row: &RequestRow, events: &[Event]) -> Result<Receipt, Unattested> {
    let Some(id) = row.id.clone() else {
        return Err(Unattested(
            "a rejected input without an id has no outcome".into(),
        ));
    };
    let outcome = row
        .outcome()
        .ok_or_else(|| Unattested(format!("it is {}, not final", row.status)))?;
    let (_, fin) = attest(row, events)?;
    let request = row.request();
    // A default the ladder used was approved by nobody (the outcome's `decidedBy` says
    // so); a request with a quorum names every approver of its answer.
    let approvers = match (row.status, row.parsed_approvers()) {
        (Status::Answered, _) if row.decided_by.is_some() => Vec::new(),
        (Status::Answered, Some(a)) => a,
        (Status::Answered, None) => vec![fin.actor.clone()],
        _ => Vec::new(),
    };
    Ok(Receipt {
        receipt: String::new(),
        id,
        status: row.status.as_str().to_string(),
        request_digest: row.request_digest(),
        context: row.context.clone(),
        shown: request.as_ref().map(|r| Shown {
            questions: r.questions.clone(),
        }),
        outcome: Box::new(outcome),
        approvers,
        actor: fin.actor.clone(),
        policy: Policy {
            deadline: row.deadline_ms.map(rfc3339),
            timeout: request.as_ref().and_then(|r| r.timeout.clone()),
            require_provider: request.as_ref().and_then(|r| r.require_provider),
            quorum: row
                .quorum
                .as_deref()
                .and_then(|q| serde_json::from_str(q).ok()),
            ladder: None,
        },
        times: Times {
            created_at: rfc3339(row.created_ms),
            claimed_at: row.claimed_ms.map(rfc3339),
            finished_at: rfc3339(fin.at_ms),
        },
        chain: ChainPosition {
            seq: fin.seq,
            kind: fin.kind.clone(),
            hash: fin.hash.clone(),
        },
        signer: String::new(),
        signature: String::new(),
    })
}

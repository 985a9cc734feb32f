//! The rule of away notices, over [`crate::store::driver::DelegationStatements`]: a person
//! sets "away until T, delegate D" ([`set`]), cancels it ([`cancel`]), and it ends at T
//! ([`end_due`], the sweep's record of it). Every change is an event on the chain
//! (`away-set`, `away-cancelled`, `away-ended`), so who handed what to whom, and when, is
//! on the record; the rows are only what holds now. The checks are
//! [`crate::core::delegation::check`]; whether a notice holds is judged at use
//! ([`holding`]), not by the sweep.
//!
//! An answer "for" an away person is admitted by [`admit_for`]: the answerer must be the
//! person's delegate at the time of the answer, and neither of them the asker.

use serde_json::json;

use crate::clock::{rfc3339, Millis};
use crate::core::access::Role;
use crate::core::audit::{Actor, EventKind};
use crate::core::delegation::{check, Away, Known, Refused};
use crate::core::people::{Face, Identity, People};
use crate::error::{Error, Result};
use crate::store::chain::NewEvent;
use crate::store::driver::{DelegationReads, Statements};

fn event(
    db: &mut dyn Statements,
    now: Millis,
    kind: EventKind,
    by: &Actor,
    a: &Away,
) -> Result<()> {
    db.append_event(
        now,
        NewEvent {
            kind,
            request_id: None,
            lease_id: None,
            agent_id: None,
            actor: by.clone(),
            data: json!({
                "person": a.person,
                "delegate": a.delegate,
                "until": rfc3339(a.until_ms),
            }),
        },
    )
}

/// What the directory and the web tokens say of `delegate`.
fn known(db: &mut dyn Statements, people: &People, delegate: &str) -> Result<Known> {
    if people.persons().any(|(p, _)| p == delegate) {
        return Ok(Known::Reviewer);
    }
    let mut seen = Known::Unknown;
    for (name, role) in db.live_token_roles()? {
        if people.person_of(&Identity::new(Face::Web, &name)) != delegate {
            continue;
        }
        if Role::parse(&role) == Some(Role::Reviewer) {
            return Ok(Known::Reviewer);
        }
        seen = Known::NotReviewer;
    }
    Ok(seen)
}

/// Set `person` away until `until_ms`, `delegate` answering for them, by `by`: checked
/// ([`check`]), replacing their notice if they had one, with an `away-set` event.
pub fn set(
    db: &mut dyn Statements,
    now: Millis,
    people: &People,
    person: &str,
    delegate: &str,
    until_ms: Millis,
    by: &Actor,
) -> Result<Away> {
    let holding = db.aways_in_write()?;
    let k = known(db, people, delegate)?;
    check(person, delegate, until_ms, now, &holding, k).map_err(|r| match r {
        Refused::Past => Error::AwayInPast(rfc3339(until_ms)),
        Refused::ToSelf => Error::AwaySelf(person.into()),
        Refused::Chain(why) => Error::AwayChain(why),
        Refused::UnknownDelegate => Error::UnknownDelegate(delegate.into()),
    })?;
    let a = Away {
        person: person.into(),
        delegate: delegate.into(),
        until_ms,
        set_ms: now,
        set_by: by.as_str().into_owned(),
    };
    db.upsert_away(&a)?;
    event(db, now, EventKind::AwaySet, by, &a)?;
    Ok(a)
}

/// Cancel `person`'s notice, by `by`, with an `away-cancelled` event; `NOT_AWAY` when
/// none holds (one past its end is swept as ended, not cancelled).
pub fn cancel(db: &mut dyn Statements, now: Millis, person: &str, by: &Actor) -> Result<Away> {
    end_due(db, now)?;
    let a = db
        .delete_away(person)?
        .ok_or_else(|| Error::NotAway(person.into()))?;
    event(db, now, EventKind::AwayCancelled, by, &a)?;
    Ok(a)
}

/// Remove the notices past their end, each with an `away-ended` event by the daemon: the
/// record of an end that already took effect at its time.
pub fn end_due(db: &mut dyn Statements, now: Millis) -> Result<usize> {
    let ended = db.delete_aways_ended(now)?;
    for a in &ended {
        event(db, now, EventKind::AwayEnded, &Actor::Daemon, a)?;
    }
    Ok(ended.len())
}

/// The notices that hold at `now`.
pub fn holding(db: &mut (impl DelegationReads + ?Sized), now: Millis) -> Result<Vec<Away>> {
    Ok(db.aways()?.into_iter().filter(|a| a.holds(now)).collect())
}

/// Admit an answer by person `delegate` made for person `person` on a request whose askers
/// are `askers`: `NOT_DELEGATE` unless `person`'s notice names `delegate` and holds at
/// `now`; `OWN_REQUEST` when either of them asked it (`voter` names the identity).
pub fn admit_for(
    db: &mut dyn Statements,
    now: Millis,
    delegate: &str,
    person: &str,
    askers: &[String],
    request_id: &str,
    voter: &str,
) -> Result<()> {
    let holds = db
        .aways_in_write()?
        .iter()
        .any(|a| a.person == person && a.holds_for(delegate, now));
    if !holds {
        return Err(Error::NotDelegate {
            delegate: delegate.into(),
            person: person.into(),
        });
    }
    if askers.iter().any(|a| a == delegate || a == person) {
        return Err(Error::OwnRequest {
            id: request_id.into(),
            voter: format!("{voter} for {person}"),
        });
    }
    Ok(())
}

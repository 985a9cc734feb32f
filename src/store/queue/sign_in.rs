//! A sign-in through the identity provider, on the record: one `signed-in` event, chained
//! like every other, naming the person and the provider's subject as its actor and holding
//! the claims read and what they decided ([`crate::core::sign_in::Decision::record`]).
//! Not a change of any request, so it names none; never a token.
//!
//! In the same transaction the person's quorum groups by sign-in are replaced by those
//! this sign-in's claims decided (none deletes them): the claims at the latest sign-in
//! decide, as the event says. A vote on a request whose group sign-ins fill reads them
//! ([`member`]).

use serde_json::Value;

use crate::clock::Millis;
use crate::core::audit::{Actor, EventKind};
use crate::error::{Error, Result};
use crate::store::chain::NewEvent;
use crate::store::driver::sign_in::SignInGroup;
use crate::store::driver::{SignInReads, Statements};

/// Record that `actor` (an `oidc:PERSON@SUBJECT`) signed in at `now`, with `data` (the
/// claims and the decision), its claims putting the person in `quorum_groups`.
pub fn record(
    db: &mut dyn Statements,
    now: Millis,
    actor: &Actor,
    quorum_groups: &[String],
    data: Value,
) -> Result<()> {
    let Actor::Oidc { person, subject } = actor else {
        return Err(Error::Invalid(format!(
            "a sign-in is recorded for an identity provider's subject, not {}",
            actor.identity()
        )));
    };
    db.append_event(
        now,
        NewEvent {
            kind: EventKind::SignedIn,
            request_id: None,
            lease_id: None,
            agent_id: None,
            actor: actor.clone(),
            data,
        },
    )?;
    db.delete_sign_in_groups_of_person(person)?;
    for g in quorum_groups {
        db.upsert_sign_in_group(&SignInGroup {
            person: person.clone(),
            quorum_group: g.clone(),
            subject: subject.clone(),
            signed_in_ms: now,
        })?;
    }
    Ok(())
}

/// `person`'s membership of `quorum_group` by their latest sign-in, if it put them there
/// (read inside a vote's write).
pub fn member(
    db: &mut dyn Statements,
    person: &str,
    quorum_group: &str,
) -> Result<Option<SignInGroup>> {
    db.sign_in_group_of_person(person, quorum_group)
}

/// The quorum groups `person`'s latest sign-in put them in, by name.
pub fn groups_of(db: &mut dyn SignInReads, person: &str) -> Result<Vec<SignInGroup>> {
    db.sign_in_groups_of_person(person)
}

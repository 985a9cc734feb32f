//! Delegation while a reviewer is away: set, cancel and read the away notices
//! ([`crate::store::queue::delegation`]). One use-case, one transaction; every face (the
//! CLI, the HTTP API, the page) calls these, after deciding whose notice the caller may
//! change (a reviewer their own; the CLI, which owns the root, anyone's).

use crate::clock::Millis;
use crate::core::audit::Actor;
use crate::core::delegation::Away;
use crate::error::Result;
use crate::store::Store;

/// Set `person` away until `until_ms`, `delegate` answering for them, by `by`.
pub fn set(
    store: &mut Store,
    person: &str,
    delegate: &str,
    until_ms: Millis,
    by: &Actor,
) -> Result<Away> {
    store.set_away(person, delegate, until_ms, by)
}

/// Cancel `person`'s away notice, by `by`.
pub fn cancel(store: &mut Store, person: &str, by: &Actor) -> Result<Away> {
    store.cancel_away(person, by)
}

/// The notices that hold now.
pub fn holding(store: &mut Store) -> Result<Vec<Away>> {
    store.aways()
}

/// Request `id`, when `person` may answer in its context: a web token of theirs answers
/// there ([`crate::store::WebToken::answers_in`]). What a delegate answering for `person`
/// reaches beyond their own token's context; whether they are the delegate now is
/// checked by the answer itself.
pub fn reachable(
    store: &mut Store,
    id: &str,
    person: &str,
) -> Result<Option<crate::store::RequestRow>> {
    use crate::core::people::{Face, Identity};
    let Some(row) = store.get(id)? else {
        return Ok(None);
    };
    let theirs = store.tokens()?.into_iter().any(|t| {
        store.people().person_of(&Identity::new(Face::Web, &t.name)) == person
            && t.answers_in(&row.context)
    });
    Ok(theirs.then_some(row))
}

/// Who else a mail to `addresses` must reach now: for each address whose person is away,
/// their delegate's addresses (the delegate's `mail:` identities in the people directory;
/// a delegate the directory lists no address for is reached on the other channels only).
/// Each once, none already among `addresses`. What the mail channel adds to a context's
/// recipients, so the ladder's reminders and escalations reach the delegate too.
pub fn delegate_addresses(store: &mut Store, addresses: &[String]) -> Result<Vec<String>> {
    use crate::core::people::{Face, Identity};
    let now = store.clock_now()?;
    let holding = store.aways()?;
    let people = store.people();
    let persons: Vec<String> = addresses
        .iter()
        .map(|a| people.person_of(&Identity::new(Face::Mail, a)))
        .collect();
    let mut out: Vec<String> = Vec::new();
    for d in crate::core::delegation::delegates_of(&persons, &holding, now) {
        let listed = people.persons().find(|(p, _)| *p == d).map(|(_, ids)| ids);
        for id in listed.unwrap_or_default() {
            if id.face == Face::Mail && !addresses.contains(&id.name) && !out.contains(&id.name) {
                out.push(id.name.clone());
            }
        }
    }
    Ok(out)
}

//! A sign-in through the identity provider, recorded: the use-case the page's callback
//! calls once the claims decided ([`crate::web::page::sign_in`]), and the API's first use
//! of a provider's access token ([`crate::host::auth`]); one write.

use crate::core::audit::Actor;
use crate::core::sign_in::{Claims, Decision, Via};
use crate::error::Result;
use crate::store::Store;

/// Record that the person of `decision` signed in with `claims` (`via` the page or an
/// access token's first use): the event, and the quorum groups the claims put them in.
pub fn record(store: &mut Store, decision: &Decision, claims: &Claims, via: Via) -> Result<()> {
    let actor = Actor::Oidc {
        person: decision.person.clone(),
        subject: claims.subject.clone(),
    };
    let groups: Vec<String> = decision.quorum_groups.iter().cloned().collect();
    store.record_sign_in(&actor, &groups, decision.record(claims, via))
}

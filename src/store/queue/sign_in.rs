//! A sign-in through the identity provider, on the record: one `signed-in` event, chained
//! like every other, naming the person and the provider's subject as its actor and holding
//! the claims read and what they decided ([`crate::core::sign_in::Decision::record`]).
//! Not a change of any request, so it names none; never a token.

use serde_json::Value;

use crate::clock::Millis;
use crate::core::audit::{Actor, EventKind};
use crate::error::Result;
use crate::store::chain::NewEvent;
use crate::store::driver::Statements;

/// Record that `actor` signed in at `now`, with `data` (the claims and the decision).
pub fn record(db: &mut dyn Statements, now: Millis, actor: &Actor, data: Value) -> Result<()> {
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
    )
}

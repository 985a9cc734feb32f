//! The sweep: what fell due strictly before the write's `now` ends inside that write, so
//! a reader never acts on an expired lease, a passed deadline or a run-out agent ttl.
//! Each driver decides when a sweep runs (before a write's work, in a view); what it
//! ends is written here once.

use crate::clock::Millis;
use crate::error::Result;
use crate::store::driver::Statements;
use crate::store::types::Swept;

/// End what fell due before `now`: expired leases (their claims go back to pending),
/// the ladders' rungs (reminders, escalations, expiries: [`super::ladder`]), open
/// requests past their deadline (`ASK_ABORTED`), agents past their ttl (with what they
/// own). The rungs run before the deadlines, though acceptance already refuses a rung at
/// or after its request's deadline.
pub fn sweep(db: &mut dyn Statements, now: Millis) -> Result<Swept> {
    let mut swept = Swept::default();
    for (lease_id, released) in super::leases::expire_due(db, now)? {
        swept.leases.push(lease_id);
        swept.released.extend(released);
    }
    let climbed = super::ladder::climb_due(db, now)?;
    swept.laddered = climbed.stepped;
    swept.expired = climbed.ended;
    swept.aborted = super::requests::abort_overdue(db, now)?;
    swept.agents = super::agents::expire_due(db, now)?;
    Ok(swept)
}

//! The sweep: what fell due strictly before the write's `now` ends inside that write, so
//! a reader never acts on an expired lease, a passed deadline or a run-out agent ttl.
//! Each driver decides when a sweep runs (before a write's work, in a view); what it
//! ends is written here once.

use crate::clock::{rfc3339, Millis};
use crate::core::audit::Actor;
use crate::core::lifecycle::Status;
use crate::error::{Error, Result};
use crate::protocol::error::Code;
use crate::store::driver::answers::ErrorEnd;
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
    swept.aborted = abort_overdue(db, now)?;
    swept.agents = super::agents::expire_due(db, now)?;
    // Away notices past their end: they stopped holding then; this records it.
    super::delegation::end_due(db, now)?;
    Ok(swept)
}

/// Abort every open request whose deadline has passed at `now`; their ids.
/// The end is the answers' error end ([`super::answers::finish_error`]), by the daemon,
/// with no provider and the claim kept as it is.
pub fn abort_overdue(db: &mut dyn Statements, now: Millis) -> Result<Vec<String>> {
    let due = db.open_requests_past_deadline(now)?;
    let mut ids = Vec::with_capacity(due.len());
    for r in due {
        // SQLite's copy panicked on an accepted row without an id; PostgreSQL's error is kept.
        let id =
            r.id.clone()
                .ok_or_else(|| Error::Invalid("an accepted request has an id".into()))?;
        let deadline = r.deadline_ms.map(rfc3339).unwrap_or_default();
        let message = format!("the deadline {deadline} passed before an answer");
        let end = ErrorEnd {
            seq: r.seq,
            status: Status::Aborted,
            code: Code::AskAborted,
            message: &message,
            provider: None,
            lease_id: None,
        };
        match super::answers::finish_error(db, now, &r, end, &Actor::Daemon) {
            Ok(_) => ids.push(id),
            // Another writer (an answer, another host's sweep) ended it since the read:
            // it has its outcome, and its event.
            Err(Error::RequestFinal { .. }) => {}
            Err(e) => return Err(e),
        }
    }
    Ok(ids)
}

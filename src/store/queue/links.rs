//! The queue rule of mail links, over
//! [`crate::store::driver::LinkStatements`]: an answer sent through a mail's link records
//! the link as used in the answer's own transaction, so a link answers once: a second
//! send through it is `LINK_USED` and changes nothing, one sent after the request moved to
//! another context (an escalation) is `WRONG_CONTEXT`, one whose request is not the one it
//! was made for (a push action binds the request's digest) is `LINK_INVALID`, and an answer that is refused
//! (`BAD_ANSWER`, `REQUEST_FINAL`, ...) leaves the link unused (the transaction rolls
//! back whole).

use crate::clock::Millis;
use crate::core::mail_link::Refused;
use crate::error::{Error, Result};
use crate::protocol::Answer;
use crate::store::calls::{Answered, LeaseRef};
use crate::store::driver::links::{LinkReads, LinkUse};
use crate::store::driver::Statements;

/// Answer (or vote on) `link.request_id`, the one request a link opens, with `answer`
/// through `lease`, spending `link`.
pub fn answer_by_link(
    db: &mut dyn Statements,
    now: Millis,
    link: &LinkUse,
    lease: &LeaseRef,
    answer: &Answer,
    people: &crate::core::people::People,
) -> Result<Answered> {
    // The request of this id asked after the link was made is not the link's (the one
    // it was sent for was pruned, and the id asked again): not found, as it is gone.
    match db.answer_target(&link.request_id)? {
        Some(row) if crate::core::mail_link::opens(link.issued_ms, row.created_ms) => {
            // Only in the context it was sent for (an escalation moves the request on).
            crate::core::mail_link::sent_for(&link.context, &row.context)?;
            // Only on the request it was made for, as it was then.
            if link
                .digest
                .as_ref()
                .is_some_and(|d| row.request_digest().as_ref() != Some(d))
            {
                return Err(Refused::Changed {
                    request_id: link.request_id.clone(),
                }
                .into());
            }
        }
        _ => return Err(Error::NotFound(link.request_id.clone())),
    }
    if !db.insert_link_use_if_unused(link, now)? {
        return Err(Refused::Used {
            request_id: link.request_id.clone(),
        }
        .into());
    }
    super::answers::answer_with(db, now, lease, &link.request_id, answer, people, None)
}

/// Whether an answer was sent through link `link_id`.
pub fn used(db: &mut dyn LinkReads, link_id: &str) -> Result<bool> {
    db.link_used(link_id)
}

//! Answering through a mail's link: the page's answer
//! ([`super::provide::answer`]) with the link recorded as used in the same transaction
//! ([`crate::store::queue::links`]), so a link answers once. Recorded as the recipient
//! (`mail:ADDRESS`, the `acting` the page built), then the outcome is published.

use super::provide::{Acting, Answering};
use crate::error::Result;
use crate::protocol::Answer;
use crate::root::Root;
use crate::store::driver::links::LinkUse;
use crate::store::Store;

/// Answer `link.request_id` with `answer` as `who`, spending `link` (`LINK_USED` when an
/// answer was already sent through it; nothing changes then).
pub fn answer_by_link(
    store: &mut Store,
    root: Option<&Root>,
    link: &LinkUse,
    who: &Acting,
    answer: &Answer,
) -> Result<Answering> {
    let done = store.answer_by_link(link, &who.lease_ref(), answer)?;
    Ok(super::provide::published(store, root, done))
}

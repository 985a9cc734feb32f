//! Feeds, written once over [`FeedReads`]: new requests since a position, the lifecycle
//! events of requests since a position.
//!
//! Every feed pages by event position, the one order both drivers keep equal to commit
//! order ([`crate::store::driver::feed`]): a new request is its `accepted` event, so a
//! request committed after a later-numbered one on another host is still seen.

use crate::core::audit::EventKind;
use crate::core::lifecycle::RequestRow;
use crate::error::Result;
use crate::store::calls::{EventPage, FeedPage, FeedPos};
use crate::store::driver::FeedReads;
use crate::store::types::ListFilter;

/// The events of `kinds` about accepted requests matching `filter`, after `after`, at
/// most `limit` positions read.
pub fn request_events(
    db: &mut (impl FeedReads + ?Sized),
    after: FeedPos,
    kinds: &[EventKind],
    filter: &ListFilter,
    limit: usize,
) -> Result<EventPage> {
    // The bound first: an event committed meanwhile lies above it and is read next time,
    // never skipped.
    let upto = db.events_upto(after, limit)?;
    let names: Vec<&str> = kinds.iter().map(|k| k.as_str()).collect();
    let mut about: std::collections::HashMap<i64, RequestRow> = db
        .event_requests(after, upto, &names, filter)?
        .into_iter()
        .collect();
    let events = if about.is_empty() {
        Vec::new()
    } else {
        db.events_between(after, upto)?
            .into_iter()
            .filter_map(|e| about.remove(&e.seq).map(|r| (e, r)))
            .collect()
    };
    Ok(EventPage { events, upto })
}

/// The requests accepted after `after` (never rejections), oldest first, at most `limit`
/// positions read: each one's `accepted` event, with the request as it is now.
pub fn new_requests(
    db: &mut (impl FeedReads + ?Sized),
    after: FeedPos,
    limit: usize,
) -> Result<FeedPage> {
    let upto = db.events_upto(after, limit)?;
    let requests = if upto > after {
        db.event_requests(
            after,
            upto,
            &[EventKind::Accepted.as_str()],
            &ListFilter::default(),
        )?
        .into_iter()
        .map(|(_, r)| r)
        .collect()
    } else {
        Vec::new()
    };
    Ok(FeedPage { requests, upto })
}

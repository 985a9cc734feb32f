//! The deliveries outbox's rule: each notification is a row written in the same
//! transaction as the event that causes it, so a committed event has its delivery and a
//! rolled-back one has none; the host sends the rows after the commit
//! ([`crate::channels::deliveries`]), retries them, and marks them delivered after a 2xx.
//!
//! One row per event and channel ([`Channel`]: webhook, email, Slack), for the channels
//! some daemon sends the context's deliveries on (`delivery_channels`, filled by a daemon
//! with channels at start) and that take the event's kind ([`Channel::takes`]); a store
//! without channels writes none. Each row has its own id and retry state, so one channel
//! that is down holds back no other. The delivery id (`msg_` and 32 random hex digits) is
//! fixed when the row is written: every attempt, and every resend after a crash, carries
//! the same id, which a receiver uses to drop duplicates. Where a channel's message goes
//! (a URL, mail addresses, a Slack channel) is the sending host's configuration, met at
//! send time.

use crate::clock::{rfc3339, Millis};
use crate::core::audit::EventKind;
use crate::core::channel::Channel;
use crate::error::{Error, Result};
use crate::store::driver::deliveries::NewDelivery;
use crate::store::driver::Statements;
use crate::store::types::Route;

/// A fresh delivery id.
pub fn new_id() -> Result<String> {
    let mut b = [0u8; 16];
    getrandom::getrandom(&mut b)
        .map_err(|e| Error::Invalid(format!("no randomness for a delivery id: {e}")))?;
    Ok(format!("msg_{}", crate::store::chain::hex(&b)))
}

/// Write the deliveries of event `kind` about request `id` of `context`, one per route
/// that sends it (its `data`, made only when some route sends it, is the body's `data`
/// beside `id`, `context` and `event`), in the caller's transaction. An event no channel
/// sends costs nothing more than the driver's answer to that (every event of a store
/// without channels: every file of an inbox batch had made a body and drawn a random id
/// for nothing).
///
/// The routes: the channels some daemon sends `context`'s deliveries on that take the
/// kind ([`Channel::takes`]), and **who was told hears the end**: every route an earlier
/// delivery of this request went to, in a context the request has left (escalated from),
/// for the steps its channel tells such a context ([`Channel::tells_former`]). A row's
/// `context` is its route's, so it goes where that context's channel sends; the body's
/// `context` is the request's own.
pub fn notify(
    db: &mut dyn Statements,
    now: Millis,
    kind: EventKind,
    id: &str,
    context: &str,
    data: impl FnOnce() -> serde_json::Value,
) -> Result<()> {
    if !Channel::ALL.iter().any(|c| c.takes(kind)) {
        return Ok(());
    }
    let mut routes: Vec<Route> = db
        .sending_channels_of_context(context)?
        .into_iter()
        .filter(|c| c.takes(kind))
        .map(|channel| Route {
            context: context.to_string(),
            channel,
        })
        .collect();
    // Nobody was told of a request before it was accepted.
    if kind != EventKind::Accepted {
        for told in db.told_routes_of_request(id)? {
            if told.context != context && told.channel.tells_former(kind) && !routes.contains(&told)
            {
                routes.push(told);
            }
        }
    }
    if routes.is_empty() {
        return Ok(());
    }
    let mut data = data();
    if let Some(m) = data.as_object_mut() {
        m.insert("id".into(), id.into());
        m.insert("context".into(), context.into());
        m.insert("event".into(), kind.as_str().into());
    }
    let body = serde_json::json!({
        "type": format!("dshq.request.{}", kind.as_str()),
        "timestamp": rfc3339(now),
        "data": data,
    })
    .to_string();
    for route in routes {
        let delivery_id = new_id()?;
        db.insert_delivery(&NewDelivery {
            id: &delivery_id,
            request_id: id,
            context: &route.context,
            channel: route.channel,
            kind: kind.as_str(),
            body: &body,
            now,
        })?;
    }
    Ok(())
}

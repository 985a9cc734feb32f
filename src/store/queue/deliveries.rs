//! The deliveries outbox's rule (issue 29): each notification is a row written in the same
//! transaction as the event that causes it, so a committed event has its delivery and a
//! rolled-back one has none; the host sends the rows after the commit
//! ([`crate::host::deliveries`]), retries them, and marks them delivered after a 2xx.
//!
//! One row per event, whatever the number of channels: a context's channels are the
//! sending host's configuration, not the record's, and are met at send time (today one
//! webhook per context). Rows are written only for a context some daemon sends for
//! (`delivery_contexts`, filled by a daemon with channels at start), so a store without
//! channels writes none. The delivery id (`msg_` and 32 random hex digits) is fixed when
//! the row is written: every attempt, and every resend after a crash, carries the same id,
//! which a receiver uses to drop duplicates.

use crate::clock::{rfc3339, Millis};
use crate::core::audit::EventKind;
use crate::error::{Error, Result};
use crate::store::driver::deliveries::NewDelivery;
use crate::store::driver::Statements;

/// The event kinds that are notified.
pub const NOTIFIED: &[EventKind] = &[
    EventKind::Accepted,
    EventKind::Claimed,
    EventKind::Reminded,
    EventKind::Escalated,
    EventKind::Answered,
    EventKind::Expired,
    EventKind::Cancelled,
    EventKind::Aborted,
];

/// A fresh delivery id.
pub fn new_id() -> Result<String> {
    let mut b = [0u8; 16];
    getrandom::getrandom(&mut b)
        .map_err(|e| Error::Invalid(format!("no randomness for a delivery id: {e}")))?;
    Ok(format!("msg_{}", crate::store::chain::hex(&b)))
}

/// Write the delivery of event `kind` about request `id` of `context` (its `data`, made
/// only when the context sends, is the body's `data` beside `id`, `context` and `event`),
/// in the caller's transaction. A context no daemon sends for costs nothing more than the
/// driver's answer to that (every event of a store without webhooks: every file of an
/// inbox batch made a body and drew a random id for nothing).
pub fn notify(
    db: &mut dyn Statements,
    now: Millis,
    kind: EventKind,
    id: &str,
    context: &str,
    data: impl FnOnce() -> serde_json::Value,
) -> Result<()> {
    if !NOTIFIED.contains(&kind) || !db.context_sends_deliveries(context)? {
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
    let delivery_id = new_id()?;
    db.insert_delivery_if_context_sends(&NewDelivery {
        id: &delivery_id,
        request_id: id,
        context,
        kind: kind.as_str(),
        body: &body,
        now,
    })
}

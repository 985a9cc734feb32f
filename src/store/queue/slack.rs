//! The Slack channel's rule: a delivery posts at most one message, and the
//! messages a request has are the ones updated when it ends.
//!
//! The sender ([`crate::channels::slack`]) posts a delivery's message with `chat.postMessage`
//! and records where it went (the Slack channel and the message's `ts`) here; a delivery
//! sent again (its first attempt's "delivered" mark was lost to a crash, or the message
//! was posted but the mark failed) finds its message recorded and posts none. The first
//! record of a delivery wins: a later one for the same delivery changes nothing. When the
//! request ends (answered, expired, cancelled, aborted), every message recorded for it is
//! updated, so no button stays live on a request that is over.
//!
//! These rows are the sender's bookkeeping, like the outbox's marks: not a change of the
//! request, so no event (the delivery that posted the message is in the outbox, shown by
//! `dshq events ID --deliveries`).

use crate::clock::Millis;
use crate::error::{Error, Result};
use crate::store::driver::slack::SlackMessage;
use crate::store::driver::{SlackReads, Statements};

/// Record that delivery `delivery_id` posted request `request_id`'s message in Slack
/// channel `channel` as `ts`, at `now`, unless its delivery recorded one already. Returns
/// whether this call recorded it.
pub fn record_message(
    db: &mut dyn Statements,
    now: Millis,
    delivery_id: &str,
    request_id: &str,
    channel: &str,
    ts: &str,
) -> Result<bool> {
    if channel.is_empty() || ts.is_empty() {
        return Err(Error::Invalid(format!(
            "a Slack message of delivery {delivery_id} needs its channel and ts"
        )));
    }
    db.insert_slack_message_unless_delivery_recorded(&SlackMessage {
        delivery_id: delivery_id.to_string(),
        request_id: request_id.to_string(),
        channel: channel.to_string(),
        ts: ts.to_string(),
        posted_ms: now,
    })
}

/// The messages recorded for request `request_id`, oldest first.
pub fn messages(db: &mut dyn SlackReads, request_id: &str) -> Result<Vec<SlackMessage>> {
    db.slack_messages_of_request(request_id)
}

/// The message delivery `delivery_id` posted, if any.
pub fn message_of_delivery(
    db: &mut dyn SlackReads,
    delivery_id: &str,
) -> Result<Option<SlackMessage>> {
    db.slack_message_of_delivery(delivery_id)
}

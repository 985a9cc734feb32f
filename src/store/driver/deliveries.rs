//! The statements of one concern. The deliveries outbox: a notification row written in the
//! transaction of the event that causes it, the routes that make a context's events write
//! them, and the sender's reads and marks.
//!
//! See [`super`] for what a statement is and is not; the rule is
//! [`crate::store::queue::deliveries`].

use crate::clock::Millis;
use crate::core::channel::Channel;
use crate::error::{Error, Result};
use crate::store::types::{Delivery, DeliveryCounts, Route};

/// The channel a stored name names (the tables' CHECK admits no other); what both
/// drivers map a row's `channel` with.
pub fn stored_channel(name: &str) -> Result<Channel> {
    Channel::parse(name).ok_or_else(|| {
        Error::Invalid(format!(
            "the store holds an unknown delivery channel {name:?}"
        ))
    })
}

/// A new row of `deliveries`.
#[derive(Debug, Clone)]
pub struct NewDelivery<'a> {
    /// The stable delivery id (`webhook-id`).
    pub id: &'a str,
    /// The request it is about.
    pub request_id: &'a str,
    /// The context whose channels receive it.
    pub context: &'a str,
    /// The channel it goes out on.
    pub channel: Channel,
    /// The event kind that caused it.
    pub kind: &'a str,
    /// The JSON body sent.
    pub body: &'a str,
    /// Written at (and first due at).
    pub now: Millis,
}

/// The statements the outbox's rule needs from a write transaction.
pub trait DeliveryStatements {
    /// The channels some daemon sends `context`'s deliveries on (`delivery_channels`);
    /// none on a store without channels.
    fn sending_channels_of_context(&mut self, context: &str) -> Result<Vec<Channel>>;

    /// The routes request `request_id`'s deliveries went to so far (each once, in the
    /// order they were first written): who was told of it.
    fn told_routes_of_request(&mut self, request_id: &str) -> Result<Vec<Route>>;

    /// Insert `d`.
    fn insert_delivery(&mut self, d: &NewDelivery<'_>) -> Result<()>;

    /// Record that a daemon sends the deliveries of these contexts on these channels (a
    /// route already recorded stays as it is).
    fn insert_delivery_routes(&mut self, routes: &[Route]) -> Result<()>;
}

/// The sender's side, outside a write: what is due, what was sent, and its marks. A mark
/// is one autocommit statement on the deliveries table alone: sending is not a change of
/// the record, so it takes no write lock.
pub trait DeliveryReads {
    /// The undelivered rows of `routes` due at `now`, oldest first, at most `limit`.
    fn deliveries_due(
        &mut self,
        routes: &[Route],
        now: Millis,
        limit: usize,
    ) -> Result<Vec<Delivery>>;

    /// When the next undelivered row of `routes` falls due.
    fn next_delivery_due(&mut self, routes: &[Route]) -> Result<Option<Millis>>;

    /// The deliveries of request `request_id`, oldest first.
    fn deliveries_of_request(&mut self, request_id: &str) -> Result<Vec<Delivery>>;

    /// The counts by channel (pending, delivered, failed attempts), for the metrics.
    fn delivery_counts(&mut self) -> Result<Vec<DeliveryCounts>>;

    /// Mark delivery `id` delivered at `now` (a 2xx came back), unless it already is.
    fn mark_delivered(&mut self, id: &str, now: Millis) -> Result<()>;

    /// Record a failed attempt of delivery `id`, next tried at `next_ms`.
    fn mark_delivery_failed(&mut self, id: &str, next_ms: Millis, error: &str) -> Result<()>;
}

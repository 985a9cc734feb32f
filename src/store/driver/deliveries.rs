//! The statements of one concern. The deliveries outbox (issue 29): a notification row
//! written in the transaction of the event that causes it.
//!
//! See [`super`] for what a statement is and is not; the rule is
//! [`crate::store::queue::deliveries`].

use crate::clock::Millis;
use crate::core::channel::Channel;
use crate::error::{Error, Result};

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

    /// Insert `d`.
    fn insert_delivery(&mut self, d: &NewDelivery<'_>) -> Result<()>;
}

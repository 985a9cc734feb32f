//! The statements of one concern. The deliveries outbox (issue 29): a notification row
//! written in the transaction of the event that causes it.
//!
//! See [`super`] for what a statement is and is not; the rule is
//! [`crate::store::queue::deliveries`].

use crate::clock::Millis;
use crate::error::Result;

/// A new row of `deliveries`.
#[derive(Debug, Clone)]
pub struct NewDelivery<'a> {
    /// The stable delivery id (`webhook-id`).
    pub id: &'a str,
    /// The request it is about.
    pub request_id: &'a str,
    /// The context whose channels receive it.
    pub context: &'a str,
    /// The event kind that caused it.
    pub kind: &'a str,
    /// The JSON body sent.
    pub body: &'a str,
    /// Written at (and first due at).
    pub now: Millis,
}

/// The statements the outbox's rule needs from a write transaction.
pub trait DeliveryStatements {
    /// Whether some daemon sends deliveries for `context` (`delivery_contexts`): the rule
    /// asks first, so an event no one is sent costs no body, no id and no statement.
    fn context_sends_deliveries(&mut self, context: &str) -> Result<bool>;

    /// Insert `d` if some daemon sends deliveries for its context (`delivery_contexts`);
    /// nothing otherwise.
    fn insert_delivery_if_context_sends(&mut self, d: &NewDelivery<'_>) -> Result<()>;
}

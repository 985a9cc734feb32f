//! The statements of one concern. The Slack channel's messages: where the
//! sender posted each delivery's message (the Slack channel and the message's `ts`), so
//! the message can be updated when the request ends, and a delivery sent again after a
//! crash posts no second message.
//!
//! See [`super`] for what a statement is and is not; the rule is
//! [`crate::store::queue::slack`].

use crate::clock::Millis;
use crate::error::Result;

/// One message the Slack sender posted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SlackMessage {
    /// The delivery that posted it (one message per delivery).
    pub delivery_id: String,
    /// The request it shows.
    pub request_id: String,
    /// The Slack channel id it was posted in (as `chat.postMessage` answered).
    pub channel: String,
    /// The message's timestamp, its id within the channel (`chat.update` names it).
    pub ts: String,
    /// When it was recorded, on the store's clock.
    pub posted_ms: Millis,
}

/// The statements the Slack rule needs from a write transaction.
pub trait SlackStatements {
    /// Insert `m` unless a message of its delivery is recorded already; whether it was
    /// inserted.
    fn insert_slack_message_unless_delivery_recorded(&mut self, m: &SlackMessage) -> Result<bool>;
}

/// The reads of the recorded messages.
pub trait SlackReads {
    /// The messages of request `request_id`, oldest first.
    fn slack_messages_of_request(&mut self, request_id: &str) -> Result<Vec<SlackMessage>>;

    /// The message delivery `delivery_id` posted, if one is recorded.
    fn slack_message_of_delivery(&mut self, delivery_id: &str) -> Result<Option<SlackMessage>>;
}

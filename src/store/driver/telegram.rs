//! The statements of one concern. The Telegram channel's messages: where the sender sent
//! each delivery's message (the chat and the message id) and the request's digest then, so
//! the message can be edited when the request ends, a press of its buttons judged against
//! it, and a delivery sent again after a crash sends no second message.
//!
//! See [`super`] for what a statement is and is not; the rule is
//! [`crate::store::queue::telegram`].

use crate::clock::Millis;
use crate::error::Result;

/// One message the Telegram sender sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TelegramMessage {
    /// The delivery that sent it (one message per delivery and chat).
    pub delivery_id: String,
    /// The chat it went to.
    pub chat_id: i64,
    /// Its id within the chat (`editMessageText` names it).
    pub message_id: i64,
    /// The request it shows.
    pub request_id: String,
    /// The request's digest when it was sent (`sha256:HEX`).
    pub digest: String,
    /// When it was recorded, on the store's clock.
    pub posted_ms: Millis,
}

/// The statements the Telegram rule needs from a write transaction.
pub trait TelegramStatements {
    /// Insert `m` unless a message of its delivery in its chat is recorded already;
    /// whether it was inserted.
    fn insert_telegram_message_unless_recorded(&mut self, m: &TelegramMessage) -> Result<bool>;
}

/// The reads of the recorded messages.
pub trait TelegramReads {
    /// The messages of request `request_id`, oldest first.
    fn telegram_messages_of_request(&mut self, request_id: &str) -> Result<Vec<TelegramMessage>>;

    /// The message delivery `delivery_id` sent to chat `chat_id`, if one is recorded.
    fn telegram_message_of_delivery(
        &mut self,
        delivery_id: &str,
        chat_id: i64,
    ) -> Result<Option<TelegramMessage>>;
}

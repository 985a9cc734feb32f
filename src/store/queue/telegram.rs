//! The Telegram channel's rule: a delivery sends at most one message to each chat, and
//! the messages a request has are the ones edited when it ends and the only ones whose
//! buttons may answer it.
//!
//! The sender ([`crate::channels::telegram`]) sends a delivery's message with
//! `sendMessage` and records where it went (the chat and the message id) and the
//! request's digest then; a delivery sent again (its "delivered" mark was lost to a crash)
//! finds its message recorded and sends none to that chat. The first record wins. A press
//! is judged against the record its button names ([`crate::core::telegram::ButtonRef`]).
//!
//! These rows are the sender's bookkeeping, like the outbox's marks: not a change of the
//! request, so no event.

use crate::error::{Error, Result};
use crate::store::driver::telegram::TelegramMessage;
use crate::store::driver::{Statements, TelegramReads};

/// Record `m` (its `posted_ms` is the store's `now`), unless its delivery recorded a
/// message in its chat already. Returns whether this call recorded it.
pub fn record_message(
    db: &mut dyn Statements,
    now: crate::clock::Millis,
    m: &TelegramMessage,
) -> Result<bool> {
    if m.delivery_id.is_empty() || m.request_id.is_empty() || m.digest.is_empty() {
        return Err(Error::Invalid(format!(
            "a Telegram message of delivery {:?} needs its delivery, request and digest",
            m.delivery_id
        )));
    }
    db.insert_telegram_message_unless_recorded(&TelegramMessage {
        posted_ms: now,
        ..m.clone()
    })
}

/// The messages recorded for request `request_id`, oldest first.
pub fn messages(db: &mut dyn TelegramReads, request_id: &str) -> Result<Vec<TelegramMessage>> {
    db.telegram_messages_of_request(request_id)
}

/// The message delivery `delivery_id` sent to chat `chat_id`, if any.
pub fn message_of_delivery(
    db: &mut dyn TelegramReads,
    delivery_id: &str,
    chat_id: i64,
) -> Result<Option<TelegramMessage>> {
    db.telegram_message_of_delivery(delivery_id, chat_id)
}

-- dshq schema v19: the Telegram channel's messages. One row per message the sender sent:
-- a delivery sends one to each chat of its context (the delivery and the chat are the key,
-- so a delivery sent again after a crash finds its message and sends no second one), with
-- the message id that `editMessageText` needs when the request ends and the request's
-- digest when it was sent, which a press of its buttons is judged against. Bookkeeping of
-- the sender, not part of the record: no event, no chain.
CREATE TABLE telegram_messages (
    delivery_id TEXT NOT NULL,
    chat_id     INTEGER NOT NULL,
    message_id  INTEGER NOT NULL,
    request_id  TEXT NOT NULL,
    digest      TEXT NOT NULL CHECK (length(digest) > 0),
    posted_ms   INTEGER NOT NULL,
    PRIMARY KEY (delivery_id, chat_id)
);
CREATE INDEX telegram_messages_by_request ON telegram_messages (request_id, posted_ms);

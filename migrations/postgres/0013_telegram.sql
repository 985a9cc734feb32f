-- dshq PostgreSQL schema v13, as SQLite's migration 0019: the Telegram channel's messages,
-- one per delivery and chat (the key), with the message id `editMessageText` needs and
-- the request's digest when it was sent.
CREATE TABLE telegram_messages (
    delivery_id TEXT NOT NULL,
    chat_id     BIGINT NOT NULL,
    message_id  BIGINT NOT NULL,
    request_id  TEXT NOT NULL,
    digest      TEXT NOT NULL CHECK (length(digest) > 0),
    posted_ms   BIGINT NOT NULL,
    PRIMARY KEY (delivery_id, chat_id)
);
CREATE INDEX telegram_messages_by_request ON telegram_messages (request_id, posted_ms);

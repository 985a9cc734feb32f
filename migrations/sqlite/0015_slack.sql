-- dshq schema v15 (issue 29, the Slack channel): the messages the Slack sender posted.
-- One row per delivery that posted a message (its delivery id is the key: a delivery sent
-- again after a crash finds its message here and does not post a second one), with the
-- Slack channel and the message's `ts`, which `chat.update` needs to change the message
-- when the request ends. Bookkeeping of the sender, not part of the record: no event, no
-- chain.
CREATE TABLE slack_messages (
    delivery_id TEXT PRIMARY KEY,
    request_id  TEXT NOT NULL,
    channel     TEXT NOT NULL CHECK (length(channel) > 0),
    ts          TEXT NOT NULL CHECK (length(ts) > 0),
    posted_ms   INTEGER NOT NULL
);
CREATE INDEX slack_messages_by_request ON slack_messages (request_id, posted_ms);

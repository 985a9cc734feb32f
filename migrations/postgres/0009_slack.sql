-- dshq PostgreSQL schema v9 (issue 29, the Slack channel), as SQLite's migration 0015: the
-- messages the Slack sender posted, one per delivery (its key), with the Slack channel and
-- the message's `ts` that `chat.update` needs when the request ends.
CREATE TABLE slack_messages (
    delivery_id TEXT PRIMARY KEY,
    request_id  TEXT NOT NULL,
    channel     TEXT NOT NULL CHECK (length(channel) > 0),
    ts          TEXT NOT NULL CHECK (length(ts) > 0),
    posted_ms   BIGINT NOT NULL
);
CREATE INDEX slack_messages_by_request ON slack_messages (request_id, posted_ms);

-- dshq schema v17: the Web Push channel.
--
-- A delivery row (and a context's recorded channels) may name the channels `push`, and
-- the chat channels still to come, `telegram` and `teams`, so adding those needs no
-- rebuild again. SQLite cannot change a column's CHECK in place: both tables are rebuilt,
-- their rows copied as they are, their indexes made again.
CREATE TABLE deliveries_v17 (
    id           TEXT PRIMARY KEY,
    request_id   TEXT NOT NULL,
    context      TEXT NOT NULL,
    kind         TEXT NOT NULL,
    body         TEXT NOT NULL,
    created_ms   INTEGER NOT NULL,
    attempts     INTEGER NOT NULL DEFAULT 0,
    next_ms      INTEGER NOT NULL,
    delivered_ms INTEGER,
    last_error   TEXT,
    channel      TEXT NOT NULL DEFAULT 'webhook'
        CHECK (channel IN ('webhook', 'email', 'slack', 'push', 'telegram', 'teams'))
);
INSERT INTO deliveries_v17 (id, request_id, context, kind, body, created_ms, attempts,
                            next_ms, delivered_ms, last_error, channel)
    SELECT id, request_id, context, kind, body, created_ms, attempts, next_ms, delivered_ms,
           last_error, channel FROM deliveries;
DROP TABLE deliveries;
ALTER TABLE deliveries_v17 RENAME TO deliveries;
CREATE INDEX deliveries_due ON deliveries (next_ms) WHERE delivered_ms IS NULL;
CREATE INDEX deliveries_request ON deliveries (request_id, created_ms);

CREATE TABLE delivery_channels_v17 (
    context     TEXT NOT NULL,
    channel     TEXT NOT NULL
        CHECK (channel IN ('webhook', 'email', 'slack', 'push', 'telegram', 'teams')),
    PRIMARY KEY (context, channel)
);
INSERT INTO delivery_channels_v17 (context, channel) SELECT context, channel FROM delivery_channels;
DROP TABLE delivery_channels;
ALTER TABLE delivery_channels_v17 RENAME TO delivery_channels;

-- The devices reviewers subscribed from the page: one row per push endpoint (a device
-- subscribed again replaces its row), with the web identity and person it was subscribed
-- by and the keys its messages are encrypted to (RFC 8291). The channel's bookkeeping,
-- not part of the record: no event, no chain.
CREATE TABLE push_subscriptions (
    endpoint    TEXT PRIMARY KEY CHECK (length(endpoint) > 0),
    web_name    TEXT NOT NULL CHECK (length(web_name) > 0),
    person      TEXT NOT NULL CHECK (length(person) > 0),
    p256dh      TEXT NOT NULL CHECK (length(p256dh) > 0),
    auth        TEXT NOT NULL CHECK (length(auth) > 0),
    created_ms  INTEGER NOT NULL,
    expires_ms  INTEGER
);

-- dshq PostgreSQL schema v11, as SQLite's migration 0017: a delivery row (and a context's
-- recorded channels) may name `push`, `telegram` and `teams`; the devices reviewers
-- subscribed for Web Push, one row per endpoint.
ALTER TABLE deliveries DROP CONSTRAINT deliveries_channel_check;
ALTER TABLE deliveries ADD CONSTRAINT deliveries_channel_check
    CHECK (channel IN ('webhook', 'email', 'slack', 'push', 'telegram', 'teams'));
ALTER TABLE delivery_channels DROP CONSTRAINT delivery_channels_channel_check;
ALTER TABLE delivery_channels ADD CONSTRAINT delivery_channels_channel_check
    CHECK (channel IN ('webhook', 'email', 'slack', 'push', 'telegram', 'teams'));

CREATE TABLE push_subscriptions (
    endpoint    TEXT PRIMARY KEY CHECK (length(endpoint) > 0),
    web_name    TEXT NOT NULL CHECK (length(web_name) > 0),
    person      TEXT NOT NULL CHECK (length(person) > 0),
    p256dh      TEXT NOT NULL CHECK (length(p256dh) > 0),
    auth        TEXT NOT NULL CHECK (length(auth) > 0),
    created_ms  BIGINT NOT NULL,
    expires_ms  BIGINT
);

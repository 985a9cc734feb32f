-- dshq PostgreSQL schema v7 (issue 29, channels), as SQLite's migration 0013: a delivery
-- row names its channel, one row per channel of an event; `delivery_contexts` becomes
-- `delivery_channels` (context, channel). What was recorded before were webhooks.
ALTER TABLE deliveries ADD COLUMN channel TEXT NOT NULL DEFAULT 'webhook'
    CHECK (channel IN ('webhook', 'email', 'slack'));

CREATE TABLE delivery_channels (
    context     TEXT NOT NULL,
    channel     TEXT NOT NULL CHECK (channel IN ('webhook', 'email', 'slack')),
    PRIMARY KEY (context, channel)
);
INSERT INTO delivery_channels (context, channel) SELECT context, 'webhook' FROM delivery_contexts;
DROP TABLE delivery_contexts;

-- dshq schema v13 (issue 29, channels): a delivery row names its channel (`webhook`,
-- `email`, `slack`), so an event that goes out on several channels has one row per
-- channel, each with its own id, attempts and retry state. Rows written before this
-- migration were webhooks.
--
-- `delivery_contexts` becomes `delivery_channels`: which channels some daemon sends for
-- each context (a daemon with channels fills it at start). The contexts recorded so far
-- sent webhooks.
ALTER TABLE deliveries ADD COLUMN channel TEXT NOT NULL DEFAULT 'webhook'
    CHECK (channel IN ('webhook', 'email', 'slack'));

CREATE TABLE delivery_channels (
    context     TEXT NOT NULL,
    channel     TEXT NOT NULL CHECK (channel IN ('webhook', 'email', 'slack')),
    PRIMARY KEY (context, channel)
);
INSERT INTO delivery_channels (context, channel) SELECT context, 'webhook' FROM delivery_contexts;
DROP TABLE delivery_contexts;

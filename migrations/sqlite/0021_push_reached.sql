-- dshq schema v19: the devices a Web Push delivery reached.
--
-- One row per delivery and device (the subscription's endpoint) whose push service took
-- the message, so a delivery retried because another device failed goes only to the
-- devices not yet reached. The sender's bookkeeping, not part of the record: no event, no
-- chain; pruned with the request once its delivery is gone.
CREATE TABLE push_reached (
    delivery_id TEXT NOT NULL,
    endpoint    TEXT NOT NULL CHECK (length(endpoint) > 0),
    request_id  TEXT NOT NULL,
    reached_ms  INTEGER NOT NULL,
    PRIMARY KEY (delivery_id, endpoint)
);
CREATE INDEX push_reached_by_request ON push_reached (request_id);

-- dshq PostgreSQL schema v13, as SQLite's migration 0019: the devices a Web Push
-- delivery reached, one row per delivery and endpoint, so a retry goes only to the others.
CREATE TABLE push_reached (
    delivery_id TEXT NOT NULL,
    endpoint    TEXT NOT NULL CHECK (length(endpoint) > 0),
    request_id  TEXT NOT NULL,
    reached_ms  BIGINT NOT NULL,
    PRIMARY KEY (delivery_id, endpoint)
);
CREATE INDEX push_reached_by_request ON push_reached (request_id);

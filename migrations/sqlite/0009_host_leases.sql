-- dshq schema v9 (issue 23, a restart must not lock reviewers out): the host that holds a
-- provider lease for its web page and HTTP API is recorded with it.
--
-- `host_id` is the holding host's stable identity (its root's origin, the 32 hex digits of
-- the `origin` file), so that the same host, started again after a crash, recognises the
-- lease of its earlier life and ends it at start (its claims go back to pending) instead of
-- waiting out the ttl behind DUPLICATE_PROVIDER. `host_label` (host name and root path) and
-- `host_idle_ms` (its --web-idle) are for messages: `dshq answer` names who holds the
-- context and when it is released. All three are NULL on every other lease.
ALTER TABLE leases ADD COLUMN host_id TEXT;
ALTER TABLE leases ADD COLUMN host_label TEXT;
ALTER TABLE leases ADD COLUMN host_idle_ms INTEGER;

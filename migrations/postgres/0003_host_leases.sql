-- dshq PostgreSQL schema v3 (issue 23): the host that holds a provider lease for its web
-- page and HTTP API is recorded with it, as SQLite's migration 0009. `host_id` is the
-- holding host's root origin: at start a host ends the unended leases carrying its own
-- origin (those of its earlier life) and no other; every host sharing the store has its
-- own root, so its own origin, and never takes over another's lease. `host_label` and
-- `host_idle_ms` are for messages. NULL on every other lease.
ALTER TABLE leases ADD COLUMN host_id TEXT;
ALTER TABLE leases ADD COLUMN host_label TEXT;
ALTER TABLE leases ADD COLUMN host_idle_ms BIGINT;

-- dshq schema v7 (issue 17, performance): fewer index writes per accepted request.
--
-- One id index instead of two. `requests_id` (unique, accepted requests only) and
-- `requests_id_any` (every row, rejections included) both held every accepted request's
-- id. One unique index on the id and a second key that is 0 for every accepted request and
-- the row's seq for a rejection serves both: at most one accepted request per id (its key
-- is (id, 0)), any number of rejections, and every lookup by id (accepted, rejected or
-- either) reads its range.
DROP INDEX requests_id;
DROP INDEX requests_id_any;
CREATE UNIQUE INDEX requests_id ON requests (id, (CASE WHEN status = 'rejected' THEN seq ELSE 0 END));

-- History by agent (`agent_id = ?`) never reads a request without an agent: those are left
-- out of the index instead of filling it with NULL keys.
DROP INDEX requests_agent;
CREATE INDEX requests_agent ON requests (agent_id, created_ms) WHERE agent_id IS NOT NULL;

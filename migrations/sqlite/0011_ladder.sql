-- dshq schema v11 (issue 29, the deadline ladder): what a request's ladder resolved to at
-- acceptance, how far it has climbed, when its next rung falls due, and who decided a
-- request answered on expiry.
--
-- `ladder` is the asker's `ladder` resolved to absolute times (JSON, NULL without one):
-- what was asked, so it never changes. `ladder_done` counts the rungs that ran (each with
-- its event: `reminded`, `escalated`, `expired`). `ladder_due_ms` is bookkeeping, as
-- `outbox_pending` is: when the next rung falls due (NULL when none is left), read by the
-- sweep and by the daemon's next wake-up through its partial index. `decided_by` is
-- 'policy' on a request answered by the asker's declared default on expiry.
--
-- An escalation with `escalateTo` moves an open request to another context, so `context`
-- is guarded apart: it may change while the request is open, never once it is final.
ALTER TABLE requests ADD COLUMN ladder TEXT;
ALTER TABLE requests ADD COLUMN ladder_done INTEGER NOT NULL DEFAULT 0;
ALTER TABLE requests ADD COLUMN ladder_due_ms INTEGER;
ALTER TABLE requests ADD COLUMN decided_by TEXT;
CREATE INDEX requests_ladder_due ON requests (ladder_due_ms)
    WHERE status IN ('pending', 'claimed') AND ladder_due_ms IS NOT NULL;

-- The `expired` status ("nobody answered", ASK_EXPIRED). SQLite cannot alter a CHECK
-- constraint; its documented way to loosen one in place (ALTER TABLE, "making other kinds
-- of table schema changes") is to edit the table's text in the schema, which is done here
-- after the columns were added (ADD COLUMN edits the same text, and changes the schema
-- cookie, so other connections read the new text), and read back with RESET. Every row
-- stored so far satisfies the wider set.
PRAGMA writable_schema = ON;
UPDATE sqlite_schema
   SET sql = replace(sql, '''aborted'', ''rejected''))', '''aborted'', ''rejected'', ''expired''))')
 WHERE type = 'table' AND name = 'requests';
PRAGMA writable_schema = RESET;

DROP TRIGGER requests_record_fixed;
DROP TRIGGER requests_final_fixed;

CREATE TRIGGER requests_record_fixed
BEFORE UPDATE OF seq, rowid, oid, _rowid_, id, agent_id, agent_instance,
                 agent_lineage, body, source, require_provider, deadline_ms, created_ms, ladder
ON requests
WHEN NEW.seq IS NOT OLD.seq OR NEW.id IS NOT OLD.id
  OR NEW.agent_id IS NOT OLD.agent_id OR NEW.agent_instance IS NOT OLD.agent_instance
  OR NEW.agent_lineage IS NOT OLD.agent_lineage OR NEW.body IS NOT OLD.body
  OR NEW.source IS NOT OLD.source OR NEW.require_provider IS NOT OLD.require_provider
  OR NEW.deadline_ms IS NOT OLD.deadline_ms OR NEW.created_ms IS NOT OLD.created_ms
  OR NEW.ladder IS NOT OLD.ladder
BEGIN
    SELECT RAISE(ABORT, 'requests are a record: what was asked, and a final request, cannot change');
END;

CREATE TRIGGER requests_final_fixed
BEFORE UPDATE OF context, status, claimed_lease, claimed_ms, finished_ms, answer, decision,
                 provider, error_code, error_message, ladder_done, decided_by ON requests
WHEN OLD.status NOT IN ('pending', 'claimed') AND (
      NEW.context IS NOT OLD.context
      OR NEW.status IS NOT OLD.status OR NEW.claimed_lease IS NOT OLD.claimed_lease
      OR NEW.claimed_ms IS NOT OLD.claimed_ms OR NEW.finished_ms IS NOT OLD.finished_ms
      OR NEW.answer IS NOT OLD.answer OR NEW.decision IS NOT OLD.decision
      OR NEW.provider IS NOT OLD.provider OR NEW.error_code IS NOT OLD.error_code
      OR NEW.error_message IS NOT OLD.error_message
      OR NEW.ladder_done IS NOT OLD.ladder_done OR NEW.decided_by IS NOT OLD.decided_by)
BEGIN
    SELECT RAISE(ABORT, 'requests are a record: what was asked, and a final request, cannot change');
END;

-- The deliveries outbox (issue 29): one row per notification, written in the transaction of
-- the event that causes it (accepted, claimed, reminded, escalated, answered, expired,
-- cancelled, aborted), only for a context some daemon sends deliveries for
-- (`delivery_contexts`, which a daemon with channels fills at start). `id` is the stable
-- delivery id (the `webhook-id` a receiver drops duplicates by); `body` the JSON sent;
-- `attempts`, `next_ms`, `last_error` the retry state; `delivered_ms` set after a 2xx.
CREATE TABLE delivery_contexts (
    context     TEXT PRIMARY KEY
);
CREATE TABLE deliveries (
    id           TEXT PRIMARY KEY,
    request_id   TEXT NOT NULL,
    context      TEXT NOT NULL,
    kind         TEXT NOT NULL,
    body         TEXT NOT NULL,
    created_ms   INTEGER NOT NULL,
    attempts     INTEGER NOT NULL DEFAULT 0,
    next_ms      INTEGER NOT NULL,
    delivered_ms INTEGER,
    last_error   TEXT
);
CREATE INDEX deliveries_due ON deliveries (next_ms) WHERE delivered_ms IS NULL;
CREATE INDEX deliveries_request ON deliveries (request_id, created_ms);

-- Ladder policies per context (issue 29): the operator's, written by a daemon started with
-- `--context-ladder` (it replaces the table with its configuration), read at acceptance,
-- where the asker's own ladder wins field by field. `ladder` is the policy as JSON.
CREATE TABLE context_ladders (
    context     TEXT PRIMARY KEY,
    ladder      TEXT NOT NULL
);

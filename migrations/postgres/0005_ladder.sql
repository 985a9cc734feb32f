-- dshq PostgreSQL schema v5 (issue 29, the deadline ladder), as SQLite's migration 0011:
-- the resolved ladder (what was asked: fixed), the rungs that ran, when the next one falls
-- due (bookkeeping, with its partial index), who decided a request answered on expiry,
-- the `expired` status, and `context` free to change while the request is open (an
-- escalation moves it), never once it is final.
ALTER TABLE requests ADD COLUMN ladder TEXT;
ALTER TABLE requests ADD COLUMN ladder_done BIGINT NOT NULL DEFAULT 0;
ALTER TABLE requests ADD COLUMN ladder_due_ms BIGINT;
ALTER TABLE requests ADD COLUMN decided_by TEXT CHECK (decided_by IN ('policy'));
CREATE INDEX requests_ladder_due ON requests (ladder_due_ms)
    WHERE status IN ('pending', 'claimed') AND ladder_due_ms IS NOT NULL;

ALTER TABLE requests DROP CONSTRAINT requests_status_check;
ALTER TABLE requests ADD CONSTRAINT requests_status_check
    CHECK (status IN ('pending', 'claimed', 'answered', 'cancelled', 'aborted', 'rejected', 'expired'));

CREATE OR REPLACE FUNCTION dshq_requests_record_fixed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        RAISE EXCEPTION 'requests are a record: rows cannot be deleted';
    END IF;
    IF NEW.seq IS DISTINCT FROM OLD.seq OR NEW.id IS DISTINCT FROM OLD.id
       OR NEW.agent_id IS DISTINCT FROM OLD.agent_id
       OR NEW.agent_instance IS DISTINCT FROM OLD.agent_instance
       OR NEW.agent_lineage IS DISTINCT FROM OLD.agent_lineage
       OR NEW.body IS DISTINCT FROM OLD.body OR NEW.source IS DISTINCT FROM OLD.source
       OR NEW.require_provider IS DISTINCT FROM OLD.require_provider
       OR NEW.deadline_ms IS DISTINCT FROM OLD.deadline_ms
       OR NEW.created_ms IS DISTINCT FROM OLD.created_ms
       OR NEW.origin IS DISTINCT FROM OLD.origin
       OR NEW.ladder IS DISTINCT FROM OLD.ladder
       OR (OLD.status NOT IN ('pending', 'claimed') AND (
           NEW.context IS DISTINCT FROM OLD.context
           OR NEW.status IS DISTINCT FROM OLD.status
           OR NEW.claimed_lease IS DISTINCT FROM OLD.claimed_lease
           OR NEW.claimed_ms IS DISTINCT FROM OLD.claimed_ms
           OR NEW.finished_ms IS DISTINCT FROM OLD.finished_ms
           OR NEW.answer IS DISTINCT FROM OLD.answer
           OR NEW.decision IS DISTINCT FROM OLD.decision
           OR NEW.provider IS DISTINCT FROM OLD.provider
           OR NEW.error_code IS DISTINCT FROM OLD.error_code
           OR NEW.error_message IS DISTINCT FROM OLD.error_message
           OR NEW.ladder_done IS DISTINCT FROM OLD.ladder_done
           OR NEW.decided_by IS DISTINCT FROM OLD.decided_by)) THEN
        RAISE EXCEPTION 'requests are a record: what was asked, and a final request, cannot change';
    END IF;
    RETURN NEW;
END;
$$;

-- The deliveries outbox, as SQLite's migration 0011.
CREATE TABLE delivery_contexts (
    context     TEXT PRIMARY KEY
);
CREATE TABLE deliveries (
    seq          BIGINT GENERATED ALWAYS AS IDENTITY, -- write order (SQLite's rowid)
    id           TEXT PRIMARY KEY,
    request_id   TEXT NOT NULL,
    context      TEXT NOT NULL,
    kind         TEXT NOT NULL,
    body         TEXT NOT NULL,
    created_ms   BIGINT NOT NULL,
    attempts     BIGINT NOT NULL DEFAULT 0,
    next_ms      BIGINT NOT NULL,
    delivered_ms BIGINT,
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

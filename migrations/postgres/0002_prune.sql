-- dshq PostgreSQL schema v2 (prune, issue 17): retention, as SQLite's migration 0006.
-- `dshq prune` removes final requests finished before a cut, with their questions and the
-- events of the removed prefix of the log, after exporting them; a `pruned` event then
-- carries the head (seq, hash) of the removed prefix, so `dshq audit verify` walks the
-- chain from there.
--
-- The prune transaction (under the write lock) inserts one row here, deletes, and removes
-- the row again before it commits. While it is set the delete triggers below let exactly
-- this through: events up to `events_upto`, and final requests (and their questions)
-- finished before `before_ms`. Nothing else: pending and claimed requests are refused by
-- the database itself, and every UPDATE stays refused as in 0001. An uncommitted row is
-- seen by no other transaction, and a deferred constraint trigger refuses to commit a
-- transaction that leaves the row set, so the guard cannot be left committed (short of
-- disabling triggers, which a superuser can: `audit verify` also fails on a committed
-- guard row, as on SQLite).
CREATE TABLE prune_guard (
    events_upto BIGINT NOT NULL,
    before_ms   BIGINT NOT NULL
);

CREATE FUNCTION dshq_prune_guard_cleared() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM prune_guard) THEN
        RAISE EXCEPTION 'the prune guard must be removed before the commit';
    END IF;
    RETURN NULL;
END;
$$;
CREATE CONSTRAINT TRIGGER prune_guard_cleared AFTER INSERT ON prune_guard
    DEFERRABLE INITIALLY DEFERRED
    FOR EACH ROW EXECUTE FUNCTION dshq_prune_guard_cleared();

CREATE FUNCTION dshq_events_prune_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.seq <= (SELECT COALESCE(MAX(events_upto), 0) FROM prune_guard) THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'events are append-only';
END;
$$;
DROP TRIGGER events_no_delete ON events;
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
    FOR EACH ROW EXECUTE FUNCTION dshq_events_prune_only();

CREATE FUNCTION dshq_requests_prune_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM prune_guard)
       AND OLD.status NOT IN ('pending', 'claimed') AND OLD.finished_ms IS NOT NULL
       AND OLD.finished_ms < (SELECT MIN(before_ms) FROM prune_guard) THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'requests are a record: rows cannot be deleted';
END;
$$;
DROP TRIGGER requests_no_delete ON requests;
CREATE TRIGGER requests_no_delete BEFORE DELETE ON requests
    FOR EACH ROW EXECUTE FUNCTION dshq_requests_prune_only();

CREATE FUNCTION dshq_questions_prune_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF EXISTS (SELECT 1 FROM prune_guard)
       AND NOT EXISTS (SELECT 1 FROM requests WHERE seq = OLD.request_seq
                       AND status IN ('pending', 'claimed')) THEN
        RETURN OLD;
    END IF;
    RAISE EXCEPTION 'questions are a record: rows cannot be deleted';
END;
$$;
DROP TRIGGER questions_no_delete ON questions;
CREATE TRIGGER questions_no_delete BEFORE DELETE ON questions
    FOR EACH ROW EXECUTE FUNCTION dshq_questions_prune_only();

-- The checkpoints, found without reading the log: verify starts its walk at the newest.
CREATE INDEX events_pruned ON events (seq) WHERE kind = 'pruned';

-- dshq schema (prune, issue 17): retention. `dshq prune` removes final requests finished
-- before a cut, with their questions and the events of the removed prefix of the log, after
-- exporting them; a `pruned` event then carries the head (seq, hash) of the removed prefix,
-- so `dshq audit verify` walks the chain from there.
--
-- NOTE for merging: named 0006 on the prune17 branch; renumber (rename the file and its
-- line in `MIGRATIONS`) after the ingest branch's own 0006 lands.
--
-- The prune transaction inserts one row here, deletes, and removes the row again before it
-- commits, so no other connection ever sees it set. While it is set the triggers below let
-- exactly this through: events up to `events_upto`, and final requests (and their
-- questions) finished before `before_ms`. Nothing else: pending and claimed requests are
-- refused by the database itself. Like every trigger this is no security boundary (a
-- connection can insert the row too): the deletion is found by `audit verify` (a chain
-- with no keyed checkpoint for its missing prefix, rows removed without their events), and
-- verify also fails on a guard row left committed.
CREATE TABLE prune_guard (
    events_upto INTEGER NOT NULL,
    before_ms   INTEGER NOT NULL
);

DROP TRIGGER events_no_delete;
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
WHEN OLD.seq > (SELECT COALESCE(MAX(events_upto), 0) FROM prune_guard)
BEGIN
    SELECT RAISE(ABORT, 'events are append-only');
END;

DROP TRIGGER requests_no_delete;
CREATE TRIGGER requests_no_delete BEFORE DELETE ON requests
WHEN NOT EXISTS (SELECT 1 FROM prune_guard)
  OR OLD.status IN ('pending', 'claimed') OR OLD.finished_ms IS NULL
  OR OLD.finished_ms >= (SELECT MIN(before_ms) FROM prune_guard)
BEGIN
    SELECT RAISE(ABORT, 'requests are a record: rows cannot be deleted');
END;

DROP TRIGGER questions_no_delete;
CREATE TRIGGER questions_no_delete BEFORE DELETE ON questions
WHEN NOT EXISTS (SELECT 1 FROM prune_guard)
  OR (SELECT status IN ('pending', 'claimed') FROM requests WHERE seq = OLD.request_seq)
BEGIN
    SELECT RAISE(ABORT, 'questions are a record: rows cannot be deleted');
END;

-- The checkpoints, found without reading the log: verify starts its walk at the newest.
CREATE INDEX events_pruned ON events (seq) WHERE kind = 'pruned';

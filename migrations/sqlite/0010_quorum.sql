-- dshq schema v10 (issue 30, quorum): M-of-N approval of a request.
--
-- `requests.quorum` is the quorum a request is held to (JSON: approvals, group and its
-- members, the decline rule, who set it), fixed at acceptance and recorded in its
-- `accepted` event; NULL for a request without one, which behaves exactly as before.
-- `requests.approvers` is the JSON array of the reviewers whose votes made the answer, set
-- with the answer by the one write that meets the quorum (a guarded update, as any answer).
--
-- `votes` holds one row per reviewer and request (the primary key: the same reviewer twice
-- is counted once, whatever face or host it votes from); each row has its `voted` event.
-- A vote never changes, and goes only with its request when `dshq prune` removes it.
ALTER TABLE requests ADD COLUMN quorum TEXT;
ALTER TABLE requests ADD COLUMN approvers TEXT;

CREATE TABLE votes (
    request_seq INTEGER NOT NULL REFERENCES requests (seq),
    voter       TEXT NOT NULL,
    answer      TEXT NOT NULL,
    decision    TEXT CHECK (decision IN ('approved', 'declined')),
    lease_id    INTEGER,
    created_ms  INTEGER NOT NULL,
    PRIMARY KEY (request_seq, voter)
);

CREATE TRIGGER requests_quorum_fixed
BEFORE UPDATE OF quorum ON requests
WHEN NEW.quorum IS NOT OLD.quorum
BEGIN
    SELECT RAISE(ABORT, 'requests are a record: what was asked, and a final request, cannot change');
END;

CREATE TRIGGER requests_approvers_fixed
BEFORE UPDATE OF approvers ON requests
WHEN OLD.status NOT IN ('pending', 'claimed') AND NEW.approvers IS NOT OLD.approvers
BEGIN
    SELECT RAISE(ABORT, 'requests are a record: what was asked, and a final request, cannot change');
END;

CREATE TRIGGER votes_record_fixed
BEFORE UPDATE ON votes
BEGIN
    SELECT RAISE(ABORT, 'votes are a record: a vote cannot change');
END;

CREATE TRIGGER votes_no_delete BEFORE DELETE ON votes
WHEN NOT EXISTS (SELECT 1 FROM prune_guard)
BEGIN
    SELECT RAISE(ABORT, 'votes are a record: rows cannot be deleted');
END;

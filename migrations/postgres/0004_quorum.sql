-- dshq PostgreSQL schema v4 (issue 30, quorum), as SQLite's migration 0010.
--
-- `requests.quorum` is the quorum a request is held to (JSON), fixed at acceptance and
-- recorded in its `accepted` event; `requests.approvers` the JSON array of the reviewers
-- whose votes made the answer, set with the answer by the one write that meets the quorum.
--
-- `votes` holds one row per reviewer and request: writers run side by side here, and the
-- primary key with `INSERT ... ON CONFLICT DO NOTHING` counts a reviewer who votes twice
-- (from two faces or two hosts at once) exactly once. Which writer finalizes is decided by
-- the answer's guarded update (`WHERE status IN ('pending', 'claimed')`), so exactly one.
ALTER TABLE requests ADD COLUMN quorum TEXT;
ALTER TABLE requests ADD COLUMN approvers TEXT;

CREATE TABLE votes (
    request_seq BIGINT NOT NULL REFERENCES requests (seq) DEFERRABLE INITIALLY DEFERRED,
    voter       TEXT NOT NULL,
    answer      TEXT NOT NULL,
    decision    TEXT CHECK (decision IN ('approved', 'declined')),
    lease_id    BIGINT,
    created_ms  BIGINT NOT NULL,
    PRIMARY KEY (request_seq, voter)
);

CREATE FUNCTION dshq_requests_quorum_fixed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.quorum IS DISTINCT FROM OLD.quorum
       OR (OLD.status NOT IN ('pending', 'claimed')
           AND NEW.approvers IS DISTINCT FROM OLD.approvers) THEN
        RAISE EXCEPTION 'requests are a record: what was asked, and a final request, cannot change';
    END IF;
    RETURN NEW;
END;
$$;
CREATE TRIGGER requests_quorum_fixed BEFORE UPDATE ON requests
    FOR EACH ROW EXECUTE FUNCTION dshq_requests_quorum_fixed();

CREATE FUNCTION dshq_votes_record_fixed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'DELETE' THEN
        IF EXISTS (SELECT 1 FROM prune_guard) THEN
            RETURN OLD;
        END IF;
        RAISE EXCEPTION 'votes are a record: rows cannot be deleted';
    END IF;
    RAISE EXCEPTION 'votes are a record: a vote cannot change';
END;
$$;
CREATE TRIGGER votes_record_fixed BEFORE UPDATE OR DELETE ON votes
    FOR EACH ROW EXECUTE FUNCTION dshq_votes_record_fixed();

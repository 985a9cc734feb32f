-- dshq PostgreSQL schema v6 (issue 30, edit-then-approve): the edits an answer made, as
-- SQLite's migration 0012. `edits` is the JSON object the answer recorded, by question
-- id (proposal, approved text, unified diff), exactly as the `answered` event carries
-- them; NULL when the answer edited nothing.
ALTER TABLE requests ADD COLUMN edits TEXT;

-- A final request's edits never change, as its answer never does (a trigger of its own
-- beside `requests_record_fixed`).
CREATE FUNCTION dshq_requests_edits_fixed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF OLD.status NOT IN ('pending', 'claimed') AND NEW.edits IS DISTINCT FROM OLD.edits THEN
        RAISE EXCEPTION 'requests are a record: what was asked, and a final request, cannot change';
    END IF;
    RETURN NEW;
END;
$$;
CREATE TRIGGER requests_edits_fixed BEFORE UPDATE OF edits ON requests
    FOR EACH ROW EXECUTE FUNCTION dshq_requests_edits_fixed();

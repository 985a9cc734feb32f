-- dshq schema v12 (issue 30, edit-then-approve): the edits an answer made.
--
-- A reviewer may approve a question's proposal (a plan review's plan, or the `detail` of a
-- free-text question the asker made `editable`) as they edited it. `edits` is the JSON
-- object the answer recorded, by question id: the proposal, the approved text and the
-- unified diff between them, exactly as the `answered` event carries them (the record
-- check compares the two). NULL on every request whose answer edited nothing, and on
-- every request answered before this version.
ALTER TABLE requests ADD COLUMN edits TEXT;

-- A final request's edits never change, as its answer never does (schema v8's
-- `requests_final_fixed`, for this column: a trigger of its own, coded only into the
-- statements that set it).
CREATE TRIGGER requests_edits_fixed
BEFORE UPDATE OF edits ON requests
WHEN OLD.status NOT IN ('pending', 'claimed') AND NEW.edits IS NOT OLD.edits
BEGIN
    SELECT RAISE(ABORT, 'requests are a record: what was asked, and a final request, cannot change');
END;

-- Rejections looked up by their source (the file they came from), not by id: an input with
-- no id at all (a `notes.txt`, a bad abort name) has a NULL id, and the id index then
-- walked every earlier id-less rejection, so a flood of such files slowed down as it went.
CREATE INDEX requests_rejected_source ON requests (source, id) WHERE status = 'rejected';

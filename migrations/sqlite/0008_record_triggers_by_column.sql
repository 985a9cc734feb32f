-- dshq schema v8 (issue 17, the CLI's start-up): the record triggers of schema v3, split by
-- the columns they guard.
--
-- SQLite codes every BEFORE UPDATE trigger into each UPDATE statement it compiles, and each
-- dshq command is a new process that compiles its statements afresh: the v3 triggers (one
-- WHEN clause over every column of the row) were a third of what compiling `dshq answer`'s
-- updates cost. A trigger with `UPDATE OF column, ...` is coded only into statements that
-- set one of those columns, and a column a statement does not set cannot change, so the
-- split refuses exactly what the v3 triggers refused:
-- - what was asked never changes (coded into no statement dshq runs);
-- - a final request's outcome never changes (coded into the answer, claim and finish
--   updates, not into marking an outcome file written, which sets `outbox_pending` only);
-- - a question never changes, and its answer, once given, never changes.
DROP TRIGGER requests_record_fixed;
DROP TRIGGER questions_record_fixed;

-- `seq` is the table's rowid, which an UPDATE can also set as `rowid`, `oid` or `_rowid_`:
-- SQLite matches the names an UPDATE sets against this list as written, so the aliases are
-- listed too (it does not check a trigger's column names against the table).
CREATE TRIGGER requests_record_fixed
BEFORE UPDATE OF seq, rowid, oid, _rowid_, id, context, agent_id, agent_instance,
                 agent_lineage, body, source, require_provider, deadline_ms, created_ms
ON requests
WHEN NEW.seq IS NOT OLD.seq OR NEW.id IS NOT OLD.id OR NEW.context IS NOT OLD.context
  OR NEW.agent_id IS NOT OLD.agent_id OR NEW.agent_instance IS NOT OLD.agent_instance
  OR NEW.agent_lineage IS NOT OLD.agent_lineage OR NEW.body IS NOT OLD.body
  OR NEW.source IS NOT OLD.source OR NEW.require_provider IS NOT OLD.require_provider
  OR NEW.deadline_ms IS NOT OLD.deadline_ms OR NEW.created_ms IS NOT OLD.created_ms
BEGIN
    SELECT RAISE(ABORT, 'requests are a record: what was asked, and a final request, cannot change');
END;

CREATE TRIGGER requests_final_fixed
BEFORE UPDATE OF status, claimed_lease, claimed_ms, finished_ms, answer, decision, provider,
                 error_code, error_message ON requests
WHEN OLD.status NOT IN ('pending', 'claimed') AND (
      NEW.status IS NOT OLD.status OR NEW.claimed_lease IS NOT OLD.claimed_lease
      OR NEW.claimed_ms IS NOT OLD.claimed_ms OR NEW.finished_ms IS NOT OLD.finished_ms
      OR NEW.answer IS NOT OLD.answer OR NEW.decision IS NOT OLD.decision
      OR NEW.provider IS NOT OLD.provider OR NEW.error_code IS NOT OLD.error_code
      OR NEW.error_message IS NOT OLD.error_message)
BEGIN
    SELECT RAISE(ABORT, 'requests are a record: what was asked, and a final request, cannot change');
END;

CREATE TRIGGER questions_record_fixed
BEFORE UPDATE OF request_seq, idx, qid, question, header, detail, multi_select, intent_kind,
                 intent_approve, options ON questions
WHEN NEW.request_seq IS NOT OLD.request_seq OR NEW.idx IS NOT OLD.idx OR NEW.qid IS NOT OLD.qid
  OR NEW.question IS NOT OLD.question OR NEW.header IS NOT OLD.header
  OR NEW.detail IS NOT OLD.detail OR NEW.multi_select IS NOT OLD.multi_select
  OR NEW.intent_kind IS NOT OLD.intent_kind OR NEW.intent_approve IS NOT OLD.intent_approve
  OR NEW.options IS NOT OLD.options
BEGIN
    SELECT RAISE(ABORT, 'questions are a record: a question, and its answer once given, cannot change');
END;

CREATE TRIGGER questions_answer_fixed
BEFORE UPDATE OF selected, custom, decision ON questions
WHEN OLD.selected IS NOT NULL AND (NEW.selected IS NOT OLD.selected
      OR NEW.custom IS NOT OLD.custom OR NEW.decision IS NOT OLD.decision)
BEGIN
    SELECT RAISE(ABORT, 'questions are a record: a question, and its answer once given, cannot change');
END;

-- dshq schema v3: what was asked and what was answered cannot be changed in place.
-- The event log is the record (`dshq audit verify` checks these rows against it); these
-- triggers refuse the edits dshq itself never makes, so a careless or naive UPDATE fails
-- loudly instead of being found later. Someone who drops them is still found by the audit.

-- What was asked never changes; a final request changes only its outbox bookkeeping.
CREATE TRIGGER requests_record_fixed BEFORE UPDATE ON requests
WHEN NEW.seq IS NOT OLD.seq OR NEW.id IS NOT OLD.id OR NEW.context IS NOT OLD.context
  OR NEW.agent_id IS NOT OLD.agent_id OR NEW.agent_instance IS NOT OLD.agent_instance
  OR NEW.agent_lineage IS NOT OLD.agent_lineage OR NEW.body IS NOT OLD.body
  OR NEW.source IS NOT OLD.source OR NEW.require_provider IS NOT OLD.require_provider
  OR NEW.deadline_ms IS NOT OLD.deadline_ms OR NEW.created_ms IS NOT OLD.created_ms
  OR (OLD.status NOT IN ('pending', 'claimed') AND (
      NEW.status IS NOT OLD.status OR NEW.claimed_lease IS NOT OLD.claimed_lease
      OR NEW.claimed_ms IS NOT OLD.claimed_ms OR NEW.finished_ms IS NOT OLD.finished_ms
      OR NEW.answer IS NOT OLD.answer OR NEW.decision IS NOT OLD.decision
      OR NEW.provider IS NOT OLD.provider OR NEW.error_code IS NOT OLD.error_code
      OR NEW.error_message IS NOT OLD.error_message))
BEGIN
    SELECT RAISE(ABORT, 'requests are a record: what was asked, and a final request, cannot change');
END;
CREATE TRIGGER requests_no_delete BEFORE DELETE ON requests
BEGIN
    SELECT RAISE(ABORT, 'requests are a record: rows cannot be deleted');
END;

-- A question never changes; its answer is written once.
CREATE TRIGGER questions_record_fixed BEFORE UPDATE ON questions
WHEN NEW.request_seq IS NOT OLD.request_seq OR NEW.idx IS NOT OLD.idx OR NEW.qid IS NOT OLD.qid
  OR NEW.question IS NOT OLD.question OR NEW.header IS NOT OLD.header
  OR NEW.detail IS NOT OLD.detail OR NEW.multi_select IS NOT OLD.multi_select
  OR NEW.intent_kind IS NOT OLD.intent_kind OR NEW.intent_approve IS NOT OLD.intent_approve
  OR NEW.options IS NOT OLD.options
  OR (OLD.selected IS NOT NULL AND (NEW.selected IS NOT OLD.selected
      OR NEW.custom IS NOT OLD.custom OR NEW.decision IS NOT OLD.decision))
BEGIN
    SELECT RAISE(ABORT, 'questions are a record: a question, and its answer once given, cannot change');
END;
CREATE TRIGGER questions_no_delete BEFORE DELETE ON questions
BEGIN
    SELECT RAISE(ABORT, 'questions are a record: rows cannot be deleted');
END;

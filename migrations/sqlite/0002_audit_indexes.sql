-- dshq schema v2: indexes for `dshq stats` on large stores.
-- Plan-review decisions (approval rate) without scanning every question.
CREATE INDEX questions_decision ON questions (decision) WHERE decision IS NOT NULL;
-- Answer waits per context and provider, read from the index alone.
CREATE INDEX requests_answered_waits ON requests (created_ms, context, provider, finished_ms)
    WHERE status = 'answered';

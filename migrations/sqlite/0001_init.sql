-- dshq schema v1: requests and their questions, provider leases, the agent registry and
-- the append-only event log. Times are integer milliseconds since the Unix epoch (UTC).

-- One row per request, and one per input rejected at ingestion (status 'rejected').
CREATE TABLE requests (
    seq             INTEGER PRIMARY KEY,          -- insertion order; stable row handle
    id              TEXT,                         -- request id; NULL only for a rejected input with no usable id
    context         TEXT NOT NULL,
    status          TEXT NOT NULL CHECK (status IN ('pending', 'claimed', 'answered', 'cancelled', 'aborted', 'rejected')),
    agent_id        TEXT,                         -- the asking agent, if any
    agent_instance  TEXT,
    agent_lineage   TEXT,                         -- copied from the registry at acceptance, for the audit
    body            TEXT NOT NULL,                -- the request JSON as accepted (the raw input, for a rejection)
    source          TEXT NOT NULL,                -- 'cli' or 'inbox:FILENAME'
    require_provider INTEGER NOT NULL DEFAULT 0,
    deadline_ms     INTEGER,                      -- absolute deadline, from `deadline` or acceptance + `timeout`
    created_ms      INTEGER NOT NULL,
    claimed_lease   INTEGER REFERENCES leases (lease_id), -- the claiming lease; kept after the answer for the audit
    claimed_ms      INTEGER,
    finished_ms     INTEGER,
    answer          TEXT,                         -- the Answer JSON once answered
    decision        TEXT CHECK (decision IN ('approved', 'declined')),
    provider        TEXT,                         -- name of the provider that answered or cancelled
    error_code      TEXT,                         -- ASK_CANCELLED, ASK_ABORTED, or the rejection code
    error_message   TEXT,
    outbox_pending  INTEGER NOT NULL DEFAULT 0,   -- 1: final, outcome file not yet written
    CHECK ((status IN ('pending', 'claimed')) = (finished_ms IS NULL)),
    CHECK (status <> 'claimed' OR claimed_lease IS NOT NULL),
    CHECK (id IS NOT NULL OR status = 'rejected')
);
-- An id names one accepted request; rejections do not reserve it.
CREATE UNIQUE INDEX requests_id ON requests (id) WHERE status <> 'rejected';
CREATE INDEX requests_id_any ON requests (id);
CREATE INDEX requests_open ON requests (context, seq) WHERE status IN ('pending', 'claimed');
CREATE INDEX requests_deadline ON requests (deadline_ms) WHERE status IN ('pending', 'claimed') AND deadline_ms IS NOT NULL;
CREATE INDEX requests_claimed ON requests (claimed_lease) WHERE status = 'claimed';
CREATE INDEX requests_outbox ON requests (seq) WHERE outbox_pending = 1;
CREATE INDEX requests_created ON requests (created_ms);
CREATE INDEX requests_status ON requests (status, created_ms);
CREATE INDEX requests_agent ON requests (agent_id, created_ms);

-- The questions of each request, with the answer once given.
CREATE TABLE questions (
    request_seq     INTEGER NOT NULL REFERENCES requests (seq),
    idx             INTEGER NOT NULL,             -- position in the request
    qid             TEXT NOT NULL,
    question        TEXT NOT NULL,
    header          TEXT,
    detail          TEXT,
    multi_select    INTEGER NOT NULL,
    intent_kind     TEXT,
    intent_approve  TEXT,
    options         TEXT NOT NULL,                -- JSON array of {label, description?}
    selected        TEXT,                         -- JSON array of labels once answered
    custom          TEXT,
    decision        TEXT CHECK (decision IN ('approved', 'declined')),
    PRIMARY KEY (request_seq, idx)
) WITHOUT ROWID;

-- Provider leases: at most one live (ended_ms IS NULL) per context.
CREATE TABLE leases (
    lease_id        INTEGER PRIMARY KEY,
    context         TEXT NOT NULL,
    name            TEXT NOT NULL,
    generation      INTEGER NOT NULL,             -- 1, 2, 3... per context
    secret_sha256   BLOB NOT NULL,                -- the token's secret is never stored
    ttl_ms          INTEGER NOT NULL,
    created_ms      INTEGER NOT NULL,
    heartbeat_ms    INTEGER NOT NULL,
    expires_ms      INTEGER NOT NULL,
    ended_ms        INTEGER,
    end_reason      TEXT CHECK (end_reason IN ('released', 'expired')),
    CHECK ((ended_ms IS NULL) = (end_reason IS NULL))
);
CREATE UNIQUE INDEX leases_live ON leases (context) WHERE ended_ms IS NULL;
CREATE UNIQUE INDEX leases_generation ON leases (context, generation);
CREATE INDEX leases_expiry ON leases (expires_ms) WHERE ended_ms IS NULL;

-- The agent registry: who may ask. At most one live instance per agent id.
CREATE TABLE agents (
    agent_id        TEXT NOT NULL,
    instance        TEXT NOT NULL,
    owner_id        TEXT,                         -- the owning agent; owned agents may not ask
    owner_instance  TEXT,
    lineage         TEXT,                         -- audit only, never authority
    ttl_ms          INTEGER,                      -- NULL: lives until exit
    entered_ms      INTEGER NOT NULL,
    heartbeat_ms    INTEGER NOT NULL,
    expires_ms      INTEGER,
    ended_ms        INTEGER,
    end_reason      TEXT CHECK (end_reason IN ('exited', 'superseded', 'expired', 'owner-ended')),
    PRIMARY KEY (agent_id, instance),
    CHECK ((ended_ms IS NULL) = (end_reason IS NULL))
);
CREATE UNIQUE INDEX agents_live ON agents (agent_id) WHERE ended_ms IS NULL;
CREATE INDEX agents_owner ON agents (owner_id) WHERE ended_ms IS NULL;
CREATE INDEX agents_expiry ON agents (expires_ms) WHERE ended_ms IS NULL AND expires_ms IS NOT NULL;

-- The append-only event log. Each event hashes its content and the previous hash.
CREATE TABLE events (
    seq             INTEGER PRIMARY KEY,
    at_ms           INTEGER NOT NULL,
    kind            TEXT NOT NULL,
    request_id      TEXT,
    lease_id        INTEGER,
    agent_id        TEXT,
    actor           TEXT NOT NULL,
    data            TEXT NOT NULL,                -- JSON object
    prev_hash       TEXT NOT NULL,
    hash            TEXT NOT NULL
);
CREATE INDEX events_request ON events (request_id, seq) WHERE request_id IS NOT NULL;
CREATE TRIGGER events_no_update BEFORE UPDATE ON events
BEGIN
    SELECT RAISE(ABORT, 'events are append-only');
END;
CREATE TRIGGER events_no_delete BEFORE DELETE ON events
BEGIN
    SELECT RAISE(ABORT, 'events are append-only');
END;

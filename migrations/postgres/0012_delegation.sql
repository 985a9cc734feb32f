-- dshq PostgreSQL schema v12, as SQLite's migration 0018: the away notices set now (one per
-- person), and the person an answer or a vote was made for by their delegate.
CREATE TABLE delegations (
    person      TEXT PRIMARY KEY CHECK (length(person) > 0),
    delegate    TEXT NOT NULL CHECK (length(delegate) > 0 AND delegate <> person),
    until_ms    BIGINT NOT NULL,
    set_ms      BIGINT NOT NULL,
    set_by      TEXT NOT NULL
);
CREATE INDEX delegations_delegate ON delegations (delegate);

ALTER TABLE requests ADD COLUMN on_behalf_of TEXT;
ALTER TABLE votes ADD COLUMN for_person TEXT;

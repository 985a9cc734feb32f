-- dshq PostgreSQL schema v12, as SQLite's migration 0018: the quorum groups a sign-in
-- through the identity provider put each person in, replaced at each of their sign-ins
-- in the transaction of its `signed-in` event; a vote on a request whose group sign-ins
-- fill reads the voter's row.
CREATE TABLE sign_in_groups (
    person        TEXT NOT NULL CHECK (length(person) > 0),
    quorum_group  TEXT NOT NULL CHECK (length(quorum_group) > 0),
    subject       TEXT NOT NULL CHECK (length(subject) > 0),
    signed_in_ms  BIGINT NOT NULL,
    PRIMARY KEY (person, quorum_group)
);

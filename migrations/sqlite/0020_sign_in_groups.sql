-- dshq schema v18: the quorum groups a sign-in through the identity provider put each
-- person in. The claims at a person's latest sign-in decide them: each sign-in deletes the
-- person's rows and inserts one per group its rules named, in the transaction that
-- appends its `signed-in` event (which records the same groups, with the claims they
-- came from). A vote on a request whose group sign-ins fill reads the voter's row.
CREATE TABLE sign_in_groups (
    person        TEXT NOT NULL CHECK (length(person) > 0),
    quorum_group  TEXT NOT NULL CHECK (length(quorum_group) > 0),
    subject       TEXT NOT NULL CHECK (length(subject) > 0),
    signed_in_ms  INTEGER NOT NULL,
    PRIMARY KEY (person, quorum_group)
);

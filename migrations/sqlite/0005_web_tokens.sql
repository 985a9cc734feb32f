-- Web tokens (issue 14): who may call the HTTP API, with which role. The token itself is
-- never stored: `lookup` is its first 16 characters after the prefix (to find the row),
-- `hash` the SHA-256 of the whole token (compared in constant time by the caller).
CREATE TABLE web_tokens (
    name       TEXT PRIMARY KEY,
    role       TEXT NOT NULL CHECK (role IN ('asker', 'reviewer', 'auditor')),
    context    TEXT,
    lookup     TEXT NOT NULL UNIQUE,
    hash       BLOB NOT NULL,
    created_ms INTEGER NOT NULL,
    revoked_ms INTEGER
);

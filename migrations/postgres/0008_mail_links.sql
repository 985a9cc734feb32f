-- dshq PostgreSQL schema v8 (issue 29, mail), as SQLite's migration 0014: the mail links
-- through which an answer was sent, written in the answer's own transaction.
CREATE TABLE mail_links_used (
    link_id     TEXT PRIMARY KEY,
    request_id  TEXT NOT NULL,
    recipient   TEXT NOT NULL,
    used_ms     BIGINT NOT NULL
);

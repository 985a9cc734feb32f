-- dshq schema v14 (issue 29, mail): the mail links through which an answer was sent. A
-- link is a signed token (request, recipient, expiry, link id) the page checks with the
-- root's mail.key; a row here is written in the answer's own transaction, so a link
-- answers once (LINK_USED after).
CREATE TABLE mail_links_used (
    link_id     TEXT PRIMARY KEY,
    request_id  TEXT NOT NULL,
    recipient   TEXT NOT NULL,
    used_ms     INTEGER NOT NULL
);

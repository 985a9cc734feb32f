-- dshq schema v16: a vote names its person.
--
-- A quorum counts persons, not faces (docs/protocol.md, "People and identities"): the
-- identity that voted stays in `voter`, and `person` is the person it belonged to when the
-- vote was cast (the people directory's entry, else the name after the face). The unique
-- index makes one vote per person and request, whatever face or host it comes from, the
-- way the primary key made one vote per identity: a second vote of the same person through
-- another face inserts nothing and is refused (`ALREADY_VOTED`). A vote recorded before
-- this migration has no person (NULL, left out of the index): its identity stands for it.
ALTER TABLE votes ADD COLUMN person TEXT;
CREATE UNIQUE INDEX votes_one_per_person ON votes (request_seq, person) WHERE person IS NOT NULL;

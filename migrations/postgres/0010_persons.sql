-- dshq PostgreSQL schema v10, as SQLite's migration 0016: a vote names its person, and a
-- person votes once per request (the partial unique index; a vote recorded before this
-- migration has no person, and its identity stands for it). Two hosts taking one person's
-- votes from two faces at once serialize on the index: one row, and the other writer's
-- `ON CONFLICT DO NOTHING` inserts nothing.
ALTER TABLE votes ADD COLUMN person TEXT;
CREATE UNIQUE INDEX votes_one_per_person ON votes (request_seq, person) WHERE person IS NOT NULL;

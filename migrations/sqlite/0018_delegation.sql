-- dshq schema v18: delegation while a reviewer is away.
--
-- `delegations` holds the away notices set now: one per person (a new one replaces it),
-- the delegate who answers for them and when it ends. The rows are state; the record is
-- the chain (`away-set`, `away-cancelled`, `away-ended` events). A notice holds while the
-- time is before `until_ms`, checked where it is used; the sweep removes the ones past it.
CREATE TABLE delegations (
    person      TEXT PRIMARY KEY CHECK (length(person) > 0),
    delegate    TEXT NOT NULL CHECK (length(delegate) > 0 AND delegate <> person),
    until_ms    INTEGER NOT NULL,
    set_ms      INTEGER NOT NULL,
    set_by      TEXT NOT NULL
);
CREATE INDEX delegations_delegate ON delegations (delegate);

-- An answer (or vote) a delegate made "for" an away person names that person: the row's
-- `on_behalf_of` (the request's answer), the vote's `for_person`. NULL otherwise.
ALTER TABLE requests ADD COLUMN on_behalf_of TEXT;
ALTER TABLE votes ADD COLUMN for_person TEXT;

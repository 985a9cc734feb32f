//! The PostgreSQL backend: one queue shared by daemons and commands on many hosts.
//!
//! Everything `postgres` lives here and nowhere else. [`PgStore`] implements
//! [`crate::store::Store`] on one connection; the migrations are embedded from
//! `migrations/postgres/`. Chosen with `--store postgres://…` / `DSHQ_STORE`.
//!
//! Every write transaction first takes one transaction-scoped advisory lock: the writes
//! are serialised exactly as SQLite's `BEGIN IMMEDIATE` serialises them. The hash chain
//! needs that anyway (each event names the previous one, and every write appends one), and
//! it makes the rules the SQLite backend relies on (one winner among racing answers, one
//! live lease per context, positions that grow in commit order) hold across hosts. The
//! time of a write is read from the database's clock under that lock, so a host whose
//! clock is wrong can neither keep a dead lease nor expire a live one.

pub mod throwaway;

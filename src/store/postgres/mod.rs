//! The PostgreSQL backend: one queue shared by daemons and commands on many hosts.
//!
//! Everything `postgres` lives here and nowhere else. [`PgStore`] is the queue over
//! one connection; the migrations are embedded from
//! `migrations/postgres/`. Chosen with `--store postgres://…` / `DSHQ_STORE`.
//!
//! The client is the `postgres` crate (0.19): the blocking client built on
//! tokio-postgres. The store is synchronous and runs on a blocking (DB) thread;
//! tokio-postgres' own runtime stays hidden inside the client.
//!
//! Every write transaction first takes one transaction-scoped advisory lock: the writes
//! are serialised exactly as SQLite's `BEGIN IMMEDIATE` serialises them. The hash chain
//! needs that anyway (each event names the previous one, and every write appends one), and
//! it makes the rules the SQLite backend relies on (one winner among racing answers, one
//! live lease per context, positions that grow in commit order) hold across hosts. The
//! time of a write is read from the database's clock under that lock, so a host whose
//! clock is wrong can neither keep a dead lease nor expire a live one ([`PgStore`] never
//! reads the host's clock for a decision; `PgStore::with_clock` replaces the database's
//! clock for tests).
//!
//! One file per concern, named as in the SQLite backend, `driver/` and `queue/` (`answers`,
//! `requests`, `leases`, `agents`, `sweep`, `outbox`, `ladder`, `deliveries`, `slack`,
//! `links`, `tokens`, `feed`, `history`, `audit`, `prune`, `events`, `export`), each
//! implementing its concern's statements on this driver's transaction ([`tx`], whose new
//! rows [`session`] holds and sends in batches); [`conn`] connects, migrates and runs the
//! write transactions and views, `store` is the driver, [`tls`] the connection's TLS,
//! [`wakeups`] the LISTEN connection.
//!
//! Many hosts: each host's daemon connects with its own root dir and origin. A request
//! records the origin that asked (`requests.origin`) and only that origin's daemon writes
//! its outcome file; an answer given on any host commits and notifies (`NOTIFY dshq`), so
//! the asker's daemon runs its outbox at once. Every host of one store must hold the same
//! `audit.key` in its root (copy it from the first): the chain is keyed with it.

pub mod agents;
pub mod answers;
pub mod conn;
mod copy;
pub mod delegation;
pub mod deliveries;
pub mod events;
mod feed;
pub mod ladder;
pub mod leases;
pub mod links;
pub mod outbox;
pub mod push;
pub mod requests;
pub mod session;
pub mod sign_in;
pub mod slack;
mod store;
pub mod sweep;
pub mod telegram;
pub mod tls;
pub mod tx;

pub use conn::{Clock, MIGRATIONS};
pub use store::{PgDriver, PgStore};

// The audit side (P2): audit verify, history and stats, export and import, web tokens,
// the LISTEN connection.
pub mod audit;
pub mod export;
pub mod history;
pub mod prune;
pub mod tokens;
pub mod wakeups;

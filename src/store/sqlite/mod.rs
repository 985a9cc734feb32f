//! The SQLite backend: everything rusqlite lives here and nowhere else.
//!
//! [`SqliteDriver`] is the queue's driver on one connection (`store`), and
//! [`SqliteStore`] the queue over it. Below it, one file per concern, named as the
//! concern is in `driver/` and `queue/` (`answers`, `requests`, `leases`, `agents`,
//! `sweep`, `outbox`, `ladder`, `deliveries`, `slack`, `links`, `tokens`, `feed`,
//! `history`, `audit`, `prune`, `events`, `export`): each implements its concern's
//! statements on this driver's transaction context and read type ([`tx`]). [`conn`] opens
//! the connection (pragmas, migrations from `migrations/sqlite/`) and runs the write
//! transactions.
//!
//! Every write is a `BEGIN IMMEDIATE` transaction, so a CLI command and the daemon share
//! exactly the same logic and take SQLite's write lock up front (no deadlock-prone lock
//! upgrades). Each write transaction first sweeps expired leases, agents and overdue
//! requests: an expired lease is dead for every operation even before the daemon notices.

pub mod agents;
pub mod answers;
pub mod audit;
pub mod conn;
pub mod delegation;
pub mod deliveries;
pub mod events;
pub mod export;
mod feed;
pub mod history;
pub mod ladder;
pub mod leases;
pub mod links;
pub mod outbox;
pub mod prune;
pub mod push;
pub mod requests;
pub mod sign_in;
pub mod slack;
mod store;
pub mod sweep;
pub mod telegram;
pub mod tokens;
pub mod tx;

pub use conn::{
    lock_retry_pause, migrate, open, open_in_memory, open_read, schema_version, sweep,
    sweep_if_due, vacuum_into, view_at, write, write_clocked, write_no_sweep, write_now,
    BUSY_TIMEOUT, MIGRATIONS,
};
pub use store::{Clock, SqliteDriver, SqliteStore};

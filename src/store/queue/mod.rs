//! The queue's rules, written once over the drivers' statements ([`super::driver`]).
//!
//! Every rule of the queue (ask and the consequences of its checks, claim, answer,
//! cancel, abort, leases and fencing, agents, sweeps, the outbox's bookkeeping, prune, the
//! chain and its records) is a function here over `&mut dyn Statements` and the time of
//! the write; the backends call these functions inside their own transactions and hold no
//! rule of their own. What differs between SQLite and PostgreSQL (the SQL, locking, the
//! clock, the dialect's gaps) stays below, in each driver's implementation of the
//! statements. The conformance suite (`tests/store/`) runs every rule on both drivers.

pub mod agents;
pub mod answers;
pub mod audit;
pub mod delegation;
pub mod deliveries;
pub mod feed;
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
pub mod store;
pub mod sweep;
pub mod telegram;
pub mod tokens;

pub use store::Queue;

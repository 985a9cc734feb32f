//! The store. The SQLite backend lives in [`sqlite`]; this module re-exports it while the
//! seam is built.

pub mod sqlite;

pub use sqlite::{
    agents, audit, events, history, leases, migrate, open, open_in_memory, requests,
    schema_version, sweep, sweep_if_due, write, write_no_sweep, write_now, Swept, BUSY_TIMEOUT,
    MIGRATIONS,
};

//! Requests on PostgreSQL: accept, reject, claim, answer, cancel, abort, and the reads
//! behind `list`, `show`, `wait`, the feeds and the outbox — SQLite's `requests` module,
//! ported one to one (same split, same conditional updates).
//!
//! The lifecycle (spec §5) is enforced with conditional updates: every transition names
//! the states it leaves (`WHERE status IN ('pending', 'claimed')`) and the lease that may
//! make it, so a final state never changes and of two concurrent answers exactly one
//! matches a row (the write lock serialises them besides).
//!
//! One file per concern: `row` maps a row, [`reads`] reads (and the feeds), [`ask`]
//! accepts or rejects, [`provide`] holds the provider transitions and their replays,
//! [`timeouts`] the deadline sweep, [`outbox`] the outcome-file bookkeeping (filtered by
//! origin), [`due`] the next wake-up.

pub mod ask;
pub mod reads;
pub(super) mod row;

pub use super::answers::abort;
pub use super::outbox::{mark_outbox_written, outbox_pending};
pub use super::sweep::abort_overdue;
pub use super::sweep::next_due;
pub use ask::Rejection;
pub use reads::{get, get_any, list};
pub(crate) use row::all_oldest_first;

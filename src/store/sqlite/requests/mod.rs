//! Requests: accept, reject, claim, answer, cancel, abort, and the reads behind `list`,
//! `show`, `wait` and the outbox.
//!
//! The lifecycle (spec §5) is enforced here with conditional updates: every transition
//! names the states it leaves (`WHERE status IN ('pending', 'claimed')`) and the lease that
//! may make it, so a final state never changes and of two concurrent answers exactly one
//! matches a row.

//
//! One file per concern: `row` maps a row, [`reads`] reads, [`ask`] accepts or rejects,
//! [`provide`] holds the provider transitions and their replays, [`timeouts`] the deadline
//! sweep, [`outbox`] the outcome-file bookkeeping, [`due`] the next wake-up. None imports
//! this module back; leases return their claims themselves (`leases`), so `requests`
//! depends on `leases` and never the other way.

pub mod ask;
pub mod reads;
pub(super) mod row;

pub use super::answers::{abort, answer, answer_replayable, cancel, claim};
pub use super::outbox::{mark_outbox_written, outbox_pending};
pub use super::sweep::abort_overdue;
pub use super::sweep::next_due;
pub use crate::core::lifecycle::{RequestRow, Status};
pub use crate::store::types::{Accepted, ListFilter};
pub use ask::{accept, earlier_rejection, record_rejection, Rejection};
pub use reads::{get, get_any, list};

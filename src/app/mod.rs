//! The application layer: one function per use-case, typed input → one [`Store`]
//! transaction → typed result, plus what must follow the commit (publishing an outcome
//! file). Every face calls these: the CLI (args → use-case → render), the reviewer's
//! screen, the daemon's file loop, the hooks, the web API and page, MCP and the channels.
//! A rule such as "a lease must be live" or "an outcome is published after its commit" is
//! written once, here or in the store's queue, and every face gets it. A face calls the
//! store itself only where the store's method is the whole use-case (a read with no rule
//! around it); a function here that would only forward that one call is not written.
//!
//! Use-cases take `&mut Store` (the backend is chosen at run time) and the [`Root`]
//! where files are involved.
//!
//! [`Store`]: crate::store::Store
//! [`Root`]: crate::root::Root

pub mod agents;
pub mod ask;
pub mod audit;
pub mod backup;
pub mod copy;
pub mod delegation;
pub mod feed;
pub mod gauges;
pub mod key_file;
pub mod mail;
pub mod mail_key;
pub mod provide;
pub mod prune;
pub mod push_key;
pub mod receipts;
pub mod session;
pub mod sign_in;
pub mod sweep;
pub mod tokens;

use crate::files::outbox;
use crate::protocol::Outcome;
use crate::root::Root;
use crate::store::Store;

/// A request a use-case finished (answered, cancelled, aborted): its outcome, and why its
/// outcome file is still pending, if it is.
///
/// The commit is the answer: an outcome file that cannot be written afterwards (a full
/// disk, a broken `outbox/`) does not fail the use-case, because retrying would only meet
/// `REQUEST_FINAL`. The outcome stays marked pending in the store, and the daemon's next
/// pass (or the next flush) writes it.
#[derive(Debug, Clone, PartialEq)]
pub struct Finished {
    /// The outcome document.
    pub outcome: Outcome,
    /// Why its file could not be written now; `None` when it was (or no root was given).
    pub file_pending: Option<String>,
}

/// Write every outcome committed but not yet published, each with its signed receipt:
/// the one place the outbox is flushed.
pub fn publish_pending(store: &mut Store, root: &Root) -> crate::error::Result<outbox::Flushed> {
    outbox::flush(root, store, receipts::attach)
}

/// Publish what is pending after a commit that finished `outcome`.
fn publish(store: &mut Store, root: Option<&Root>, outcome: Outcome) -> Finished {
    let file_pending = root.and_then(|root| match publish_pending(store, root) {
        Ok(report) => report.failed_for(outcome.id()).map(|e| e.to_string()),
        Err(e) => Some(e.to_string()),
    });
    if let Some(e) = &file_pending {
        tracing::warn!(id = outcome.id(), error = %e, "outcome recorded; its file is pending");
    }
    Finished {
        outcome,
        file_pending,
    }
}

//! The statements of one concern. Asking: accepting a request, recording a rejection, deadlines, the outbox.
//!
//! See [`super`] for what a statement is and is not.

/// The statements this concern's queue rules need from a write transaction.
pub trait RequestStatements {}

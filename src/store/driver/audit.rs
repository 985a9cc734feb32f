//! The statements of one concern. The audit's reads: history, stats, web tokens.
//!
//! See [`super`] for what a statement is and is not.

/// The statements this concern's queue rules need from a write transaction.
pub trait AuditStatements {}

//! The statements of provider leases: one live lease per context, fenced by a token.
//!
//! See [`super`] for what a statement is and is not.

/// The reads of the lease rules that also run outside a write (authenticating a token).
pub trait LeaseReads {}

/// The statements the lease rules need from a write transaction.
pub trait LeaseStatements: LeaseReads {}

//! The statements of one concern. Retention: what a prune removes, and the record it leaves.
//!
//! See [`super`] for what a statement is and is not.

/// The statements this concern's queue rules need from a write transaction.
pub trait PruneStatements {}

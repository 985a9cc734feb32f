//! The dsh user-questions vocabulary and its rules. Pure: no I/O, no SQLite, no clap.
//!
//! This is where dsh's semantics live: what a request and an answer look like
//! ([`types`]), which requests may be asked ([`check`]), which answers are valid and what
//! they decide ([`answer`]), what a plan review offers ([`review`]), which request an outcome
//! answers ([`digest`]), and the stable
//! error codes ([`error`]).

pub mod answer;
pub mod check;
pub mod continued;
pub mod digest;
pub mod edit;
pub mod error;
pub mod ladder;
pub mod prepared;
pub mod receipt;
pub mod review;
pub mod syntax;
pub mod types;

pub use error::{Code, UserQuestionError};
pub use types::*;

#[cfg(test)]
mod tests;

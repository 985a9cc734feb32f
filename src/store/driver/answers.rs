//! The statements of one concern. Claims, answers, cancels and aborts of requests, and the answer files.
//!
//! See [`super`] for what a statement is and is not.

/// The statements this concern's queue rules need from a write transaction.
pub trait AnswerStatements {}

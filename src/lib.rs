//! dshq: a durable queue of human questions for batch and offline agents.
//!
//! It speaks the user-questions vocabulary of DeepSeek Harness (dsh): questions with stable
//! ids, options whose label is both what is shown and what is returned, multi-select, free
//! text, skip, a `plan-review` intent that names its approve label, one active answering
//! provider, and errors with stable codes. dshq keeps that seam in SQLite so askers and
//! answerers need not be alive at the same time.
//!
//! - [`protocol`]: the vocabulary and its rules; pure.
//! - [`store`]: SQLite, plain functions over a transaction.
//! - [`files`]: the directory API (inbox, outbox, answer files).
//! - [`daemon`]: the host loop.
//! - [`hooks`]: noticing new requests (`dshq watch`, the daemon's `--on-question`).
//! - [`text`]: the one sanitiser for asker-supplied text shown to a person.
//! - [`cli`]: the command line.

#![warn(missing_docs)]

pub mod app;
pub mod cli;
pub mod clock;
pub mod core;
pub mod daemon;
pub mod error;
pub mod files;
pub mod hooks;
pub mod output;
pub mod protocol;
pub mod root;
pub mod store;
pub mod text;

pub use error::{Error, Result};

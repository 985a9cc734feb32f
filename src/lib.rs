//! dshq: a durable queue of human questions for batch and offline agents.
//!
//! It speaks the user-questions vocabulary of DeepSeek Harness (dsh): questions with stable
//! ids, options whose label is both what is shown and what is returned, multi-select, free
//! text, skip, a `plan-review` intent that names its approve label, one active answering
//! provider, and errors with stable codes. dshq keeps that seam in a durable store (SQLite)
//! so askers and answerers need not be alive at the same time.
//!
//! One core, many faces (`docs/DESIGN.md`, "Layers"): a face calls a use-case in [`app`],
//! which makes one transaction on a [`store::Store`] and returns a typed result.
//!
//! - [`core`]: the lifecycle and the audit's vocabulary as types; pure.
//! - [`protocol`]: the vocabulary and its rules; pure.
//! - [`text`]: the one sanitiser for asker-supplied text shown to a person; pure.
//! - [`markdown`]: the one Markdown front end (a plan, for the page and the terminal); pure.
//! - [`app`]: the use-cases (ask, provide, session, agents, sweep, feed, audit).
//! - [`store`]: the seam, a trait with one method per transaction, and its SQLite backend
//!   ([`store::sqlite`], the only place the SQLite crate is used).
//! - [`files`]: the directory API (inbox, outbox, answer files).
//! - [`daemon`]: the host loop.
//! - [`hooks`]: the daemon's `--on-question` hook.
//! - [`cli`]: the command line: args → use-case → render.

#![warn(missing_docs)]

pub mod app;
pub mod cli;
pub mod clock;
pub mod config;
pub mod core;
pub mod daemon;
pub mod error;
pub mod files;
pub mod hooks;
pub mod host;
pub mod markdown;
pub mod mcp;
pub mod metrics;
pub mod output;
pub mod protocol;
pub mod root;
pub mod shutdown;
pub mod store;
pub mod text;
pub mod web;

pub use error::{Error, Result};

//! dshq: a durable queue of human questions for batch and offline agents.
//!
//! It speaks the user-questions vocabulary of DeepSeek Harness (dsh): questions with stable
//! ids, options whose label is both what is shown and what is returned, multi-select, free
//! text, skip, a `plan-review` intent that names its approve label, one active answering
//! provider, and errors with stable codes. dshq keeps that seam in a durable store (SQLite)
//! so askers and answerers need not be alive at the same time.
//!
//! One core, many faces (`docs/DESIGN.md`, "Layers"): a face parses its input, calls a
//! use-case in [`app`], which makes one transaction on a [`store::Store`], and renders the
//! typed result. From the bottom up:
//!
//! - [`core`], [`protocol`]: the lifecycle, the audit's vocabulary, the dsh vocabulary and
//!   its rules, as types; pure. [`clock`], [`text`] (the one sanitiser for asker-supplied
//!   text shown to a person) and [`markdown`] (the one Markdown front end) are pure too.
//! - [`store`]: the seam ([`store::Store`], one method per transaction); the queue's rules
//!   written once ([`store::queue`]) over the statements a driver offers
//!   ([`store::driver`]); the two drivers, [`store::sqlite`] (the default, bundled) and
//!   [`store::postgres`] (one store for many hosts), each the only place its client crate
//!   and its SQL live, one file per concern named alike in all four; the keyed event
//!   chain ([`store::chain`]).
//! - [`root`], [`config`]: where the state lives and the operator's settings.
//! - [`receipt`]: signed decision receipts (the key, the build, the signature, the
//!   offline check).
//! - [`files`]: the directory API (inbox, outbox, answer files), written atomically.
//! - [`disk`]: durable atomic writes and the one rule for key and secret files, under
//!   everything that writes a file or reads a secret.
//! - [`app`]: the use-cases every face calls (ask, provide, session, agents, sweep, feed,
//!   audit, prune, tokens, backup, mail links, receipts).
//! - [`views`]: the JSON views every JSON-speaking face shares (CLI `--json`, the API,
//!   hooks, MCP); [`output`]: terminal rendering, for the CLI only; [`html`]: the one rule
//!   for untrusted text in HTML (the page, the mail channel).
//! - [`daemon`] (the file loop), [`hooks`] (`--on-question`), [`metrics`], [`shutdown`].
//! - [`sys`]: the system calls that need `unsafe`, the only module allowed it.
//! - [`host`]: the services the HTTP faces share at run time (the database thread, the
//!   change broadcast, the shared provider lease, what tokens hold open, health, the
//!   accept loop) and every handler's plumbing.
//! - The faces: [`web`] (the JSON API, the event stream, the page), [`mcp`] (the MCP
//!   server over stdio and `/mcp`), [`channels`] (webhook, mail, Slack: sending, their
//!   rendering, their inbound routes), [`cli`] (args → use-case → render; the reviewer's
//!   screen in `cli::interactive`).
//! - [`serve`]: the composition root of `dshq daemon`, which builds the file loop, the
//!   channels' sender, the host and the faces' routes.
//!
//! `docs/ARCHITECTURE.md` is the map, and its floors are checked by the test suite.

#![warn(missing_docs)]
// Only `sys` may use `unsafe` (it allows it for itself): every other system call goes
// through rustix.
#![deny(unsafe_code)]

pub mod a2a;
pub mod app;
pub mod channels;
pub mod cli;
pub mod clock;
pub mod config;
pub mod core;
pub mod daemon;
pub mod disk;
pub mod error;
pub mod files;
pub mod hooks;
pub mod host;
pub mod html;
pub mod markdown;
pub mod mcp;
pub mod metrics;
pub mod net;
pub mod output;
pub mod protocol;
pub mod receipt;
pub mod root;
pub mod serve;
pub mod shutdown;
pub mod store;
pub mod sys;
pub mod text;
pub mod views;
pub mod web;

pub use error::{Error, Result};

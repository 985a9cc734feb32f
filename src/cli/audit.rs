//! `dshq audit verify`: check that the store is what its event log says happened, and
//! name the first thing that is not.
//!
//! In order: SQLite's own integrity check of the file; the event log's chain (keyed with
//! the root's `audit.key` from where the key file says); the head anchors (the root's
//! `audit.head`, and `--anchor FILE` when given: a log that no longer contains an anchored
//! head lost its newest events); then every request row and its questions against their
//! events (status, times, lease, provider, answer, decisions, error, and the request
//! content through its digest). All reads are one snapshot, taken after the anchors are
//! read, so a daemon writing meanwhile cannot make a sound store look broken.

use std::path::PathBuf;

use serde::Serialize;

use super::Ctx;
use crate::app;
use crate::error::Result;
use crate::output::emit;
use crate::store::{read_anchor, Anchor, ChainBreak, ANCHOR_FILE};

/// `dshq audit ...`
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Verify the store against its event log: the chain, the anchored head, and every
    /// request row against its events.
    Verify {
        /// A head written earlier (a copy of the root's `audit.head`, kept elsewhere):
        /// fail when the log no longer contains it.
        #[arg(long, value_name = "FILE")]
        anchor: Option<PathBuf>,
    },
}

/// The verification report.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct VerifyReport {
    /// Whether everything verified.
    pub ok: bool,
    /// Events read.
    pub events: i64,
    /// Request rows checked against their events.
    pub requests: i64,
    /// The newest event's seq and hash: keep them elsewhere to detect a truncated tail.
    pub head_seq: Option<i64>,
    /// The newest event's hash.
    pub head_hash: Option<String>,
    /// The first event whose hash is keyed (`audit.key`); `null` without a key.
    pub keyed_since: Option<i64>,
    /// The anchored heads the log was found to contain.
    pub anchors: Vec<Anchor>,
    /// The first break, if any.
    pub first_break: Option<ChainBreak>,
}

/// Run it.
pub fn run(ctx: &Ctx, c: Command) -> Result<()> {
    match c {
        Command::Verify { anchor } => verify(ctx, anchor),
    }
}

fn verify(ctx: &Ctx, anchor_arg: Option<PathBuf>) -> Result<()> {
    let mut store = ctx.stored_store()?;
    // The anchors first: each names an event committed before the snapshot the store
    // verifies.
    let mut anchors = Vec::new();
    let own = ctx.root.dir().join(ANCHOR_FILE);
    if own.exists() {
        anchors.push((own.clone(), read_anchor(&own)?));
    }
    if let Some(path) = anchor_arg {
        anchors.push((path.clone(), read_anchor(&path)?));
    }
    let v = app::audit::verify(&mut store, &anchors)?;
    let report = VerifyReport {
        ok: true,
        events: v.events,
        requests: v.requests,
        head_seq: v.head.as_ref().map(|h| h.0),
        head_hash: v.head.map(|h| h.1),
        keyed_since: v.keyed_since,
        anchors: anchors.into_iter().map(|a| a.1).collect(),
        first_break: None,
    };
    emit(ctx.json, &report, || {
        format!(
            "ok: {} events and {} requests verified; head {} {}\n",
            report.events,
            report.requests,
            report.head_seq.unwrap_or(0),
            report.head_hash.clone().unwrap_or_default()
        )
    });
    Ok(())
}

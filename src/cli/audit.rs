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
use crate::error::{Error, Result};
use crate::output::emit;
use crate::protocol::Code;
use crate::store::audit as records;
use crate::store::events::{self, Anchor, ChainBreak};

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

fn broken(message: String) -> Error {
    Error::question(Code::AuditBroken, message)
}

/// Run it.
pub fn run(ctx: &Ctx, c: Command) -> Result<()> {
    match c {
        Command::Verify { anchor } => verify(ctx, anchor),
    }
}

fn verify(ctx: &Ctx, anchor_arg: Option<PathBuf>) -> Result<()> {
    let conn = ctx.stored_db()?;
    // The anchors first: each names an event committed before the snapshot below.
    let mut anchors = Vec::new();
    let own = ctx.root.dir().join(events::ANCHOR_FILE);
    if own.exists() {
        anchors.push((own.clone(), events::read_anchor(&own)?));
    }
    if let Some(path) = anchor_arg {
        anchors.push((path.clone(), events::read_anchor(&path)?));
    }
    let key = events::load_key(ctx.root.dir())?;
    let tx = conn.unchecked_transaction()?;

    if let Some(problem) = records::integrity(&tx)? {
        return Err(broken(format!(
            "the database file fails SQLite's integrity check: {problem}"
        )));
    }
    let (count, brk) = events::verify(&tx)?;
    if let Some(b) = brk {
        return Err(broken(format!(
            "event {} does not verify: {}",
            b.seq, b.problem
        )));
    }
    for (path, a) in &anchors {
        if let Some(b) = events::check_anchor(&tx, a)? {
            return Err(broken(format!(
                "the anchor {} does not verify: {}",
                crate::text::path_for_log(path),
                b.problem
            )));
        }
    }
    let (checked, brk) = records::check_records(&tx)?;
    if let Some(b) = brk {
        return Err(broken(format!("{b}")));
    }
    let head: Option<(i64, String)> = tx
        .query_row(
            "SELECT seq, hash FROM events ORDER BY seq DESC LIMIT 1",
            [],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
        .ok();
    drop(tx);
    let report = VerifyReport {
        ok: true,
        events: count,
        requests: checked,
        head_seq: head.as_ref().map(|h| h.0),
        head_hash: head.map(|h| h.1),
        keyed_since: key.map(|k| k.since),
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

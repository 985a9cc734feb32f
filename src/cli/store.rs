//! `dshq store backup DIR` ([`crate::app::backup`]), and `dshq store copy --to
//! postgres://…`: move this root's store into an empty PostgreSQL database, and verify
//! the copy.
//!
//! The root's daemon must be stopped (the root is locked for the copy, so none can start
//! meanwhile): what it would commit after the snapshot would be left behind. The copy is
//! verified with this root's `audit.key` and `audit.head`; every other host that joins the
//! shared store needs the same `audit.key` in its root. The source is left as it was, so a
//! failed or abandoned move loses nothing. A live provider lease is refused: the record
//! keeps only its token's hash, so the lease would sit on the copy, unusable, until its
//! ttl. Web tokens are not copied either (create them again on the shared store).

use serde::Serialize;

use super::Ctx;
use crate::app;
use crate::error::{Error, Result};
use crate::output::emit;
use crate::root::{redact_url, Backend};
use crate::store::{read_anchor, ANCHOR_FILE};

/// `dshq store ...`
#[derive(Debug, clap::Subcommand)]
pub enum Command {
    /// Back up this root's SQLite store while the daemon runs: DIR (new or empty) gets a
    /// consistent copy of dshq.db, audit.key, and the copy's own audit.head; the copy is
    /// verified. Restore by using DIR as a root (or copying the three files into one).
    Backup {
        /// The backup directory.
        dir: std::path::PathBuf,
    },
    /// Copy this root's store (requests, questions, agents, leases, the event chain) into
    /// an empty PostgreSQL database and verify the copy; then point DSHQ_STORE at it.
    Copy {
        /// The target, postgres://USER@HOST/DATABASE (a password not in the URL is taken
        /// from PGPASSWORD; prefer that to a password in argv).
        #[arg(
            long,
            value_name = "URL",
            env = "DSHQ_STORE_TO",
            hide_env_values = true
        )]
        to: String,
    },
}

/// What a copy did.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct CopyReport {
    /// Records copied.
    pub records: u64,
    /// Events in the copy's verified chain.
    pub events: i64,
    /// Requests checked against their events on the copy.
    pub requests: i64,
    /// The copy's newest event (seq).
    pub head_seq: Option<i64>,
    /// Its hash.
    pub head_hash: Option<String>,
    /// The target, its password hidden.
    pub to: String,
}

/// Run it.
pub fn run(ctx: &Ctx, c: Command) -> Result<()> {
    match c {
        Command::Copy { to } => copy(ctx, &to),
        Command::Backup { dir } => {
            let b = app::backup::backup(&ctx.root, &dir)?;
            emit(ctx.json, &b, || {
                format!(
                    "backed up to {}: {} events, {} requests, head {} {}; the copy verifies\n\
                     check it: dshq --root {} audit verify\n",
                    crate::text::path_for_log(&b.dir),
                    b.events,
                    b.requests,
                    b.head_seq.unwrap_or(0),
                    b.head_hash.clone().unwrap_or_default(),
                    crate::text::path_for_log(&b.dir),
                )
            });
            Ok(())
        }
    }
}

fn copy(ctx: &Ctx, to: &str) -> Result<()> {
    let target = match Backend::parse(Some(to))? {
        b @ Backend::Postgres(_) => b,
        Backend::Sqlite => {
            return Err(Error::Usage(
                "store copy --to takes a postgres:// URL (the store it copies is this root's)"
                    .into(),
            ))
        }
    };
    if ctx.root.backend() == &target {
        return Err(Error::Usage(
            "--to names the store this root already uses".into(),
        ));
    }
    // No daemon on this root while it is copied (and none starts meanwhile).
    let _lock = crate::daemon::lock_root(&ctx.root)?;
    let mut from = ctx.stored_store()?;
    // A live lease cannot move: its token's secret is not in the record, so it would sit
    // on the copy until its ttl with nobody able to use it.
    let live: Vec<String> = app::session::status(&mut from, None, None)?
        .into_iter()
        .filter(|l| l.live)
        .map(|l| format!("{} (context {:?})", l.name, l.context))
        .collect();
    if !live.is_empty() {
        return Err(Error::Usage(format!(
            "live provider leases cannot be copied (their tokens would not work on the \
             copy): {}; release them (`dshq provider release`) or let them expire, then copy",
            live.join(", ")
        )));
    }
    let target_root = ctx.root.clone().with_backend(target);
    let mut into = target_root.open_store()?;
    let own = ctx.root.dir().join(ANCHOR_FILE);
    let mut anchors = Vec::new();
    if own.exists() {
        anchors.push((own.clone(), read_anchor(&own)?));
    }
    let copied = app::copy::copy(&mut from, &mut into, &anchors)?;
    let v = &copied.verified;
    let report = CopyReport {
        records: copied.records,
        events: v.events,
        requests: v.requests,
        head_seq: v.head.as_ref().map(|h| h.0),
        head_hash: v.head.as_ref().map(|h| h.1.clone()),
        to: redact_url(to),
    };
    emit(ctx.json, &report, || {
        format!(
            "copied {} records to {}; the copy verifies: {} events, {} requests, head {} {}\n\
             next: stop using this root's dshq.db: export DSHQ_STORE=<the URL> on every host, \
             and copy {} to each of their roots\n",
            report.records,
            report.to,
            report.events,
            report.requests,
            report.head_seq.unwrap_or(0),
            report.head_hash.clone().unwrap_or_default(),
            crate::store::chain::KEY_FILE,
        )
    });
    Ok(())
}

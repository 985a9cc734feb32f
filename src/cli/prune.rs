//! `dshq prune --before DATE --export FILE`: remove final requests finished before DATE
//! (their rows, questions and the prefix of the event log that concerns them) after
//! writing them to FILE as NDJSON (`dshq export`'s records). Pending and claimed requests
//! are never removed; `dshq audit verify` still verifies the whole chain afterwards.

use std::path::PathBuf;

use super::{history::parse_time, Ctx};
use crate::app;
use crate::core::audit::Actor;
use crate::error::Result;

/// Arguments of `dshq prune`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The cut: an RFC 3339 time, or a duration before now such as 90d.
    #[arg(long, value_name = "DATE")]
    pub before: String,
    /// The new file to write what is removed to (NDJSON, one `dshq export` record a
    /// line); written and fsynced before anything is removed, never over an existing file.
    #[arg(long, value_name = "FILE")]
    pub export: PathBuf,
    /// Remove at most N requests (one transaction holds the write lock while it runs, and
    /// the daemon's writes wait for it: about 7,000 requests a second on a 1M store).
    #[arg(long, value_name = "N")]
    pub limit: Option<u64>,
}

/// Run it.
pub fn run(ctx: &Ctx, a: Args) -> Result<()> {
    let before = parse_time("before", &a.before, crate::clock::now_ms())?;
    let mut store = ctx.store()?;
    let report = app::prune::prune(
        &mut store,
        &ctx.root,
        before,
        a.limit,
        &Actor::Cli,
        &a.export,
        true,
    )?;
    drop(store);
    crate::output::emit(ctx.json, &report, || {
        let p = &report.pruned;
        let mut s = format!(
            "pruned {} requests ({} questions, {} events) finished before {}; exported {} records to {}\n",
            p.requests,
            p.questions,
            p.events,
            report.before,
            report.records,
            a.export.display()
        );
        if let Some(why) = &p.stopped_at {
            s.push_str(&format!("stopped before the cut at {why}\n"));
        }
        s
    });
    Ok(())
}

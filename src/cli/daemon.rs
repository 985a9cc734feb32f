//! `dshq daemon`: run the host in the foreground.

use std::time::Duration;

use super::{parse_duration, Ctx};
use crate::daemon::{self, Config};
use crate::error::Result;

/// Arguments of `dshq daemon`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// Longest sleep between full rescans of the directories.
    #[arg(long, default_value = "1s", value_parser = parse_duration)]
    pub tick: Duration,
    /// Inbox files per transaction.
    #[arg(long, default_value_t = 512)]
    pub batch: usize,
    /// Size limit of inbox and answer files, in bytes.
    #[arg(long, default_value_t = crate::protocol::check::DEFAULT_MAX_REQUEST_BYTES)]
    pub max_bytes: u64,
}

/// Run it.
pub fn run(ctx: &Ctx, a: Args) -> Result<()> {
    daemon::run(
        &ctx.root,
        &Config {
            tick: a.tick,
            batch: a.batch,
            max_bytes: a.max_bytes,
        },
    )
}

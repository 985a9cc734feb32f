//! `dshq wait ID`: wait for a request's outcome without busy polling.
//!
//! The database is the source of truth; a watch on `outbox/` wakes the wait as soon as an
//! outcome file is written (by the daemon or a CLI command), and a one-second fallback
//! covers a missed event, or replaces the watch when none can be set up (the inotify
//! limits, too many open files). The request need not exist yet: an asker may drop a file and
//! wait before the daemon has ingested it.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use notify::{RecursiveMode, Watcher};

use super::{parse_wait_timeout, Ctx};
use crate::app;
use crate::error::{Error, Result};
use crate::output::{emit, outcome_text};
use crate::protocol::check::check_id;
use crate::protocol::Outcome;
use crate::root::Root;

/// Arguments of `dshq wait`.
#[derive(Debug, clap::Args)]
pub struct Args {
    /// The request id.
    pub id: String,
    /// Give up after this long (WAIT_TIMEOUT); default: wait forever.
    #[arg(long, value_parser = parse_wait_timeout)]
    pub timeout: Option<Duration>,
}

/// Run it.
pub fn run(ctx: &Ctx, a: Args) -> Result<()> {
    wait_and_print(ctx, &a.id, a.timeout)
}

/// Wait, print the outcome, and fail with its code when it is an error outcome.
pub fn wait_and_print(ctx: &Ctx, id: &str, timeout: Option<Duration>) -> Result<()> {
    let outcome = wait_for(&ctx.root, id, timeout)?;
    emit(ctx.json, &outcome, || outcome_text(&outcome));
    match outcome {
        Outcome::Answered(_) => Ok(()),
        Outcome::Error(e) => Err(Error::Ended(e.error)),
    }
}

/// A watch on `outbox/` that sends on `tx` for every change, or `None` (logged at debug)
/// when one cannot be set up.
fn watch_outbox(root: &Root, tx: mpsc::Sender<()>) -> Option<notify::RecommendedWatcher> {
    let watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
        if !matches!(&res, Ok(ev) if matches!(ev.kind, notify::EventKind::Access(_))) {
            let _ = tx.send(());
        }
    })
    .and_then(|mut w| {
        w.watch(&root.outbox(), RecursiveMode::NonRecursive)
            .map(|_| w)
    });
    match watcher {
        Ok(w) => Some(w),
        Err(e) => {
            tracing::debug!(error = %e, "no watch on the outbox; polling every second");
            None
        }
    }
}

/// Block until request `id` has an outcome, or `timeout` passes.
pub fn wait_for(root: &Root, id: &str, timeout: Option<Duration>) -> Result<Outcome> {
    check_id("request id", id)?;
    let started = Instant::now();
    let mut store = root.open_store()?;
    let (tx, rx) = mpsc::channel::<()>();
    // Kept alive for the loop; `None` when no watch could be set up (the inotify instance
    // or watch limit, too many open files): the wait then polls every second instead of
    // failing a request that was accepted.
    let _keep_open = tx.clone();
    let _watcher = watch_outbox(root, tx);
    loop {
        if let Some(o) = app::feed::outcome_ready(&mut store, root, id)? {
            return Ok(o);
        }
        let mut sleep = Duration::from_secs(1);
        if let Some(t) = timeout {
            let elapsed = started.elapsed();
            if elapsed >= t {
                return Err(Error::WaitTimeout {
                    id: id.to_string(),
                    waited: humantime::format_duration(t).to_string(),
                });
            }
            sleep = sleep.min(t - elapsed);
        }
        let _ = rx.recv_timeout(sleep);
        while rx.try_recv().is_ok() {}
    }
}

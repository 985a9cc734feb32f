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
use rusqlite::Connection;

use super::{parse_wait_timeout, Ctx};
use crate::clock::now_ms;
use crate::error::{Error, Result};
use crate::files::outbox;
use crate::output::{emit, outcome_text};
use crate::protocol::check::check_id;
use crate::protocol::Outcome;
use crate::root::Root;
use crate::store::{self, requests};

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

fn check(root: &Root, conn: &mut Connection, id: &str) -> Result<Option<Outcome>> {
    let Some(r) = requests::get_any(conn, id)? else {
        return Ok(None);
    };
    // A rejection is the answer only while no new file for this id waits in the inbox: a
    // fixed re-submission supersedes it (rejections do not reserve ids).
    if r.status == requests::Status::Rejected
        && root.inbox_new().join(format!("{id}.json")).exists()
    {
        return Ok(None);
    }
    if let Some(o) = r.outcome() {
        return Ok(Some(o));
    }
    let now = now_ms();
    if r.deadline_ms.is_some_and(|d| d < now) {
        // Nobody has noticed the deadline yet (no daemon running): end it now.
        store::sweep_if_due(conn, now)?;
        outbox::flush(root, conn)?;
        return Ok(requests::get_any(conn, id)?.and_then(|r| r.outcome()));
    }
    Ok(None)
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
    let mut conn = root.open_db()?;
    let (tx, rx) = mpsc::channel::<()>();
    // Kept alive for the loop; `None` when no watch could be set up (the inotify instance
    // or watch limit, too many open files): the wait then polls every second instead of
    // failing a request that was accepted.
    let _keep_open = tx.clone();
    let _watcher = watch_outbox(root, tx);
    loop {
        if let Some(o) = check(root, &mut conn, id)? {
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

//! The host loop: ingest the inbox, process answer files, expire what is due, write the
//! outbox, and stop cleanly on SIGINT/SIGTERM.
//!
//! File-system events are only hints. The notify callback forwards into a channel and does
//! nothing else; the loop treats any hint as "look at the directory now", so a lost or
//! coalesced event costs latency, never data. The directories are scanned in full at
//! start, after every hint, on every periodic tick, and after an event-queue overflow
//! (which notify reports as a rescan flag or an error).
//!
//! The loop is synchronous on purpose: SQLite calls block anyway, and one thread with a
//! channel is the simplest thing that cannot race with itself. It sleeps in
//! `recv_timeout` until a hint arrives or the next lease/deadline falls due (at most one
//! tick), so an idle daemon wakes about once a second and does no work.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::Duration;

use notify::{RecursiveMode, Watcher};
use rusqlite::Connection;

use crate::clock::now_ms;
use crate::error::{Error, Result};
use crate::files::{answers, inbox, outbox};
use crate::hooks::{HookConfig, Hooks};
use crate::root::Root;
use crate::store::{self, requests};

/// Daemon settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// The longest the loop sleeps between full scans.
    pub tick: Duration,
    /// How many inbox files one transaction ingests.
    pub batch: usize,
    /// The size limit of inbox and answer files.
    pub max_bytes: u64,
    /// `--on-question`: a hook run for each newly accepted request (see [`crate::hooks`]).
    pub on_question: Option<HookConfig>,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            tick: Duration::from_secs(1),
            batch: 512,
            max_bytes: crate::protocol::check::DEFAULT_MAX_REQUEST_BYTES,
            on_question: None,
        }
    }
}

#[derive(Debug)]
enum Hint {
    Inbox,
    Answers,
    Rescan,
    Shutdown,
}

/// Run the daemon until SIGINT or SIGTERM.
pub fn run(root: &Root, config: &Config) -> Result<()> {
    let mut conn = root.open_db()?;
    // One daemon per root: a second one would race the first over the same files.
    let _lock = lock_root(root)?;
    let (tx, rx) = mpsc::channel::<Hint>();
    let stop = Arc::new(AtomicBool::new(false));

    // Signals: set the flag (checked between batches) and wake the loop.
    {
        let mut signals = signal_hook::iterator::Signals::new([
            signal_hook::consts::SIGINT,
            signal_hook::consts::SIGTERM,
        ])
        .map_err(|e| Error::io("signal handler", e))?;
        let tx = tx.clone();
        let stop = stop.clone();
        std::thread::Builder::new()
            .name("dshq-signals".into())
            .spawn(move || {
                if let Some(sig) = signals.forever().next() {
                    tracing::info!(signal = sig, "stopping after the current batch");
                    stop.store(true, Ordering::SeqCst);
                    let _ = tx.send(Hint::Shutdown);
                }
            })
            .map_err(|e| Error::io("signal thread", e))?;
    }

    // File events: forwarded as hints, nothing more.
    let inbox_dir = root.inbox_new();
    let answers_dir = root.answers_new();
    let mut watcher = {
        let tx = tx.clone();
        let inbox_dir = inbox_dir.clone();
        notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
            let hint = match res {
                Ok(ev) if ev.need_rescan() => Hint::Rescan,
                // Our own directory listings open the directory: never a reason to look.
                Ok(ev) if matches!(ev.kind, notify::EventKind::Access(_)) => return,
                Ok(ev) => {
                    if ev.paths.iter().any(|p| p.starts_with(&inbox_dir)) {
                        Hint::Inbox
                    } else {
                        Hint::Answers
                    }
                }
                Err(_) => Hint::Rescan,
            };
            let _ = tx.send(hint);
        })
        .map_err(|e| Error::io("file watcher", std::io::Error::other(e)))?
    };
    for d in [&inbox_dir, &answers_dir] {
        watcher
            .watch(d, RecursiveMode::NonRecursive)
            .map_err(|e| Error::io(d, std::io::Error::other(e)))?;
    }
    // The hook runner notices new requests by seq after each pass, whatever accepted
    // them (this loop's inbox, `dshq ask`); it only enqueues, so it never delays a pass.
    let mut hooks = match &config.on_question {
        Some(h) => Some(Hooks::start(root, &conn, h.clone())?),
        None => None,
    };
    // Temp files of writers killed mid-write (their pid is gone) are never renamed.
    for dir in [root.outbox(), root.rejected(), root.answers_rejected()] {
        let n = crate::files::atomic::remove_orphan_temps(&dir);
        if n > 0 {
            tracing::info!(dir = %dir.display(), removed = n, "removed temp files of killed writers");
        }
    }
    tracing::info!(root = %root.dir().display(), "daemon started");

    // Startup: everything already there, and any outcome committed but not yet written.
    pass(root, &mut conn, config, &stop, &mut watcher, true, true);
    if let Some(h) = hooks.as_mut() {
        h.poll(&conn);
    }
    while !stop.load(Ordering::SeqCst) {
        let timeout = sleep_for(&conn, config.tick);
        let first = match rx.recv_timeout(timeout) {
            Ok(h) => Some(h),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => break,
        };
        let (mut do_inbox, mut do_answers) = match first {
            None | Some(Hint::Rescan) => (true, true),
            Some(Hint::Inbox) => (true, false),
            Some(Hint::Answers) => (false, true),
            Some(Hint::Shutdown) => break,
        };
        // Coalesce whatever else is queued: one scan serves them all.
        while let Ok(h) = rx.try_recv() {
            match h {
                Hint::Inbox => do_inbox = true,
                Hint::Answers => do_answers = true,
                Hint::Rescan => {
                    do_inbox = true;
                    do_answers = true;
                }
                Hint::Shutdown => stop.store(true, Ordering::SeqCst),
            }
        }
        if first.is_none() {
            // Periodic tick: the full rescan that makes missed events harmless.
            do_inbox = true;
            do_answers = true;
        }
        pass(
            root,
            &mut conn,
            config,
            &stop,
            &mut watcher,
            do_inbox,
            do_answers,
        );
        if let Some(h) = hooks.as_mut() {
            h.poll(&conn);
        }
    }
    drop(watcher);
    if let Some(h) = hooks {
        h.shutdown();
    }
    tracing::info!("daemon stopped");
    Ok(())
}

/// Take an exclusive `flock` on the root directory, held for the life of the
/// returned file (the kernel drops it when the process dies, even on SIGKILL).
fn lock_root(root: &Root) -> Result<std::fs::File> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    // The root directory itself, not a file in it: a lock file can be unlinked (and a
    // second daemon would lock a new one), the directory cannot while it holds our root.
    // The root was checked (a symlink to it must be this user's or root's): lock where it
    // resolves, and with O_NOFOLLOW, so a symlink swapped in after the check is refused.
    let path = &std::fs::canonicalize(root.dir()).map_err(|e| Error::io(root.dir(), e))?;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECTORY | libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| Error::io(path, e))?;
    // SAFETY: flock on a descriptor we own.
    if unsafe { libc::flock(f.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
        let e = std::io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EWOULDBLOCK) {
            return Err(Error::question(
                crate::protocol::Code::DaemonRunning,
                format!(
                    "another dshq daemon already runs on {}",
                    crate::text::path_for_log(root.dir())
                ),
            ));
        }
        return Err(Error::io(path, e));
    }
    Ok(f)
}

/// How long to sleep: until the next lease or deadline falls due, at most one tick.
fn sleep_for(conn: &Connection, tick: Duration) -> Duration {
    let now = now_ms();
    match requests::next_due(conn) {
        Ok(Some(due)) if due >= now => Duration::from_millis((due - now + 1) as u64).min(tick),
        Ok(Some(_)) => Duration::from_millis(1),
        _ => tick,
    }
}

/// One pass: inbox, answer files, expiry, outbox. Errors are logged and retried on the
/// next pass; the daemon keeps running.
fn pass(
    root: &Root,
    conn: &mut Connection,
    config: &Config,
    stop: &AtomicBool,
    watcher: &mut notify::RecommendedWatcher,
    do_inbox: bool,
    do_answers: bool,
) {
    tracing::debug!(do_inbox, do_answers, "pass");
    if do_inbox {
        if let Err(e) = drain_inbox(root, conn, config, stop, watcher) {
            tracing::error!(error = %e, "inbox pass failed; will retry");
        }
    }
    if do_answers {
        match answers::process(root, conn, config.max_bytes, now_ms()) {
            Ok(_) => {}
            Err(e) => tracing::error!(error = %e, "answer pass failed; will retry"),
        }
    }
    if let Err(e) = expire(conn) {
        tracing::error!(error = %e, "expiry pass failed; will retry");
    }
    if let Err(e) = outbox::flush(root, conn) {
        tracing::error!(error = %e, "outbox pass failed; will retry");
    }
}

/// Ingest `inbox/new/` until a listing comes back empty, one transaction per batch,
/// writing outcomes between batches so rejections reach askers promptly.
fn drain_inbox(
    root: &Root,
    conn: &mut Connection,
    config: &Config,
    stop: &AtomicBool,
    watcher: &mut notify::RecommendedWatcher,
) -> Result<()> {
    let dir = root.inbox_new();
    let mut unwatched = false;
    let result = (|| loop {
        let names = inbox::list_dir(&dir)?;
        if names.is_empty() {
            return Ok(());
        }
        // A burst: stop the watch on the inbox while draining it. Every unlink would
        // otherwise queue an inotify event (a tenth of the ingest time went to the kernel
        // queueing them) for a loop that rescans anyway. Nothing is lost: the listing
        // after the watch is back sees whatever arrived meanwhile.
        if names.len() > config.batch && !unwatched {
            unwatched = watcher.unwatch(&dir).is_ok();
        }
        let mut progressed = false;
        for chunk in names.chunks(config.batch.max(1)) {
            let r = inbox::ingest(root, conn, chunk, config.max_bytes, now_ms())?;
            // Files that could not be removed come back in the next listing: only what
            // left the inbox is progress (else an undeletable file loops forever).
            let handled = r.accepted.len() + r.redelivered + r.rejected.len() + r.aborted.len();
            progressed |= handled > r.stuck;
            if stop.load(Ordering::SeqCst) {
                return Ok(());
            }
        }
        outbox::flush(root, conn)?;
        if !progressed {
            // Only unreadable files remain: leave them for the next tick.
            return Ok(());
        }
        if unwatched {
            // Watch again before the next listing, so nothing slips between the two.
            watcher
                .watch(&dir, RecursiveMode::NonRecursive)
                .map_err(|e| Error::io(&dir, std::io::Error::other(e)))?;
            unwatched = false;
        }
    })();
    if unwatched {
        // An error or a stop left the watch off: put it back (the next tick rescans anyway).
        if let Err(e) = watcher.watch(&dir, RecursiveMode::NonRecursive) {
            tracing::error!(error = %e, "cannot watch the inbox again; relying on the periodic rescan");
        }
    }
    result
}

/// Sweep expiries when something is due.
fn expire(conn: &mut Connection) -> Result<()> {
    let Some(swept) = store::sweep_if_due(conn, now_ms())? else {
        return Ok(());
    };
    for id in &swept.leases {
        tracing::info!(lease = id, "provider lease expired");
    }
    for id in &swept.released {
        tracing::info!(id = %id, "claim returned to pending (lease ended)");
    }
    for id in &swept.aborted {
        tracing::info!(id = %id, "request aborted: deadline passed");
    }
    for id in &swept.agents {
        tracing::info!(agent = %id, "agent ended: ttl ran out");
    }
    Ok(())
}

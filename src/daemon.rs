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

use std::collections::{HashSet, VecDeque};
use std::rc::Rc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::Arc;
use std::time::{Duration, Instant};

use notify::{RecursiveMode, Watcher};

use crate::app;
use crate::error::{Error, Result};
use crate::files::inbox;
use crate::hooks::{HookConfig, Hooks};
use crate::root::Root;
use crate::shutdown::Stop;
use crate::store::Store;
use crate::text::for_log;

/// Daemon settings.
#[derive(Debug, Clone)]
pub struct Config {
    /// The longest the loop sleeps between full scans.
    pub tick: Duration,
    /// How many inbox files one transaction ingests.
    pub batch: usize,
    /// About how many bytes of input one transaction reads (inbox and answer files): a
    /// batch ends after the file that reaches it, so memory stays bounded whatever the
    /// files' sizes.
    pub batch_bytes: u64,
    /// The size limit of inbox and answer files.
    pub max_bytes: u64,
    /// `--on-question`: a hook run for each newly accepted request (see [`crate::hooks`]).
    pub on_question: Option<HookConfig>,
    /// `--prune-after`: prune on a schedule (see [`PruneSchedule`]).
    pub prune: Option<PruneSchedule>,
    /// `--context-ladder`: the operator's ladder policies (context, the policy as JSON),
    /// written into the store at start; `None` leaves the store's as they are.
    pub context_ladders: Option<Vec<(String, String)>>,
}

/// The daemon's retention: every `every`, final requests finished more than `after` ago
/// are pruned into a new export file in `dir` ([`app::prune::scheduled`]).
#[derive(Debug, Clone)]
pub struct PruneSchedule {
    /// How old a final request must be.
    pub after: Duration,
    /// Where the export files go.
    pub dir: std::path::PathBuf,
    /// How often to prune (the first time right after start).
    pub every: Duration,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            tick: Duration::from_secs(1),
            batch: 512,
            batch_bytes: DEFAULT_BATCH_BYTES,
            max_bytes: crate::protocol::check::DEFAULT_MAX_REQUEST_BYTES,
            on_question: None,
            prune: None,
            context_ladders: None,
        }
    }
}

/// The default of [`Config::batch_bytes`]: 32 MiB.
pub const DEFAULT_BATCH_BYTES: u64 = 32 * 1024 * 1024;

/// After a batch that read at least this much, return freed memory to the system.
/// How old an inbox listing may be before a burst's next batch lists the directory again
/// (the bound, with one batch, on how long a file dropped behind a backlog waits).
pub const RELIST_AFTER: Duration = Duration::from_millis(100);

const TRIM_AFTER_BYTES: u64 = 4 * 1024 * 1024;

/// The most files the first batch of a drain takes: the commits start once these are read,
/// while the file thread reads the next, full batch (a burst's first full batch was read
/// while nothing committed).
const FIRST_BATCH: usize = 64;

#[derive(Debug)]
enum Hint {
    Inbox,
    Answers,
    Rescan,
    /// A commit elsewhere in this process (the web) finished a request: write the outbox.
    Outbox,
    Shutdown,
}

/// Wakes the file loop from another thread of the same process (the async host).
#[derive(Debug, Clone)]
pub struct Waker(mpsc::Sender<Hint>);

impl Waker {
    /// Something was committed elsewhere: run a pass (expiry and outbox) now.
    pub fn committed(&self) {
        let _ = self.0.send(Hint::Outbox);
    }

    /// Stop the loop after its current batch (as SIGTERM does).
    pub fn shutdown(&self) {
        let _ = self.0.send(Hint::Shutdown);
    }
}

/// What the loop calls once it holds the root, with its [`Waker`].
pub type Started = Box<dyn FnOnce(Waker) -> Result<()> + Send>;

/// The call the host makes after every pass of the file loop, on the loop's thread and store.
pub type AfterPass = Box<dyn FnMut(&mut Store) + Send>;

/// What rides along with the file loop, given by the composition root
/// ([`crate::serve`]); the loop itself knows nothing of channels or of HTTP.
#[derive(Default)]
pub struct Link {
    /// Called once the loop holds the root (one daemon per root), before it says it
    /// serves it: what must run only while this daemon serves the root starts here (the
    /// channels' sender), and the host learns the [`Waker`]. An error ends the daemon
    /// before it starts.
    pub started: Option<Started>,
    /// Called after every pass with the loop's store (the host broadcasts what the pass
    /// committed). A loop with one hears every commit of a shared store, not only those
    /// that make its own outcomes due.
    pub after_pass: Option<AfterPass>,
}

/// Run the daemon until `shutdown` is requested (SIGINT or SIGTERM, or the [`Waker`]'s
/// shutdown), with what rides along ([`Link`]).
pub fn run(root: &Root, config: &Config, mut link: Link, shutdown: &Stop) -> Result<()> {
    let mut store_box = root.open_store()?;
    let store: &mut Store = &mut store_box;
    // One daemon per root: a second one would race the first over the same files.
    let _lock = lock_root(root)?;
    let (tx, rx) = mpsc::channel::<Hint>();
    let stop = Arc::new(AtomicBool::new(false));

    // The stop (SIGINT/SIGTERM, handled since the process started): set the flag
    // (checked between batches) and wake the loop.
    {
        let tx = tx.clone();
        let stop = stop.clone();
        shutdown.on_stop(move || {
            stop.store(true, Ordering::SeqCst);
            let _ = tx.send(Hint::Shutdown);
        });
    }
    if stop.load(Ordering::SeqCst) {
        tracing::info!("daemon stopped before it started");
        return Ok(());
    }

    let mut watcher = watch(root, tx.clone())?;
    // The hook runner notices new requests by seq after each pass, whatever accepted
    // them (this loop's inbox, `dshq ask`); it only enqueues, so it never delays a pass.
    let mut hooks = match &config.on_question {
        Some(h) => Some(Hooks::start(root, store, h.clone())?),
        None => None,
    };
    tidy_at_start(root, store, config)?;
    // Whatever must run only while this daemon serves the root (the channels' sender, on
    // a thread of its own, never this loop) starts now, before askers may look for us.
    if let Some(started) = link.started.take() {
        started(Waker(tx.clone()))?;
    }
    // Serving the root from here on: file askers may look for us (`NO_DAEMON` otherwise).
    let _pid = crate::files::pid_file::PidFile::write(root.dir())?;
    tracing::info!(root = %root.dir().display(), "daemon started");

    // Commits made on other hosts (a shared store): each wakes a pass, which writes the
    // outcomes of this root that they finished.
    // A host that serves reviewers (the web host) or runs hooks hears every commit;
    // a file-only daemon only those that make its own outcomes due.
    let feed = link.after_pass.is_some() || hooks.is_some();
    let _wakeups = spawn_wakeups(store, feed, tx.clone(), stop.clone());

    // Startup: everything already there, and any outcome committed but not yet written.
    let mut failures = 0u32;
    if !pass(root, store, config, &stop, &mut watcher, true, true) {
        failures = 1;
    }
    let mut next_prune = std::time::Instant::now();
    let mut after = |store: &mut Store, next_prune: &mut Instant| {
        maybe_prune(root, store, config, next_prune);
        if let Some(h) = hooks.as_mut() {
            h.poll(store);
        }
        if let Some(after_pass) = link.after_pass.as_mut() {
            after_pass(store);
        }
    };
    after(store, &mut next_prune);
    while !stop.load(Ordering::SeqCst) {
        if failures > 0 {
            // The store (or the file system) failed the last pass: wait, longer each time
            // up to a bound, then try everything again. Nothing waits meanwhile but files
            // in the inbox, which stay there until a commit takes them.
            if back_off(&rx, failures, &stop) {
                break;
            }
        }
        let Some((do_inbox, do_answers)) =
            next_look(&rx, sleep_for(store, config.tick), failures > 0, &stop)
        else {
            break;
        };
        let ok = pass(
            root,
            store,
            config,
            &stop,
            &mut watcher,
            do_inbox,
            do_answers,
        );
        failures = if ok { 0 } else { failures.saturating_add(1) };
        after(store, &mut next_prune);
    }
    drop(watcher);
    if let Some(h) = hooks {
        h.shutdown();
    }
    tracing::info!("daemon stopped");
    Ok(())
}

/// Watch the inbox and the answer files: each event is forwarded as a hint, nothing more.
fn watch(root: &Root, tx: mpsc::Sender<Hint>) -> Result<notify::RecommendedWatcher> {
    let inbox_dir = root.inbox_new();
    let answers_dir = root.answers_new();
    let mut watcher = {
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
    Ok(watcher)
}

/// What a start tidies before it serves the root: temp files of killed writers, stale
/// outcome files, and the operator's ladder policies.
fn tidy_at_start(root: &Root, store: &mut Store, config: &Config) -> Result<()> {
    // Temp files of writers killed mid-write (their pid is gone) are never renamed.
    for dir in [root.outbox(), root.rejected(), root.answers_rejected()] {
        let n = crate::disk::atomic::remove_orphan_temps(&dir);
        if n > 0 {
            tracing::info!(dir = %dir.display(), removed = n, "removed temp files of killed writers");
        }
    }
    // A crash between accepting a reused id and removing its earlier error outcome
    // leaves that outcome under an open request: remove it before anyone reads it.
    if let Err(e) = app::ask::repair_outbox(store, root) {
        tracing::error!(error = %e, "cannot repair the outbox");
    }
    if let Some(policies) = &config.context_ladders {
        store.set_context_ladders(policies)?;
        tracing::info!(contexts = policies.len(), "ladder policies set");
    }
    Ok(())
}

/// Sleep until a hint or `timeout`, then take every hint queued: what the next pass
/// looks at (the inbox, the answer files), or `None` when the loop is to stop. The
/// periodic tick, a rescan and a retry after a failure look at everything.
fn next_look(
    rx: &mpsc::Receiver<Hint>,
    timeout: Duration,
    retry: bool,
    stop: &AtomicBool,
) -> Option<(bool, bool)> {
    let first = match rx.recv_timeout(timeout) {
        Ok(h) => Some(h),
        Err(RecvTimeoutError::Timeout) => None,
        Err(RecvTimeoutError::Disconnected) => return None,
    };
    let (mut do_inbox, mut do_answers) = match first {
        None | Some(Hint::Rescan) => (true, true),
        Some(Hint::Inbox) => (true, false),
        Some(Hint::Answers) => (false, true),
        Some(Hint::Outbox) => (false, false),
        Some(Hint::Shutdown) => return None,
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
            Hint::Outbox => {}
            Hint::Shutdown => stop.store(true, Ordering::SeqCst),
        }
    }
    if first.is_none() || retry {
        // Periodic tick, or a retry: the full rescan that makes missed events harmless.
        return Some((true, true));
    }
    Some((do_inbox, do_answers))
}

/// Run the scheduled prune when it is due (logged; an error is retried next time).
fn maybe_prune(root: &Root, store: &mut Store, config: &Config, next: &mut std::time::Instant) {
    let Some(p) = &config.prune else { return };
    let now = std::time::Instant::now();
    if now < *next {
        return;
    }
    *next = now + p.every;
    match app::prune::scheduled(store, root, p.after, &p.dir) {
        Ok(r) => {
            if r.pruned.requests >= app::prune::SCHEDULED_LIMIT {
                // Caught up in steps: the next one after the next pass.
                *next = now;
            } else if let Some(why) = &r.pruned.stopped_at {
                tracing::warn!(
                    requests = r.pruned.requests,
                    stopped_at = %for_log(why),
                    "prune stopped before its cut"
                );
            }
        }
        Err(e) => tracing::error!(error = %for_log(&e.to_string()), "prune failed; will retry"),
    }
}

/// Take an exclusive `flock` on the root directory (`DAEMON_RUNNING` when a daemon holds
/// it), held for the life of the returned file (the kernel drops it when the process
/// dies, even on SIGKILL).
pub fn lock_root(root: &Root) -> Result<std::fs::File> {
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
    match rustix::fs::flock(&f, rustix::fs::FlockOperation::NonBlockingLockExclusive) {
        Ok(()) => Ok(f),
        Err(e) if e == rustix::io::Errno::WOULDBLOCK => Err(Error::question(
            crate::protocol::Code::DaemonRunning,
            format!(
                "another dshq daemon already runs on {}",
                crate::text::path_for_log(root.dir())
            ),
        )),
        Err(e) => Err(Error::io(path, e.into())),
    }
}

/// How long to sleep: until the next lease or deadline falls due, at most one tick.
fn sleep_for(store: &mut Store, tick: Duration) -> Duration {
    // The store's clock, not this host's: what falls due is judged by it.
    let Ok(now) = store.clock_now() else {
        return tick;
    };
    match store.next_due() {
        Ok(Some(due)) if due >= now => Duration::from_millis((due - now + 1) as u64).min(tick),
        Ok(Some(_)) => Duration::from_millis(1),
        _ => tick,
    }
}

/// The longest wait between retries after failed passes.
pub const MAX_BACKOFF: Duration = Duration::from_secs(5);

/// Wait before the retry that follows `failures` failed passes in a row (100 ms, doubling,
/// at most [`MAX_BACKOFF`]); hints that arrive meanwhile are dropped, since the retry
/// scans everything. Returns whether to stop.
fn back_off(rx: &mpsc::Receiver<Hint>, failures: u32, stop: &AtomicBool) -> bool {
    let delay = Duration::from_millis(100)
        .saturating_mul(1u32 << failures.min(16).saturating_sub(1))
        .min(MAX_BACKOFF);
    if failures == 1 || delay == MAX_BACKOFF && failures.is_multiple_of(12) {
        tracing::warn!(failures, retry_in = ?delay, "a pass failed; retrying");
    }
    let until = Instant::now() + delay;
    loop {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return stop.load(Ordering::SeqCst);
        }
        match rx.recv_timeout(left) {
            Ok(Hint::Shutdown) | Err(RecvTimeoutError::Disconnected) => return true,
            Ok(_) | Err(RecvTimeoutError::Timeout) => {}
        }
    }
}

/// Start the thread that turns the store's [`crate::store::Wakeups`] (commits on other
/// hosts) into passes, when the backend has them. It reconnects with backoff when the
/// store goes away, and ends with the daemon.
fn spawn_wakeups(
    store: &mut Store,
    feed: bool,
    tx: mpsc::Sender<Hint>,
    stop: Arc<AtomicBool>,
) -> Option<std::thread::JoinHandle<()>> {
    let mut wakeups = match store.wakeups(feed) {
        Ok(Some(w)) => w,
        Ok(None) => return None,
        Err(e) => {
            tracing::error!(error = %for_log(&e.to_string()), "cannot listen for commits on other hosts; relying on the periodic pass");
            return None;
        }
    };
    std::thread::Builder::new()
        .name("dshq-wakeups".into())
        .spawn(move || {
            let mut failures = 0u32;
            while !stop.load(Ordering::SeqCst) {
                match wakeups.wait(Duration::from_secs(1)) {
                    Ok(woke) => {
                        if failures > 0 {
                            tracing::info!("listening for commits on other hosts again");
                            // What was committed while we were deaf: one pass sees it.
                            let _ = tx.send(Hint::Outbox);
                        }
                        failures = 0;
                        if woke && tx.send(Hint::Outbox).is_err() {
                            return;
                        }
                    }
                    Err(e) => {
                        failures = failures.saturating_add(1);
                        if failures == 1 {
                            tracing::warn!(error = %for_log(&e.to_string()), "lost the store's notifications; reconnecting");
                        }
                        let delay = Duration::from_millis(100)
                            .saturating_mul(1u32 << failures.min(16).saturating_sub(1))
                            .min(MAX_BACKOFF);
                        std::thread::sleep(delay);
                    }
                }
            }
        })
        .map_err(|e| tracing::error!(error = %e, "cannot start the notification thread"))
        .ok()
}

/// One pass: inbox, answer files, expiry, outbox. Errors are logged and retried after a
/// backoff ([`back_off`]); the daemon keeps running. Returns whether every step succeeded.
fn pass(
    root: &Root,
    store: &mut Store,
    config: &Config,
    stop: &AtomicBool,
    watcher: &mut notify::RecommendedWatcher,
    do_inbox: bool,
    do_answers: bool,
) -> bool {
    tracing::debug!(do_inbox, do_answers, "pass");
    let mut ok = true;
    if do_inbox {
        if let Err(e) = drain_inbox(root, store, config, stop, watcher) {
            tracing::error!(error = %for_log(&e.to_string()), "inbox pass failed; will retry");
            ok = false;
        }
    }
    if do_answers {
        match app::provide::answer_files(store, root, config.max_bytes, config.batch_bytes) {
            Ok(_) => {}
            Err(e) => {
                tracing::error!(error = %for_log(&e.to_string()), "answer pass failed; will retry");
                ok = false;
            }
        }
    }
    if let Err(e) = expire(store) {
        tracing::error!(error = %for_log(&e.to_string()), "expiry pass failed; will retry");
        ok = false;
    }
    if let Err(e) = app::publish_pending(store, root) {
        tracing::error!(error = %for_log(&e.to_string()), "outbox pass failed; will retry");
        ok = false;
    }
    ok
}

/// Ingest `inbox/new/` until every file listed has been tried, one transaction per batch,
/// writing outcomes between batches so rejections reach askers promptly.
///
/// The directory is listed anew before a batch once the last listing is [`RELIST_AFTER`]
/// old (or used up; see [`Plan`]), and a batch takes files that arrived since the previous listing first
/// (half of it, the rest from the backlog in name order): a valid request dropped behind a
/// flood of bad files waits at most that long and one batch, not the flood. Listing before
/// every batch kept that bound tighter but cost a whole listing of the backlog per batch:
/// a 50,000-file burst ran at half its speed.
/// Abort files are taken only once no request file is left to try, so an abort never
/// overtakes its request. A file tried once in this drain and still there (unreadable, or
/// its removal failed) is left for the next pass instead of being retried in a loop.
///
/// The file work runs beside the store's: a second thread (`dshq-inbox-io`) lists the
/// directory, chooses each batch ([`Drain`]), reads and parses it while the batch before
/// it commits, and removes a batch's files once its commit is done. The commits stay one
/// at a time and in order, on this thread, which does nothing else between them but write
/// the outcomes; a file is still removed only after the commit that handled it, and only
/// if it is still the file that was read ([`inbox::Removals`]). The thread reads one batch
/// ahead and no more (it hands each over and waits for it to be taken), so memory holds
/// at most two batches. Why two threads: with one, a burst runs at the sum of the file
/// work and the commits, and a listing of a large backlog (every [`RELIST_AFTER`]) stands
/// between two commits.
fn drain_inbox(
    root: &Root,
    store: &mut Store,
    config: &Config,
    stop: &AtomicBool,
    watcher: &mut notify::RecommendedWatcher,
) -> Result<()> {
    let dir = root.inbox_new();
    let mut big = false;
    let io_watcher = &mut *watcher;
    let (result, unwatched) = std::thread::scope(|scope| {
        // Rendezvous: a batch is handed over only when this thread takes it.
        let (batch_tx, batches) = mpsc::sync_channel::<Result<Option<inbox::ReadBatch>>>(0);
        let (removals, removal_rx) = mpsc::channel::<inbox::Removals>();
        let (max_bytes, batch_bytes) = (config.max_bytes, config.batch_bytes);
        let batch = config.batch.max(1);
        let dir = &dir;
        let io = std::thread::Builder::new()
            .name("dshq-inbox-io".into())
            .spawn_scoped(scope, move || {
                read_ahead(
                    root,
                    dir,
                    io_watcher,
                    (batch, max_bytes, batch_bytes),
                    batch_tx,
                    removal_rx,
                )
            })
            .map_err(|e| Error::io("inbox thread", e));
        let io = match io {
            Ok(io) => io,
            Err(e) => return (Err(e), false),
        };
        let worker_gone = || Error::io("inbox thread", std::io::Error::other("it ended"));
        let result = commit_batches(root, store, stop, &batches, &removals, &mut big);
        // The thread, waiting to hand over a batch read ahead, stops; it removes what was
        // committed, then ends.
        drop(batches);
        drop(removals);
        match io.join() {
            Ok(unwatched) => (result, unwatched),
            Err(_) => (result.and(Err(worker_gone())), true),
        }
    });
    if big {
        crate::sys::trim_heap();
    }
    if unwatched {
        // An error or a stop left the watch off: put it back (the next tick rescans anyway).
        if let Err(e) = watcher.watch(&dir, RecursiveMode::NonRecursive) {
            tracing::error!(error = %for_log(&e.to_string()), "cannot watch the inbox again; relying on the periodic rescan");
        }
    }
    result
}

/// The inbox's I/O thread: choose each batch ([`Drain`]), read it, hand it over (the
/// rendezvous: at most one batch read ahead), and remove what each commit handled. Ends
/// after the last batch, or once the committing side stops taking them, with the
/// removals of every commit done; returns whether the watch on the inbox is still off.
fn read_ahead(
    root: &Root,
    dir: &std::path::Path,
    watcher: &mut notify::RecommendedWatcher,
    (batch, max_bytes, batch_bytes): (usize, u64, u64),
    batch_tx: mpsc::SyncSender<Result<Option<inbox::ReadBatch>>>,
    removal_rx: mpsc::Receiver<inbox::Removals>,
) -> bool {
    let mut drain = Drain::default();
    let mut take = batch.min(FIRST_BATCH);
    loop {
        // The removals of the batches committed so far go first.
        while let Ok(r) = removal_rx.try_recv() {
            r.run();
        }
        let next = match drain.next(dir, std::mem::replace(&mut take, batch), watcher) {
            Ok(Some((chosen, chosen_at))) => {
                let read = app::ask::read_inbox(root, &chosen, max_bytes, batch_bytes);
                drain.took(&chosen, &chosen_at, read.consumed);
                Ok(Some(read))
            }
            other => other.map(|_| None),
        };
        let last = !matches!(next, Ok(Some(_)));
        // Fails once the committing side has stopped taking batches.
        if batch_tx.send(next).is_err() || last {
            break;
        }
    }
    // Ends when the committing side drops `removals`, after its last commit.
    for r in removal_rx {
        r.run();
    }
    drain.unwatched
}

/// The committing side of a drain: each batch the I/O thread hands over, committed in one
/// transaction, its handled files handed back for removal, and the outcomes written
/// between batches. `big` is set once a batch read a lot (the heap is trimmed).
fn commit_batches(
    root: &Root,
    store: &mut Store,
    stop: &AtomicBool,
    batches: &mpsc::Receiver<Result<Option<inbox::ReadBatch>>>,
    removals: &mpsc::Sender<inbox::Removals>,
    big: &mut bool,
) -> Result<()> {
    let worker_gone = || Error::io("inbox thread", std::io::Error::other("it ended"));
    let mut published = Instant::now();
    loop {
        // A failure to choose (the listing, the watch) arrives after the batches read
        // before it, which are committed first all the same.
        let Some(batch) = batches.recv().map_err(|_| worker_gone())?? else {
            return Ok(());
        };
        let began = Instant::now();
        let (r, handled) = app::ask::commit_inbox(store, root, batch)?;
        if let Some(m) = crate::metrics::get() {
            m.wrote("inbox", began.elapsed());
            for _ in &r.accepted {
                m.ingested(None);
            }
            for (_, code) in &r.rejected {
                m.ingested(Some(code.as_str()));
            }
        }
        if !handled.is_empty() {
            removals.send(handled).map_err(|_| worker_gone())?;
        }
        if r.bytes >= TRIM_AFTER_BYTES {
            *big = true;
            crate::sys::trim_heap();
        }
        // Outcomes between batches: at once after a batch that made some (a rejection
        // with an id, an abort), else at most every RELIST_AFTER for the ones other
        // writers made due (each look is a read of the store); the pass writes the rest
        // when the drain ends.
        if !r.rejected.is_empty() || !r.aborted.is_empty() || published.elapsed() >= RELIST_AFTER {
            app::publish_pending(store, root)?;
            published = Instant::now();
        }
        if stop.load(Ordering::SeqCst) {
            return Ok(());
        }
    }
}

/// The state of one drain of the inbox between batches: the current listing's plan and
/// what the drain has tried.
#[derive(Default)]
struct Drain {
    /// The previous listing, in listing order: its names are the backlog of the next one.
    previous: Rc<[String]>,
    /// Names a batch's byte budget left out: arrivals again at the next listing.
    deferred: HashSet<String>,
    tried: HashSet<String>,
    /// What is left to try of the current listing, in order.
    plan: Option<Plan>,
    /// The watch on the inbox is off while a burst drains.
    unwatched: bool,
}

impl Drain {
    /// The next batch to read, listing the directory anew when due; `None` when every
    /// file listed has been tried (the watch is back on by then).
    fn next(
        &mut self,
        dir: &std::path::Path,
        batch: usize,
        watcher: &mut notify::RecommendedWatcher,
    ) -> Result<Option<(Vec<String>, Vec<usize>)>> {
        loop {
            let fresh_listing = self
                .plan
                .as_ref()
                .is_none_or(|p| p.is_empty() || p.listed_at.elapsed() >= RELIST_AFTER);
            if fresh_listing {
                let names: Rc<[String]> = inbox::list_dir(dir)?.into();
                // A file handled and gone is forgotten: the same name dropped again is new.
                // (`tried` holds what this drain tried since the last listing: the names of
                // one listing period, not the backlog.)
                self.tried.retain(|n| {
                    names
                        .binary_search_by(|x| inbox::listing_order(x, n))
                        .is_ok()
                });
                self.plan = Some(Plan::new(
                    names.clone(),
                    &self.previous,
                    &self.tried,
                    &self.deferred,
                ));
                self.deferred.clear();
                self.previous = names;
            }
            let p = self.plan.as_mut().expect("planned above");
            let chosen_at = p.next_batch(batch);
            if chosen_at.is_empty() {
                if self.unwatched {
                    // Watch again, then list once more: whatever arrived before the watch
                    // was back is seen by that listing, whatever arrives after sends a hint.
                    watcher
                        .watch(dir, RecursiveMode::NonRecursive)
                        .map_err(|e| Error::io(dir, std::io::Error::other(e)))?;
                    self.unwatched = false;
                    self.plan = None;
                    continue;
                }
                return Ok(None);
            }
            let chosen: Vec<String> = chosen_at.iter().map(|&i| p.name(i).to_string()).collect();
            // A burst: stop the watch on the inbox while draining it. Every unlink would
            // otherwise queue an inotify event (a tenth of the ingest time went to the
            // kernel queueing them) for a loop that lists again anyway. Nothing is lost:
            // the listing after the watch is back sees whatever arrived meanwhile.
            if !p.is_empty() && !self.unwatched {
                self.unwatched = watcher.unwatch(dir).is_ok();
            }
            return Ok(Some((chosen, chosen_at)));
        }
    }

    /// A batch was read and took its first `consumed` names: what its byte budget left
    /// out goes first in the next batch and stays an arrival for the next listing.
    fn took(&mut self, chosen: &[String], chosen_at: &[usize], consumed: usize) {
        let consumed = consumed.min(chosen.len());
        self.deferred.extend(chosen[consumed..].iter().cloned());
        if let Some(p) = self.plan.as_mut() {
            p.put_back(&chosen_at[consumed..]);
        }
        self.tried.extend(chosen.iter().take(consumed).cloned());
    }
}

/// What is left to try of one inbox listing: request files that arrived since the
/// listing before it, the backlog (in listing order), and abort files. Made once per
/// listing, so a batch costs its own size, not the size of the backlog; and made without
/// hashing or copying the listing's names (the queues hold positions in it, and the
/// previous listing is matched by a merge of the two sorted listings): a burst lists a
/// directory of tens of thousands of names every [`RELIST_AFTER`], and sets of them were
/// a tenth of the ingest time.
struct Plan {
    listing: Rc<[String]>,
    fresh: VecDeque<usize>,
    backlog: VecDeque<usize>,
    aborts: VecDeque<usize>,
    listed_at: Instant,
}

impl Plan {
    /// Plan a listing (in [`inbox::listing_order`]): names not yet `tried`; those absent
    /// from the `previous` listing (in the same order), or `deferred`, are arrivals.
    fn new(
        listing: Rc<[String]>,
        previous: &[String],
        tried: &HashSet<String>,
        deferred: &HashSet<String>,
    ) -> Plan {
        let mut plan = Plan {
            listing,
            fresh: VecDeque::new(),
            backlog: VecDeque::new(),
            aborts: VecDeque::new(),
            listed_at: Instant::now(),
        };
        let mut prev = previous.iter().peekable();
        for (i, n) in plan.listing.iter().enumerate() {
            let mut in_previous = false;
            while let Some(p) = prev.peek() {
                match inbox::listing_order(p, n) {
                    std::cmp::Ordering::Less => {
                        prev.next();
                    }
                    std::cmp::Ordering::Equal => {
                        in_previous = true;
                        prev.next();
                        break;
                    }
                    std::cmp::Ordering::Greater => break,
                }
            }
            if !tried.is_empty() && tried.contains(n) {
                continue;
            }
            if n.ends_with(".abort") {
                plan.aborts.push_back(i);
            } else if in_previous && (deferred.is_empty() || !deferred.contains(n)) {
                plan.backlog.push_back(i);
            } else {
                plan.fresh.push_back(i);
            }
        }
        plan
    }

    /// The name at position `i` of the listing.
    fn name(&self, i: usize) -> &str {
        &self.listing[i]
    }

    fn len(&self) -> usize {
        self.fresh.len() + self.backlog.len() + self.aborts.len()
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The next batch, at most `batch` positions: request files before abort files (aborts
    /// only once no request file is left); arrivals take up to half the batch and the
    /// backlog the rest, either side filling what the other leaves. Sorted by name.
    fn next_batch(&mut self, batch: usize) -> Vec<usize> {
        let mut chosen: Vec<usize> = if self.fresh.is_empty() && self.backlog.is_empty() {
            let n = self.aborts.len().min(batch);
            self.aborts.drain(..n).collect()
        } else {
            let fresh_n = self
                .fresh
                .len()
                .min(batch.div_ceil(2).max(batch - self.backlog.len().min(batch)));
            let backlog_n = self.backlog.len().min(batch - fresh_n);
            self.fresh
                .drain(..fresh_n)
                .chain(self.backlog.drain(..backlog_n))
                .collect()
        };
        // Name order within the batch (deterministic).
        let listing = &self.listing;
        chosen.sort_by(|&a, &b| listing[a].cmp(&listing[b]));
        chosen
    }

    /// Positions a batch took but did not get to (its byte budget ran out): first next time.
    fn put_back(&mut self, positions: &[usize]) {
        for &i in positions.iter().rev() {
            if self.listing[i].ends_with(".abort") {
                self.aborts.push_front(i);
            } else {
                self.fresh.push_front(i);
            }
        }
    }
}

/// The next inbox batch from a listing (see [`Plan::next_batch`]).
#[cfg(test)]
fn pick_batch(
    names: &[String],
    previous: &[String],
    tried: &HashSet<String>,
    batch: usize,
) -> Vec<String> {
    let mut plan = Plan::new(names.into(), previous, tried, &HashSet::new());
    let at = plan.next_batch(batch);
    at.iter().map(|&i| plan.name(i).to_string()).collect()
}

/// Sweep expiries when something is due.
fn expire(store: &mut Store) -> Result<()> {
    let Some(swept) = store.sweep()? else {
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
    for id in &swept.laddered {
        tracing::info!(id = %id, "ladder: reminded or escalated");
    }
    for id in &swept.expired {
        tracing::info!(id = %id, "ladder: expired (nobody answered)");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(v: &[&str]) -> Vec<String> {
        v.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn new_arrivals_share_the_batch_with_the_backlog() {
        let listing = names(&["a.json", "b.json", "c.json", "d.json", "z.json", "z.abort"]);
        let previous = names(&["a.json", "b.json", "c.json", "d.json"]);
        let none = HashSet::new();
        assert_eq!(
            pick_batch(&listing, &previous, &none, 2),
            names(&["a.json", "z.json"])
        );
        // Without a backlog, arrivals fill the batch; aborts come last.
        assert_eq!(
            pick_batch(&listing, &[], &none, 10),
            names(&["a.json", "b.json", "c.json", "d.json", "z.json"])
        );
        let tried: HashSet<String> = listing[..5].iter().cloned().collect();
        assert_eq!(
            pick_batch(&listing, &previous, &tried, 10),
            names(&["z.abort"])
        );
    }
}

//! The deliveries sender: a thread of its own, with its own store connection
//! and a tokio runtime for the channels' network I/O, started by the daemon when it has channels (`--webhook`, and
//! the other channels' flags). It never blocks the file loop: it reads the outbox's due
//! rows ([`crate::store::queue::deliveries`]) after their commit, hands each to its
//! channel's [`Sender`] (a webhook signed as Standard Webhooks describes:
//! [`super::webhook`]), marks it delivered once the channel took it, and otherwise records
//! the failed attempt and tries again after an exponential backoff
//! (`--delivery-retry-min`, doubling, at most [`RETRY_MAX`]).
//!
//! The loop is written once for every channel; a channel is only its [`Sender`]: where its
//! contexts' messages go and one attempt. Each row has its own retry state, so a channel
//! that is down holds back no other.
//!
//! The loop itself is synchronous, and the store is never called inside the runtime: the
//! PostgreSQL client runs a runtime of its own for each call and cannot be entered from
//! another's (it panics). A channel blocks on the runtime for its I/O alone.
//!
//! When it looks: right after a commit, whoever made it, and when the next retry falls
//! due; at most [`IDLE`] apart otherwise. A commit is heard as a hint, never trusted as
//! the truth (the outbox is): on SQLite, a change to the database's files in the root
//! (every commit of any process writes its write-ahead log), seen by a file watch; on
//! PostgreSQL, the feed's notifications ([`crate::store::Wakeups`]). So an idle daemon
//! with channels makes one small read a second, and a new row goes out within a
//! millisecond or so of its commit, not at the next poll.
//!
//! What survives a crash: a row is marked delivered only after its channel took it, so a
//! daemon killed mid-delivery sends it again at its next start, with the same delivery id
//! (`webhook-id`): a receiver may see a delivery twice, never lose one.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use crate::clock::Millis;
use crate::error::{Error, Result};
use crate::root::Root;
use crate::store::{Delivery, Route, Store};

use super::sender::Sender;
use super::Channels;

/// The longest wait between two attempts of one delivery.
pub const RETRY_MAX: Duration = Duration::from_secs(600);

/// The longest the sender waits without a hint of a commit (a missed hint costs this
/// much latency, never a delivery).
const IDLE: Duration = Duration::from_secs(1);

/// The looks after a hint. A hint may come before its commit is visible (a write-ahead
/// log is written frame by frame, the commit's frame last, and a reader sees it only
/// once the log's index is updated after that write), so a hint is followed by a few
/// looks a little later, not trusted to come after the commit.
const SETTLE: [Duration; 3] = [
    Duration::from_millis(2),
    Duration::from_millis(10),
    Duration::from_millis(50),
];

/// How many due rows one look takes.
const BATCH: usize = 64;

/// The wait before the attempt after `failed` failed attempts.
pub fn backoff(retry_min: Duration, failed: i64) -> Duration {
    let doublings = failed.clamp(1, 32) as u32 - 1;
    retry_min
        .saturating_mul(1u32.checked_shl(doublings).unwrap_or(u32::MAX))
        .min(RETRY_MAX)
}

/// Start the sender of `channels` on its own thread; it ends soon after `stop` is set.
/// Records the channels' routes first, so their events write delivery rows from now on.
pub fn spawn(
    root: &Root,
    channels: &Channels,
    stop: Arc<AtomicBool>,
) -> Result<std::thread::JoinHandle<()>> {
    let senders = channels.senders(root)?;
    let routes: Vec<Route> = senders
        .iter()
        .flat_map(|s| {
            let channel = s.channel();
            s.contexts()
                .into_iter()
                .map(move |context| Route { context, channel })
        })
        .collect();
    let mut store = root.open_store()?;
    store.add_delivery_routes(&routes)?;
    tracing::info!(routes = ?routes.iter().map(|r| format!("{}:{}", r.context, r.channel)).collect::<Vec<_>>(), "deliveries on");
    let root = root.clone();
    let retry_min = channels.retry_min;
    std::thread::Builder::new()
        .name("dshq-deliveries".into())
        .spawn(move || {
            drop(store);
            let rt = match tokio::runtime::Builder::new_current_thread()
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    tracing::error!(error = %e, "the deliveries sender cannot start");
                    return;
                }
            };
            run(&rt, root, senders, routes, retry_min, stop);
        })
        .map_err(|e| Error::io("deliveries thread", e))
}

fn run(
    rt: &tokio::runtime::Runtime,
    root: Root,
    senders: Vec<Box<dyn Sender>>,
    routes: Vec<Route>,
    retry_min: Duration,
    stop: Arc<AtomicBool>,
) {
    let (hint, commits) = std::sync::mpsc::channel::<()>();
    let _hints = hear_commits(&root, hint, stop.clone());
    let mut store: Option<Store> = None;
    let mut settle: &[Duration] = &[];
    while !stop.load(Ordering::SeqCst) {
        let mut wait = match settle.split_first() {
            Some((first, rest)) => {
                settle = rest;
                *first
            }
            None => IDLE,
        };
        if store.is_none() {
            match root.open_store() {
                Ok(s) => store = Some(s),
                Err(e) => tracing::warn!(error = %e, "deliveries: cannot open the store"),
            }
        }
        if let Some(s) = store.as_mut() {
            let now = s.clock_now().unwrap_or_else(|_| crate::clock::now_ms());
            match s.deliveries_due(&routes, now, BATCH) {
                Ok(due) => {
                    if due.len() == BATCH {
                        wait = Duration::ZERO; // more are due: look again at once
                    }
                    for d in due {
                        if stop.load(Ordering::SeqCst) {
                            return;
                        }
                        let Some(sender) = senders.iter().find(|x| {
                            x.channel() == d.channel && x.contexts().contains(&d.context)
                        }) else {
                            continue;
                        };
                        attempt(rt, &**sender, &mut *s, retry_min, d);
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "deliveries: cannot read the outbox");
                    store = None;
                }
            }
        }
        if let Some(s) = store.as_mut() {
            // The next retry's time bounds the wait; a row failed just now counts.
            if let (Ok(Some(next)), Ok(now)) = (s.next_delivery_due(&routes), s.clock_now()) {
                wait = wait.min(Duration::from_millis(next.saturating_sub(now).max(0) as u64));
            }
        }
        if wait > Duration::ZERO {
            match commits.recv_timeout(wait) {
                Ok(()) => {
                    while commits.try_recv().is_ok() {}
                    settle = &SETTLE;
                }
                Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                // No hints any more: look every IDLE.
                Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                    std::thread::sleep(wait);
                }
            }
        }
    }
}

/// What keeps the hints of commits coming until the sender ends.
enum Hints {
    /// SQLite: the watch on the root's database files.
    Files(#[allow(dead_code)] notify::RecommendedWatcher),
    /// PostgreSQL: the thread waiting on the feed's notifications.
    Feed(#[allow(dead_code)] std::thread::JoinHandle<()>),
    /// Neither could start: the sender looks every [`IDLE`].
    None,
}

/// Wake `commits` on every commit to the store, from any process or host (see the
/// module's doc); hints only, so a failure to set them up is logged and the sender falls
/// back to its [`IDLE`] look.
fn hear_commits(root: &Root, commits: std::sync::mpsc::Sender<()>, stop: Arc<AtomicBool>) -> Hints {
    let wakeups = match root.open_store().and_then(|mut s| s.wakeups(true)) {
        Ok(w) => w,
        Err(e) => {
            tracing::warn!(error = %e, "deliveries: cannot listen for commits; looking every second");
            return Hints::None;
        }
    };
    if let Some(mut wakeups) = wakeups {
        let thread = std::thread::Builder::new()
            .name("dshq-deliveries-feed".into())
            .spawn(move || {
                while !stop.load(Ordering::SeqCst) {
                    match wakeups.wait(IDLE) {
                        Ok(true) => {
                            let _ = commits.send(());
                        }
                        Ok(false) => {}
                        Err(_) => {
                            // Reconnected at the next call; a commit meanwhile is found by
                            // the sender's own look.
                            let _ = commits.send(());
                            std::thread::sleep(IDLE);
                        }
                    }
                }
            });
        return match thread {
            Ok(t) => Hints::Feed(t),
            Err(e) => {
                tracing::warn!(error = %e, "deliveries: cannot listen for commits; looking every second");
                Hints::None
            }
        };
    }
    let db = root.db();
    let name = db.file_name().map(|n| n.to_os_string()).unwrap_or_default();
    let watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
        let Ok(ev) = res else {
            let _ = commits.send(());
            return;
        };
        // A write (`Modify`) or the end of one (`Close(Write)`: a command that committed and
        // exited); an open or a read is no commit.
        if matches!(
            ev.kind,
            notify::EventKind::Access(a) if a != notify::event::AccessKind::Close(notify::event::AccessMode::Write)
        ) {
            return;
        }
        // `dshq.db`, `dshq.db-wal`: a commit of any process writes one of them.
        let ours = ev.paths.iter().any(|p| {
            p.file_name()
                .is_some_and(|f| f.as_encoded_bytes().starts_with(name.as_encoded_bytes()))
        });
        if ours {
            let _ = commits.send(());
        }
    });
    match watcher {
        Ok(mut w) => {
            use notify::Watcher;
            match w.watch(root.dir(), notify::RecursiveMode::NonRecursive) {
                Ok(()) => Hints::Files(w),
                Err(e) => {
                    tracing::warn!(error = %e, "deliveries: cannot watch the store's files; looking every second");
                    Hints::None
                }
            }
        }
        Err(e) => {
            tracing::warn!(error = %e, "deliveries: cannot watch the store's files; looking every second");
            Hints::None
        }
    }
}

/// One attempt of `d` on `sender`, and its bookkeeping.
fn attempt(
    rt: &tokio::runtime::Runtime,
    sender: &dyn Sender,
    store: &mut Store,
    retry_min: Duration,
    d: Delivery,
) {
    let outcome = sender.send(rt, store, &d);
    let now: Millis = store.clock_now().unwrap_or_else(|_| crate::clock::now_ms());
    match outcome {
        Ok(()) => {
            if let Err(e) = store.mark_delivered(&d.id, now) {
                // Sent again later, with the same id: the receiver drops the duplicate.
                tracing::warn!(id = %d.id, error = %e, "deliveries: cannot mark delivered");
            } else {
                tracing::info!(id = %d.id, request = %d.request_id, kind = %d.kind, channel = %d.channel, "delivered");
            }
        }
        Err(why) => {
            let wait = backoff(retry_min, d.attempts + 1);
            let next = now + wait.as_millis() as Millis;
            // Where it went (a URL, an address) is not logged: the context and the
            // channel name it.
            tracing::warn!(id = %d.id, context = %d.context, channel = %d.channel, attempt = d.attempts + 1, retry_in = ?wait, error = %why, "delivery failed");
            if let Err(e) = store.mark_delivery_failed(&d.id, next, &why) {
                tracing::warn!(id = %d.id, error = %e, "deliveries: cannot record the failed attempt");
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_its_bound() {
        let m = Duration::from_secs(1);
        assert_eq!(backoff(m, 1), Duration::from_secs(1));
        assert_eq!(backoff(m, 2), Duration::from_secs(2));
        assert_eq!(backoff(m, 4), Duration::from_secs(8));
        assert_eq!(backoff(m, 40), RETRY_MAX);
    }
}

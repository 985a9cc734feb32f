//! The deliveries sender: a thread of its own, with its own store connection, and a tokio
//! runtime on which every endpoint sends in a task of its own. Started by the daemon when
//! it has channels (`--webhook`, and the other channels' flags). It never blocks the file
//! loop: it reads the outbox's due rows ([`crate::store::queue::deliveries`]) after their
//! commit, hands each to its endpoint's task, marks it delivered once the channel took it,
//! and otherwise records the failed attempt and tries again after an exponential backoff
//! (`--delivery-retry-min`, doubling, at most [`RETRY_MAX`]).
//!
//! The loop is written once for every channel; a channel is only its [`Sender`]: where its
//! contexts' messages go, how long one attempt may take, and one attempt.
//!
//! **Isolation.** An endpoint is one route: a context on a channel (a webhook URL, a
//! context's mail, a Slack channel). Each has its own task, which sends its rows one after
//! the other, each bounded by its channel's [`Sender::timeout`]; the loop reads the due
//! rows of the endpoints that are idle only, so a row in flight is never read again, and
//! a hung endpoint's rows (due again and again) never crowd the others' out of a look.
//! A server that accepts a connection and never answers costs its own endpoint one
//! timeout per attempt, and no other endpoint anything.
//!
//! The loop itself is synchronous, and the store is never called inside the runtime: the
//! PostgreSQL client runs a runtime of its own for each call and cannot be entered from
//! another's (it panics). A channel that reads or records beside the outbox (mail reads
//! the request, Slack records its messages, push the devices each delivery reached) sends the call to the loop's thread
//! ([`super::sender::StoreCalls`]), which runs it with its connection between looks.
//!
//! When it looks: right after a commit, whoever made it, when an attempt ends, and when
//! the next retry falls due; at most [`IDLE`] apart otherwise. A commit is heard as a
//! hint, never trusted as the truth (the outbox is): on SQLite, a change to the
//! database's files in the root (every commit of any process writes its write-ahead log),
//! seen by a file watch; on PostgreSQL, the feed's notifications
//! ([`crate::store::Wakeups`]). So an idle daemon with channels makes one small read a
//! second, and a new row goes out within a millisecond or so of its commit, not at the
//! next poll.
//!
//! What survives a crash or a stop: a row is marked delivered only after its channel took
//! it, so a daemon killed mid-delivery, or stopped with an attempt in flight (the stop
//! drops it with the runtime), sends it again at its next start, with the same delivery
//! id (`webhook-id`): a receiver may see a delivery twice, never lose one.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};

use crate::clock::Millis;
use crate::core::channel::Channel;
use crate::error::{Error, Result};
use crate::root::Root;
use crate::store::{Delivery, Route, Store};

use super::sender::{Attempt, Sender, StoreCalls, Wake};
use super::Channels;

/// The longest wait between two attempts of one delivery.
pub const RETRY_MAX: Duration = Duration::from_secs(600);

/// The longest the sender waits without a hint of a commit (a missed hint costs this
/// much latency, never a delivery; a stop is seen within it).
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

/// The running sender, ended by [`Running::end`].
pub struct Running {
    stop: Arc<AtomicBool>,
    wake: mpsc::Sender<Wake>,
    thread: std::thread::JoinHandle<()>,
}

impl Running {
    /// End the sender now and wait for it: the loop stops, the attempts in flight are
    /// dropped unmarked (sent again, with the same ids, at the next start) and the
    /// runtime is shut down, so nothing of the sender outlives the daemon's exit.
    pub fn end(self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = self.wake.send(Wake::Commit);
        if self.thread.join().is_err() {
            tracing::error!("the deliveries sender panicked");
        }
    }
}

/// Start the sender of `channels` on its own thread; it ends soon after `stop` is set,
/// at once by [`Running::end`]. Records the channels' routes first, so their events write
/// delivery rows from now on.
pub fn spawn(root: &Root, channels: &Channels, stop: Arc<AtomicBool>) -> Result<Running> {
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
    let (wake, wakes) = mpsc::channel::<Wake>();
    let running = (stop.clone(), wake.clone());
    let thread = std::thread::Builder::new()
        .name("dshq-deliveries".into())
        .spawn(move || {
            drop(store);
            let rt = match tokio::runtime::Builder::new_multi_thread()
                .worker_threads(1)
                .thread_name("dshq-sending")
                .enable_all()
                .build()
            {
                Ok(rt) => rt,
                Err(e) => {
                    tracing::error!(error = %e, "the deliveries sender cannot start");
                    return;
                }
            };
            {
                // Everything the loop holds is dropped inside the runtime's context: a
                // channel's client may hand work to the runtime as it is dropped (a mail
                // transport closes its pooled connections so).
                let _inside = rt.enter();
                run(&rt, root, senders, routes, retry_min, stop, (wake, wakes));
            }
            // The attempts still in flight (an endpoint that never answers) are dropped
            // here, unmarked: their rows go out at the next start.
            rt.shutdown_timeout(Duration::from_millis(200));
        })
        .map_err(|e| Error::io("deliveries thread", e))?;
    Ok(Running {
        stop: running.0,
        wake: running.1,
        thread,
    })
}

/// An endpoint: its task's queue and how many of its rows are in it.
struct Lane {
    queue: tokio::sync::mpsc::UnboundedSender<Delivery>,
    busy: usize,
}

/// The endpoint's task: each row it is handed, one attempt bounded by the channel's
/// timeout, its outcome sent to the loop.
async fn endpoint(
    sender: Arc<dyn Sender>,
    store: StoreCalls,
    mut queue: tokio::sync::mpsc::UnboundedReceiver<Delivery>,
    done: mpsc::Sender<Wake>,
) {
    let limit = sender.timeout();
    while let Some(d) = queue.recv().await {
        let outcome = match tokio::time::timeout(limit, sender.send(&store, &d)).await {
            Ok(outcome) => outcome,
            Err(_) => Err(format!(
                "timed out after {}",
                humantime::format_duration(limit)
            )),
        };
        if done.send(Wake::Done(Box::new(d), outcome)).is_err() {
            return;
        }
    }
}

fn key(channel: Channel, context: &str) -> (Channel, String) {
    (channel, context.to_string())
}

fn run(
    rt: &tokio::runtime::Runtime,
    root: Root,
    senders: Vec<Arc<dyn Sender>>,
    routes: Vec<Route>,
    retry_min: Duration,
    stop: Arc<AtomicBool>,
    (wake, wakes): (mpsc::Sender<Wake>, mpsc::Receiver<Wake>),
) {
    let _hints = hear_commits(&root, wake.clone(), stop.clone());
    let calls = StoreCalls::new(wake.clone());
    let mut lanes: HashMap<(Channel, String), Lane> = HashMap::new();
    for route in &routes {
        let Some(sender) = senders.iter().find(|s| s.channel() == route.channel) else {
            continue;
        };
        let (queue, rx) = tokio::sync::mpsc::unbounded_channel();
        rt.spawn(endpoint(sender.clone(), calls.clone(), rx, wake.clone()));
        lanes.insert(key(route.channel, &route.context), Lane { queue, busy: 0 });
    }
    drop(senders);
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
        // The endpoints with nothing in flight: only their rows are read.
        let idle: Vec<Route> = routes
            .iter()
            .filter(|r| {
                lanes
                    .get(&key(r.channel, &r.context))
                    .is_some_and(|l| l.busy == 0)
            })
            .cloned()
            .collect();
        if let (Some(s), false) = (store.as_mut(), idle.is_empty()) {
            let now = s.clock_now().unwrap_or_else(|_| crate::clock::now_ms());
            match s.deliveries_due(&idle, now, BATCH) {
                Ok(due) => {
                    if due.len() == BATCH {
                        wait = Duration::ZERO; // more are due: look again at once
                    }
                    for d in due {
                        if let Some(lane) = lanes.get_mut(&key(d.channel, &d.context)) {
                            if lane.queue.send(d).is_ok() {
                                lane.busy += 1;
                            }
                        }
                    }
                }
                Err(e) => {
                    tracing::warn!(error = %e, "deliveries: cannot read the outbox");
                    store = None;
                }
            }
            if let Some(s) = store.as_mut() {
                // The next retry's time bounds the wait; a row failed just now counts.
                if let (Ok(Some(next)), Ok(now)) = (s.next_delivery_due(&idle), s.clock_now()) {
                    wait = wait.min(Duration::from_millis(next.saturating_sub(now).max(0) as u64));
                }
            }
        }
        let until = Instant::now() + wait;
        loop {
            match wakes.recv_timeout(until.saturating_duration_since(Instant::now())) {
                Ok(Wake::Commit) => {
                    settle = &SETTLE;
                    break;
                }
                Ok(Wake::Done(d, outcome)) => {
                    if let Some(lane) = lanes.get_mut(&key(d.channel, &d.context)) {
                        lane.busy = lane.busy.saturating_sub(1);
                    }
                    if let Some(s) = store.as_mut() {
                        record(s, retry_min, &d, outcome);
                    }
                    // Its endpoint may be idle now: look again.
                    break;
                }
                Ok(Wake::Call(call)) => call(store.as_mut()),
                Err(_) => break,
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
fn hear_commits(root: &Root, commits: mpsc::Sender<Wake>, stop: Arc<AtomicBool>) -> Hints {
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
                            let _ = commits.send(Wake::Commit);
                        }
                        Ok(false) => {}
                        Err(_) => {
                            // Reconnected at the next call; a commit meanwhile is found by
                            // the sender's own look.
                            let _ = commits.send(Wake::Commit);
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
            let _ = commits.send(Wake::Commit);
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
            let _ = commits.send(Wake::Commit);
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

/// Record what the attempt of `d` met: delivered, or failed and when to try again.
fn record(store: &mut Store, retry_min: Duration, d: &Delivery, outcome: Attempt) {
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

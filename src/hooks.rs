//! Knowing a question arrived: finding newly accepted requests, and the daemon's
//! `--on-question` hook.
//!
//! **Finding new requests.** The store hands out positions in arrival (commit) order, so
//! "every request above the last position seen" is exactly the set accepted since,
//! however it arrived: an inbox file, `dshq ask`, another daemon.
//! [`crate::app::feed::NewRequests`] keeps that high-water mark; `dshq
//! watch` and the hook runner both use it. It is one indexed range read, cheap enough to
//! run after every daemon pass.
//!
//! **The hook.** After each pass the daemon asks [`Hooks::poll`] for new requests and
//! queues one job per request. A small pool of worker threads runs the command with
//! `sh -c CMD` — CMD is the operator's own configuration; the request's text is never
//! put on a command line. The request document (the same JSON as `dshq --json show ID`)
//! goes to the hook's stdin, and its id and context to the environment variables
//! `DSHQ_REQUEST_ID` and `DSHQ_CONTEXT` (`DSHQ_ROOT` names the state root). The daemon's
//! loop only enqueues: a hook that fails is logged, a hook that hangs is killed (with its
//! whole process group) after the timeout and logged, and a full queue drops the job with
//! a warning — none of it ever delays ingestion. Stdin is written from its own thread,
//! so a hook that never reads it cannot block a worker either. The hook's stdout and
//! stderr go to the daemon's stderr (its log). When the daemon stops, hooks still running
//! are killed.
//!
//! Hooks run for requests accepted while the daemon runs (including the inbox files it
//! ingests at start). A request accepted with `dshq ask` while no daemon ran is not
//! announced when the daemon starts later: the high-water mark starts at the newest
//! request, so a restart never repeats old notifications.

use std::collections::HashMap;
use std::io::Write;
use std::os::fd::AsFd;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};
use std::sync::mpsc::{self, Receiver, SyncSender, TrySendError};
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

use crate::app::feed::NewRequests;
use crate::error::{Error, Result};
use crate::root::Root;
use crate::store::{RequestRow, Store};
use crate::views::RequestView;

/// The document a hook reads on stdin and `dshq watch --json` prints: the same as
/// `dshq --json show ID`, on one line.
pub fn request_json(row: &RequestRow) -> String {
    serde_json::to_string(&RequestView::from_row(row)).expect("a request view serializes")
}

/// The `--on-question` settings.
#[derive(Debug, Clone)]
pub struct HookConfig {
    /// The command, run with `sh -c`.
    pub command: String,
    /// How long one run may take before it is killed.
    pub timeout: Duration,
    /// How many hooks run at once.
    pub jobs: usize,
    /// How many runs may wait for a worker before new ones are dropped.
    pub queue: usize,
}

impl HookConfig {
    /// `command` with the default limits (4 at once, 1024 waiting).
    pub fn new(command: impl Into<String>, timeout: Duration) -> HookConfig {
        HookConfig {
            command: command.into(),
            timeout,
            jobs: 4,
            queue: 1024,
        }
    }
}

struct Job {
    id: String,
    context: String,
    body: String,
}

/// What the workers are doing, so shutdown can kill every hook, including one being
/// started at that very moment.
#[derive(Default)]
struct State {
    /// Shutdown has begun: start nothing more, kill what starts anyway.
    stopping: bool,
    /// Workers between deciding to spawn and recording the child.
    starting: usize,
    /// Running hooks by process-group id.
    running: HashMap<u32, String>,
}

type Running = Arc<(Mutex<State>, Condvar)>;

fn lock(r: &Running) -> std::sync::MutexGuard<'_, State> {
    r.0.lock().unwrap_or_else(|e| e.into_inner())
}

/// The hook runner: the high-water mark, a job queue and its workers.
pub struct Hooks {
    seen: NewRequests,
    queue: SyncSender<Job>,
    running: Running,
}

impl Hooks {
    /// Start the workers; requests newer than the newest one in `store` will run the hook.
    pub fn start(root: &Root, store: &mut Store, config: HookConfig) -> Result<Hooks> {
        let (tx, rx) = mpsc::sync_channel::<Job>(config.queue.max(1));
        let rx = Arc::new(Mutex::new(rx));
        let running: Running = Arc::new((Mutex::new(State::default()), Condvar::new()));
        for n in 0..config.jobs.max(1) {
            let rx = rx.clone();
            let running = running.clone();
            let config = config.clone();
            let root = root.clone();
            std::thread::Builder::new()
                .name(format!("dshq-hook-{n}"))
                .spawn(move || worker(&rx, &config, &root, &running))
                .map_err(|e| Error::io("hook worker thread", e))?;
        }
        tracing::info!(command = %config.command, timeout = ?config.timeout, "on-question hook enabled");
        Ok(Hooks {
            seen: NewRequests::from_now(store)?,
            queue: tx,
            running,
        })
    }

    /// Queue a run for every request accepted since the last poll. Never blocks: a full
    /// queue drops the run with a warning. Database errors are logged; the next poll
    /// retries from the same mark.
    pub fn poll(&mut self, store: &mut Store) {
        let rows = match self.seen.all(store) {
            Ok(rows) => rows,
            Err(e) => {
                tracing::error!(error = %e, "could not read new requests for the hook; will retry");
                return;
            }
        };
        for row in rows {
            let Some(id) = row.id.clone() else { continue };
            let job = Job {
                id: id.clone(),
                context: row.context.clone(),
                body: request_json(&row) + "\n",
            };
            match self.queue.try_send(job) {
                Ok(()) => {}
                Err(TrySendError::Full(_)) => {
                    tracing::warn!(id = %id, "hook queue full: not running the hook for this request")
                }
                Err(TrySendError::Disconnected(_)) => {
                    tracing::error!(id = %id, "hook workers are gone: not running the hook")
                }
            }
        }
    }

    /// Kill the hooks still running and start no more (the daemon is stopping); runs
    /// still queued are dropped. Waits (briefly) for workers caught mid-start, which kill
    /// their own child once they see the flag, so no hook outlives the daemon.
    pub fn shutdown(self) {
        let mut st = lock(&self.running);
        st.stopping = true;
        for (pgid, id) in st.running.iter() {
            tracing::warn!(id = %id, pid = pgid, "daemon stopping: killing the running hook");
            kill_group(*pgid);
        }
        let deadline = Instant::now() + Duration::from_secs(5);
        while st.starting > 0 {
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                break;
            }
            st = self
                .running
                .1
                .wait_timeout(st, left)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

/// Kill the process group `pgid` (one this runner created, whose leader it has not reaped).
fn kill_group(pgid: u32) {
    let group = i32::try_from(pgid)
        .ok()
        .and_then(rustix::process::Pid::from_raw);
    if let Some(group) = group {
        let _ = rustix::process::kill_process_group(group, rustix::process::Signal::KILL);
    }
}

fn worker(rx: &Mutex<Receiver<Job>>, config: &HookConfig, root: &Root, running: &Running) {
    loop {
        let job = {
            let rx = rx.lock().unwrap_or_else(|e| e.into_inner());
            match rx.recv() {
                Ok(job) => job,
                Err(_) => return,
            }
        };
        run_one(&job, config, root, running);
    }
}

/// Run the hook once for `job`, logging how it ended.
fn run_one(job: &Job, config: &HookConfig, root: &Root, running: &Running) {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg(&config.command)
        .env("DSHQ_REQUEST_ID", &job.id)
        .env("DSHQ_CONTEXT", &job.context)
        .env("DSHQ_ROOT", root.dir())
        .stdin(Stdio::piped())
        .stderr(Stdio::inherit())
        // Its own process group, so a timeout kills whatever the shell started.
        .process_group(0);
    match std::io::stderr().as_fd().try_clone_to_owned() {
        Ok(fd) => cmd.stdout(Stdio::from(fd)),
        Err(_) => cmd.stdout(Stdio::null()),
    };
    {
        let mut st = lock(running);
        if st.stopping {
            return;
        }
        st.starting += 1;
    }
    let start = Instant::now();
    let spawned = cmd.spawn();
    let stopping = {
        let mut st = lock(running);
        st.starting -= 1;
        if let Ok(child) = &spawned {
            if st.stopping {
                kill_group(child.id());
            } else {
                st.running.insert(child.id(), job.id.clone());
            }
        }
        running.1.notify_all();
        st.stopping
    };
    let mut child = match spawned {
        Ok(c) => c,
        Err(e) => {
            tracing::warn!(id = %job.id, error = %e, "hook could not start");
            return;
        }
    };
    if stopping {
        let _ = child.wait();
        return;
    }
    let pid = child.id();
    if let Some(mut stdin) = child.stdin.take() {
        let body = job.body.clone();
        // A hook that never reads its stdin must not block this worker.
        let _ = std::thread::Builder::new()
            .name("dshq-hook-stdin".into())
            .spawn(move || {
                let _ = stdin.write_all(body.as_bytes());
            });
    }
    // Poll for the exit with a growing pause: reaping is ours alone, so the process group
    // cannot be reused before we kill it.
    let mut pause = Duration::from_millis(5);
    let status = loop {
        match child.try_wait() {
            Ok(Some(st)) => break Some(st),
            Ok(None) => {}
            Err(e) => {
                tracing::warn!(id = %job.id, error = %e, "could not wait for the hook");
                kill_group(pid);
                let _ = child.wait();
                break None;
            }
        }
        let elapsed = start.elapsed();
        if elapsed >= config.timeout {
            kill_group(pid);
            let _ = child.wait();
            tracing::warn!(id = %job.id, timeout = ?config.timeout, "hook timed out and was killed");
            break None;
        }
        std::thread::sleep(pause.min(config.timeout - elapsed));
        pause = (pause * 2).min(Duration::from_millis(100));
    };
    lock(running).running.remove(&pid);
    let ms = start.elapsed().as_millis() as u64;
    match status {
        Some(st) if st.success() => tracing::info!(id = %job.id, ms, "hook ran"),
        Some(st) => tracing::warn!(id = %job.id, ms, status = %st, "hook failed"),
        None => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::audit::{Actor, Source};
    use crate::store::sqlite::SqliteStore;
    use crate::store::{AskInput, InboxInput};

    fn ask(store: &mut Store, id: &str, context: &str) {
        let req: crate::protocol::Request = serde_json::from_value(serde_json::json!({
            "id": id, "context": context,
            "questions": [{"id": "q", "question": "?"}]
        }))
        .unwrap();
        store
            .ask(AskInput {
                request: Ok(req),
                fallback_id: None,
                salvaged: (None, None),
                raw: String::new(),
                source: Source::Cli,
                actor: Actor::Cli,
            })
            .unwrap();
    }

    #[test]
    fn new_requests_are_seen_once_in_order_and_rejections_skipped() {
        let mut store: crate::store::Store = SqliteStore::in_memory().unwrap().into();
        let store: &mut Store = &mut store;
        ask(store, "old", "default");
        let mut seen = NewRequests::from_now(store).unwrap();
        assert!(seen.all(store).unwrap().is_empty());
        ask(store, "a", "default");
        store
            .ingest(vec![InboxInput::Reject {
                name: "bad.json".into(),
                id: Some("bad".into()),
                context: None,
                raw: "{".into(),
                error: crate::protocol::UserQuestionError::new(
                    crate::protocol::Code::BadRequest,
                    "x",
                ),
            }])
            .unwrap();
        ask(store, "b", "other");
        let ids: Vec<String> = seen
            .all(store)
            .unwrap()
            .into_iter()
            .filter_map(|r| r.id)
            .collect();
        assert_eq!(ids, vec!["a", "b"]);
        assert!(seen.all(store).unwrap().is_empty());
    }

    #[test]
    fn request_json_is_one_line_with_the_questions() {
        let mut store: crate::store::Store = SqliteStore::in_memory().unwrap().into();
        ask(&mut store, "a", "default");
        let row = store.get("a").unwrap().unwrap();
        let json = request_json(&row);
        assert!(!json.contains('\n'));
        let v: serde_json::Value = serde_json::from_str(&json).unwrap();
        assert_eq!(v["id"], "a");
        assert_eq!(v["questions"][0]["id"], "q");
    }
}

//! Where the MCP tools' store work runs, and how they wait for an outcome.
//!
//! - [`Backend::Local`]: `dshq mcp` over stdio opens the store itself (no daemon needed,
//!   like `dshq ask`). One blocking thread owns the connection and runs the jobs one
//!   after another, so the tokio workers never block on SQLite. A wait is woken by a
//!   watch on `outbox/` (every outcome is published there after its commit, whoever
//!   made it: `dshq answer`, the daemon, this server), with a one-second fallback for a
//!   missed event, as `dshq wait` does.
//! - [`Backend::Host`]: the same server at `/mcp` on `dshq daemon --listen` runs on the
//!   host's database thread and is woken by its change broadcast, like the API's
//!   long-poll.

use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use notify::{RecursiveMode, Watcher};
use tokio::sync::{oneshot, watch};

use crate::app;
use crate::error::{Error, Result};
use crate::host::AppState;
use crate::protocol::Outcome;
use crate::root::Root;
use crate::store::Store;

type Job = Box<dyn FnOnce(&mut Store) + Send>;

/// The stdio server's own store: a database thread and a watch on the outbox.
pub struct Local {
    root: Root,
    jobs: mpsc::Sender<Job>,
    outbox: watch::Receiver<u64>,
    _watcher: Option<notify::RecommendedWatcher>,
}

impl Local {
    /// Open the store of `root` on its own thread, and watch its outbox.
    pub fn open(root: &Root) -> Result<Local> {
        let mut store = root.open_store()?;
        let (jobs, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("dshq-mcp-db".into())
            .spawn(move || {
                while let Ok(job) = rx.recv() {
                    job(&mut store);
                }
            })
            .map_err(|e| Error::io("database thread", e))?;
        let (tx, outbox) = watch::channel(0u64);
        let watcher = notify::recommended_watcher(move |res: notify::Result<notify::Event>| {
            if !matches!(&res, Ok(ev) if matches!(ev.kind, notify::EventKind::Access(_))) {
                tx.send_modify(|n| *n = n.wrapping_add(1));
            }
        })
        .and_then(|mut w| {
            w.watch(&root.outbox(), RecursiveMode::NonRecursive)
                .map(|_| w)
        });
        let watcher = match watcher {
            Ok(w) => Some(w),
            Err(e) => {
                tracing::debug!(error = %e, "no watch on the outbox; waits poll every second");
                None
            }
        };
        Ok(Local {
            root: root.clone(),
            jobs,
            outbox,
            _watcher: watcher,
        })
    }

    /// Run `f` on the database thread and block until it is done (at most `limit`): for
    /// work that must happen even while the runtime is going away (a lease's release when
    /// the client vanished and the call's future is being dropped).
    pub fn run_blocking<T, F>(&self, f: F, limit: Duration) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Store) -> Result<T> + Send + 'static,
    {
        let (tx, rx) = mpsc::channel();
        let job: Job = Box::new(move |store| {
            let _ = tx.send(f(store));
        });
        let stopped = || Error::io("database thread", std::io::Error::other("stopped"));
        self.jobs.send(job).map_err(|_| stopped())?;
        rx.recv_timeout(limit).map_err(|_| stopped())?
    }

    async fn run<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Store) -> Result<T> + Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        let job: Job = Box::new(move |store| {
            let _ = tx.send(f(store));
        });
        let stopped = || Error::io("database thread", std::io::Error::other("stopped"));
        self.jobs.send(job).map_err(|_| stopped())?;
        rx.await.map_err(|_| stopped())?
    }
}

/// Where the tools run.
#[derive(Clone)]
pub enum Backend {
    /// `dshq mcp` (stdio): its own store.
    Local(Arc<Local>),
    /// `/mcp` on the async host.
    Host(AppState),
}

impl Backend {
    /// The state root.
    pub fn root(&self) -> &Root {
        match self {
            Backend::Local(l) => &l.root,
            Backend::Host(st) => &st.root,
        }
    }

    /// Run a read.
    pub async fn read<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Store) -> Result<T> + Send + 'static,
    {
        match self {
            Backend::Local(l) => l.run(f).await,
            Backend::Host(st) => st.db.read(f).await,
        }
    }

    /// Run a use-case that may commit (on the host: then broadcast it and wake the loop).
    pub async fn write<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Store) -> Result<T> + Send + 'static,
    {
        match self {
            Backend::Local(l) => l.run(f).await,
            Backend::Host(st) => st.db.write(f).await,
        }
    }

    /// The outcome of `id` once it is ready, waiting up to `wait`; `None` when the wait
    /// ends first. Never a busy poll: woken by the outbox watch or the change broadcast.
    pub async fn wait_outcome(&self, id: &str, wait: Duration) -> Result<Option<Outcome>> {
        let deadline = tokio::time::Instant::now() + wait;
        match self {
            Backend::Local(l) => {
                let mut outbox = l.outbox.clone();
                loop {
                    // Mark seen before the read: a file written in between wakes us.
                    outbox.borrow_and_update();
                    if let Some(o) = self.ready(id).await? {
                        return Ok(Some(o));
                    }
                    let now = tokio::time::Instant::now();
                    if now >= deadline {
                        return Ok(None);
                    }
                    let nap = (deadline - now).min(Duration::from_secs(1));
                    let _ = tokio::time::timeout(nap, outbox.changed()).await;
                }
            }
            Backend::Host(st) => {
                let mut shutdown = st.shutdown.clone();
                loop {
                    // Register before the read: an outcome committed in between still
                    // wakes us, and only this request's final change does (as the HTTP
                    // long-poll waits, `host::waits`).
                    let mut finished = st.db.changes().wait_final(id);
                    if let Some(o) = self.ready(id).await? {
                        return Ok(Some(o));
                    }
                    if tokio::time::Instant::now() >= deadline {
                        return Ok(None);
                    }
                    tokio::select! {
                        woken = finished.finished() => if !woken { return Ok(None) },
                        _ = tokio::time::sleep_until(deadline) => return Ok(None),
                        _ = shutdown.changed() => return Ok(None),
                    }
                }
            }
        }
    }

    async fn ready(&self, id: &str) -> Result<Option<Outcome>> {
        let (root, id) = (self.root().clone(), id.to_string());
        self.write(move |store| app::feed::outcome_ready(store, &root, &id))
            .await
    }
}

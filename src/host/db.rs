//! The database thread: one blocking thread owns the host's store connection and runs
//! the web's use-cases one after another (effectum's pattern). An async handler sends a
//! closure and awaits its reply; the runtime's workers never block on SQLite, and the
//! store needs no lock of its own (one owner).
//!
//! After a job that may have committed ([`Db::write`]), the thread publishes what
//! changed ([`super::changes::Changes::publish`]) and wakes the file loop, so an answer
//! given over HTTP has its outcome file written (or retried) at once and every waiter
//! hears of it. The file loop keeps its own connection on its own thread: a slow web
//! client never holds the loop's store, and SQLite's write lock is held only for the
//! length of one transaction.

use std::sync::mpsc;
use std::sync::Arc;

use tokio::sync::oneshot;

use super::changes::Changes;
use crate::daemon::Waker;
use crate::error::{Error, Result};
use crate::root::Root;
use crate::store::Store;

type Job = Box<dyn FnOnce(&mut Store) + Send>;

/// A handle on the database thread (cheap to clone).
#[derive(Clone)]
pub struct Db {
    jobs: mpsc::Sender<Job>,
    changes: Arc<Changes>,
    waker: Waker,
}

impl Db {
    /// Open the store and start its thread.
    pub fn start(root: &Root, changes: Arc<Changes>, waker: Waker) -> Result<Db> {
        let mut store = root.open_store()?;
        let (jobs, rx) = mpsc::channel::<Job>();
        std::thread::Builder::new()
            .name("dshq-db".into())
            .spawn(move || {
                // Ends when every handle is dropped.
                while let Ok(job) = rx.recv() {
                    job(&mut store);
                }
            })
            .map_err(|e| Error::io("database thread", e))?;
        Ok(Db {
            jobs,
            changes,
            waker,
        })
    }

    /// The broadcast of changes.
    pub fn changes(&self) -> &Arc<Changes> {
        &self.changes
    }

    /// Run a read on the database thread.
    pub async fn read<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Store) -> Result<T> + Send + 'static,
    {
        self.run(f, false).await
    }

    /// Run a use-case that may commit; then broadcast what changed and wake the file loop
    /// (whether it succeeded or not: a failed use-case may have committed a rejection).
    pub async fn write<T, F>(&self, f: F) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Store) -> Result<T> + Send + 'static,
    {
        self.run(f, true).await
    }

    async fn run<T, F>(&self, f: F, wrote: bool) -> Result<T>
    where
        T: Send + 'static,
        F: FnOnce(&mut Store) -> Result<T> + Send + 'static,
    {
        let (tx, rx) = oneshot::channel();
        let changes = self.changes.clone();
        let waker = self.waker.clone();
        let job: Job = Box::new(move |store| {
            let began = std::time::Instant::now();
            let r = f(store);
            if wrote {
                if let Some(m) = crate::metrics::get() {
                    m.wrote("web", began.elapsed());
                }
                changes.publish(store);
                waker.committed();
            }
            let _ = tx.send(r);
        });
        self.jobs
            .send(job)
            .map_err(|_| Error::io("database thread", std::io::Error::other("stopped")))?;
        rx.await
            .map_err(|_| Error::io("database thread", std::io::Error::other("stopped")))?
    }
}
